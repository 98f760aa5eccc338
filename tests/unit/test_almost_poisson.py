"""Almost-Poisson forms and discrete gradients (discrete-gradients-2019.md §8 items 1–5, 17, bad input).

Oracles are independent of the code under test: the Lagrange–d'Alembert acceleration of
NonholonomicSystem (index-1 form), the hand-derived forms of the paper (spec §7), central finite
differences, and the defining identities of a discrete gradient (Definition 3.1, Remark 3.2).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import ConstraintViolationError, InputError, SystemDefinitionError
from dalembert.methods import discrete_gradients as dgm
from dalembert.systems.reduction import householder_qr, null_space_basis

MODELS = ["vertical-rolling-disk", "chaotic-quartic", "chaplygin-sleigh", "gearbox"]


def random_states(model, k, seed=0):
    """k random constraint-consistent (q, v) near the model's default state."""
    rng = np.random.default_rng(seed)
    sysm = model.system
    out = []
    for _ in range(k):
        q = model.q0 + 0.5 * rng.standard_normal(model.q0.size)
        v = np.asarray(sysm.project_velocity(jnp.asarray(q), jnp.asarray(rng.standard_normal(q.size))))
        out.append((jnp.asarray(q), jnp.asarray(v)))
    return out


def lda_check(ap, sysm):
    """Jitted (q, v) -> (Π∇H at ζ, dζ/dt along the LdA flow, H − E, lift∘reduce − v, μ v(ζ), Π + Πᵀ)."""
    def f(q, v):
        z = ap.reduce(q, v)
        zdot = jax.jvp(ap.reduce, (q, v), (v, sysm.acceleration(q, v)))[1]
        P = ap.poisson_matrix(z)
        return (ap.vector_field(z), zdot, ap.hamiltonian(z) - sysm.energy(q, v),
                ap.lift(z)[1] - v, ap.constraint_residual(z), P + P.T)
    return jax.jit(f)


def assert_lda(ap, model, k=3):
    f = lda_check(ap, model.system)
    for q, v in random_states(model, k):
        field, zdot, dH, dv, res, skew = f(q, v)
        scale = max(1.0, float(jnp.max(jnp.abs(zdot))))
        assert float(jnp.max(jnp.abs(field - zdot))) <= 1e-12 * scale
        assert abs(float(dH)) <= 1e-13 * max(1.0, float(model.system.energy(q, v)))
        assert float(jnp.max(jnp.abs(dv))) <= 1e-13 * max(1.0, float(jnp.max(jnp.abs(v))))
        assert float(jnp.max(jnp.abs(res))) <= 1e-14 * max(1.0, float(jnp.max(jnp.abs(v))))
        assert float(jnp.max(jnp.abs(skew))) == 0.0


# --- item 1: Π∇H reproduces the Lagrange–d'Alembert equations --------------------------------

@pytest.mark.parametrize("name", MODELS)
def test_hand_derived_form_matches_lda(name):
    model = dl.models.get(name)
    assert isinstance(model.almost_poisson, dl.AlmostPoissonSystem)
    assert_lda(model.almost_poisson, model)


@pytest.mark.parametrize("name", ["vertical-rolling-disk", "chaplygin-sleigh", "gearbox"])
def test_automatic_reduction_matches_lda(name):
    model = dl.models.get(name)
    assert_lda(dl.almost_poisson(model.system, model.q0), model)


def test_automatic_reduction_matches_lda_chaotic():
    model = dl.models.get("chaotic-quartic")
    assert_lda(dl.almost_poisson(model.system, model.q0), model, k=1)


# --- items 2, 3: automatic form = hand-derived form after the change of basis ----------------

@pytest.mark.parametrize("name", ["vertical-rolling-disk", "chaplygin-sleigh", "gearbox"])
def test_automatic_equals_hand_derived(name):
    model = dl.models.get(name)
    hand, reduction = model.almost_poisson, dl.almost_poisson(model.system, model.q0)
    auto = reduction.in_chart(reduction.anchor_at(jnp.asarray(model.q0)))   # one fixed chart

    def phi(z):   # ζ_hand -> ζ_auto through (q, v): the change of basis of D
        return auto.reduce(*hand.lift(z))

    @jax.jit
    def compare(q, v):
        z = hand.reduce(q, v)
        w = phi(z)
        D = jax.jacfwd(phi)(z)
        Pi_t = jnp.einsum("ij,jk,lk->il", D, hand.poisson_matrix(z), D)
        return (auto.hamiltonian(w) - hand.hamiltonian(z), auto.poisson_matrix(w) - Pi_t,
                hand.reduce(*auto.lift(w)) - z)

    for q, v in random_states(model, 3, seed=1):
        dH, dPi, dz = compare(q, v)
        assert abs(float(dH)) <= 1e-13
        assert float(jnp.max(jnp.abs(dPi))) <= 1e-12
        assert float(jnp.max(jnp.abs(dz))) <= 1e-13


def test_gearbox_basis_is_solved_for_its_constant_column():
    """μ = (1, sin q3, 0): the column of q1 is constant, so the automatic basis is the global one
    X = (−sin q3, 1, 0), (0, 0, 1) — the hand-derived basis before its normalisation."""
    model = dl.models.get("gearbox")
    auto = dl.almost_poisson(model.system, model.q0)
    assert not auto.atlas
    for q3 in np.linspace(-3.0, 3.0, 7):
        q = jnp.array([0.3, -0.2, q3])
        Xa = np.array([[-np.sin(q3), 0.0], [1.0, 0.0], [0.0, 1.0]])
        np.testing.assert_allclose(np.asarray(auto.basis(q)), Xa, rtol=0, atol=1e-15)


# --- item 17: Householder QR with derivatives ---------------------------------------------------

def test_householder_qr_properties_and_derivative():
    rng = np.random.default_rng(3)
    M0, M1 = rng.standard_normal((2, 5)), rng.standard_normal((2, 5, 5))

    def mu(q):                        # a smooth (2, 5) constraint matrix field
        return M0 + jnp.einsum("aij,j->ai", M1, jnp.sin(q))

    q = jnp.asarray(rng.standard_normal(5))
    A = mu(q).T
    Q, R, signs, cond = householder_qr(A)
    Q, R = np.asarray(Q), np.asarray(R)
    assert np.max(np.abs(Q.T @ Q - np.eye(5))) <= 1e-14
    assert np.max(np.abs(np.tril(Q.T @ np.asarray(A), -1))) <= 1e-14
    assert np.max(np.abs(Q @ R - np.asarray(A))) <= 1e-14
    assert float(cond) >= 1.0
    basis = null_space_basis(mu, tuple(float(s) for s in np.asarray(signs)))
    X = lambda x: basis(x)[0]  # noqa: E731
    assert np.max(np.abs(np.asarray(mu(q) @ X(q)))) <= 1e-14
    dX = np.asarray(jax.jacfwd(X)(q))
    eps = 1e-5
    for i in range(5):
        e = jnp.zeros(5).at[i].set(eps)
        fd = (np.asarray(X(q + e)) - np.asarray(X(q - e))) / (2 * eps)
        assert np.max(np.abs(dX[:, :, i] - fd)) <= 1e-8


def test_householder_signs_match_numpy_qr_up_to_column_signs():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((6, 3))
    Q = np.asarray(householder_qr(jnp.asarray(A))[0])
    Qn, _ = np.linalg.qr(A, mode="complete")
    for j in range(3):
        assert min(np.max(np.abs(Q[:, j] - Qn[:, j])), np.max(np.abs(Q[:, j] + Qn[:, j]))) <= 1e-13


# --- items 4, 5: discrete gradients ------------------------------------------------------------

def chaotic_H():
    return dl.models.get("chaotic-quartic").almost_poisson.hamiltonian


@pytest.mark.parametrize("kind, model_name", [
    ("avf", "chaotic-quartic"), ("gonzalez", "chaotic-quartic"),
    ("itoh-abe", "gearbox"), ("itoh-abe-sym", "gearbox")])   # gearbox: smaller N, trigonometric H
def test_discrete_gradient_identities(kind, model_name):
    model = dl.models.get(model_name)
    H = model.almost_poisson.hamiltonian
    # AVF: the default quadrature reaches round-off for step-sized pairs (|Δ| ~ 0.1); a pair at
    # distance ~1 needs more nodes (H is rational in w)
    dg = jax.jit(dgm.discrete_gradient(kind, H))
    big = jax.jit(dgm.discrete_gradient(kind, H, nodes=20)) if kind == "avf" else dg
    grad = jax.jit(jax.grad(H))
    rng = np.random.default_rng(5)
    x0 = np.asarray(model.almost_poisson.reduce(jnp.asarray(model.q0), jnp.asarray(model.v0)))
    for scale in (1e-1, 1e-3, 1.0):
        x = jnp.asarray(x0 + 0.3 * rng.standard_normal(x0.size))
        y = jnp.asarray(np.asarray(x) + scale * rng.standard_normal(x0.size))
        lhs = float(jnp.sum((big if scale == 1.0 else dg)(x, y) * (y - x)))
        rhs = float(H(y) - H(x))
        assert abs(lhs - rhs) <= 1e-14 * max(abs(float(H(x))), abs(float(H(y))))   # (10a)
        assert float(jnp.max(jnp.abs(dg(x, x) - grad(x)))) <= 1e-14 * float(jnp.max(jnp.abs(grad(x))))  # (10b)


def test_remark_3_2_quadratic_coincidences():
    rng = np.random.default_rng(6)
    S = rng.standard_normal((4, 4))
    S = S @ S.T + np.eye(4)
    Hq = lambda x: 0.5 * x @ jnp.asarray(S) @ x  # noqa: E731  non-diagonal quadratic
    a = jnp.asarray([0.5, 2.0, 1.5, 3.0])
    Hd = lambda x: jnp.sum(a * x * x)  # noqa: E731          diagonal quadratic
    x, y = jnp.asarray(rng.standard_normal(4)), jnp.asarray(rng.standard_normal(4))
    mid = S @ np.asarray(0.5 * (x + y))
    for kind in ("avf", "gonzalez"):
        assert np.max(np.abs(np.asarray(dgm.discrete_gradient(kind, Hq)(x, y)) - mid)) <= 1e-13
    ia = np.asarray(dgm.itoh_abe(Hq)(x, y))
    assert np.max(np.abs(ia - mid)) > 1e-3          # Itoh–Abe is not the midpoint gradient here
    for kind in ("avf", "gonzalez", "itoh-abe", "itoh-abe-sym"):
        g = np.asarray(dgm.discrete_gradient(kind, Hd)(x, y))
        assert np.max(np.abs(g - np.asarray(a * (x + y)))) <= 1e-13


def test_avf_quadrature_nodes_matter():
    """Too few nodes break (10a) for the non-polynomial chaotic H; the default reaches round-off."""
    H = chaotic_H()
    model = dl.models.get("chaotic-quartic")
    x = model.almost_poisson.reduce(jnp.asarray(model.q0), jnp.asarray(model.v0))
    y = x + 0.3 * jnp.asarray(np.random.default_rng(7).standard_normal(x.size))
    err = lambda nodes: abs(float(jax.jit(lambda a, b: jnp.sum(dgm.avf(H, nodes)(a, b) * (b - a))  # noqa: E731
                                          - (H(b) - H(a)))(x, y)))
    assert err(1) > 1e-6
    assert err(dgm.AVF_NODES) <= 1e-14 * float(H(x))


# --- protocol and bad input ---------------------------------------------------------------------

def test_protocol_and_diagnostics():
    ap = dl.AlmostPoissonSystem(lambda x: jnp.array([[0.0, 1.0], [-1.0, 0.0]]),
                                lambda x: 0.5 * jnp.sum(x * x), name="oscillator")
    assert ap.state_names == ("x0",)
    (x0,) = ap.check_initial_state([1.0, 0.0])
    assert isinstance(x0, np.ndarray) and x0.dtype == np.float64
    d = ap.diagnostics({"x": jnp.array([3.0, 4.0])})
    assert float(d["energy"]) == 12.5 and d["constraint_residual"].shape == (0,)
    model = dl.models.get("gearbox")
    d = model.almost_poisson.diagnostics({"x": model.almost_poisson.reduce(jnp.asarray(model.q0),
                                                                           jnp.asarray(model.v0))})
    assert abs(float(d["energy"]) - 2.270966669647573) <= 1e-14 and d["constraint_residual"].shape == (1,)


def skew2(x):
    return jnp.array([[0.0, 1.0], [-1.0, 0.0]])


@pytest.mark.parametrize("pi, H, x0, err, words", [
    (lambda x: jnp.array([[0.0, 1.0], [1.0, 0.0]]), lambda x: jnp.sum(x * x), [1.0, 0.0], SystemDefinitionError, "skew"),
    (lambda x: jnp.eye(3), lambda x: jnp.sum(x * x), [1.0, 0.0], SystemDefinitionError, "shape"),
    (skew2, lambda x: x * x, [1.0, 0.0], SystemDefinitionError, "shape"),
    (skew2, lambda x: jnp.log(x[0]), [-1.0, 0.0], SystemDefinitionError, "non-finite"),
    (lambda x: jnp.array([[0.0, jnp.nan], [-1.0, 0.0]]), lambda x: jnp.sum(x * x), [1.0, 0.0], SystemDefinitionError,
     "non-finite"),
    (skew2, lambda x: jnp.sum(x * x), [1.0, np.inf], InputError, "non-finite"),
    (skew2, lambda x: jnp.sum(x * x), [[1.0, 0.0]], InputError, "1-D"),
])
def test_bad_input(pi, H, x0, err, words):
    ap = dl.AlmostPoissonSystem(pi, H)
    with pytest.raises(err, match=words):
        ap.check_initial_state(x0)


def test_bad_constructor_and_constraint():
    with pytest.raises(InputError):
        dl.AlmostPoissonSystem(None, lambda x: x[0])
    ap = dl.AlmostPoissonSystem(skew2, lambda x: jnp.sum(x * x), constraint=lambda x: x[:1])
    with pytest.raises(ConstraintViolationError):
        ap.check_initial_state([1.0, 0.0])
    ap.check_initial_state([0.0, 1.0])


def test_reduction_rejects_affine_constraints_and_degenerate_basis():
    affine = dl.NonholonomicSystem(np.eye(3), constraint_matrix=lambda q: jnp.array([[1.0, 0.0, q[0]]]),
                                   constraint_rhs=lambda q: jnp.array([1.0]))
    with pytest.raises(InputError, match="affine"):
        dl.almost_poisson(affine, np.zeros(3))
    sleigh = dl.models.get("chaplygin-sleigh")
    with pytest.raises(InputError, match="frame must be"):
        dl.almost_poisson(sleigh.system, sleigh.q0, frame="householder")

"""The model zoo: consistent default data, exact solutions against the reference ODE, invariants,
parameter validation, and the published initial-data family of the chaotic quartic system.

Sources: shared/papers/gni-2008-momentum-energy.md Example 1 (particle),
shared/papers/discrete-gradients-2019.md §7.0 (rolling disk), §7.1 (chaotic quartic),
§7.2 (sleigh), §7.4 (gearbox); gni-2015 spec §5.5 (P1, P2).
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.errors import InputError, UnknownNameError

ALL_MODELS = ["nonholonomic-particle", "vertical-rolling-disk", "chaplygin-sleigh",
              "chaotic-quartic", "gearbox", "p1-linear", "p2-affine"]
EXACT = ["nonholonomic-particle", "vertical-rolling-disk", "chaplygin-sleigh"]


def test_registry_lists_the_models():
    assert set(ALL_MODELS) <= set(dl.models.available())


@pytest.mark.parametrize("name", ALL_MODELS)
def test_default_initial_state_is_consistent(name):
    m = dl.models.get(name)
    q0, v0 = jnp.asarray(m.q0), jnp.asarray(m.v0)
    assert q0.shape == v0.shape == (len(m.coordinates),)
    res = np.asarray(m.system.constraint_residual(q0, v0))
    assert np.max(np.abs(res)) <= 1e-12
    # the engine's own validation accepts it without projection
    q, v = m.system.check(m.q0, m.v0)
    assert np.array_equal(v, m.v0)


def test_models_are_cached_per_parameter_set():
    assert dl.models.get("chaplygin-sleigh") is dl.models.get("chaplygin-sleigh", J=8.0)
    assert dl.models.get("chaplygin-sleigh", J=3.0) is not dl.models.get("chaplygin-sleigh")


# ---------------------------------------------------------------------------------------------
# exact solutions against the reference ODE (index-1 form, DOP853 at 1e-13)
# ---------------------------------------------------------------------------------------------

def _other_states():
    th = 0.3
    return {
        "nonholonomic-particle": [(np.array([0.0, -5.0, 0.0]), np.array([1.0, 1.0, -5.0])),
                                  (np.array([1.0, 0.4, -1.0]), np.array([0.7, 0.0, 0.28]))],  # v_y = 0 branch
        "vertical-rolling-disk": [(np.array([1.0, -2.0, 1.0, 0.5]),
                                   np.array([-0.8 * np.cos(1.0), -0.8 * np.sin(1.0), -1.1, -0.8])),
                                  (np.array([0.0, 0.0, 0.4, 0.0]),                      # θ̇ = 0 branch
                                   np.array([1.5 * np.cos(0.4), 1.5 * np.sin(0.4), 0.0, 1.5]))],
        "chaplygin-sleigh": [(np.array([0.0, 0.0, th]), np.array([0.5 * np.cos(th), 0.5 * np.sin(th), 0.8])),
                             (np.array([1.0, 2.0, -1.0]), np.array([-0.3 * np.cos(-1.0), -0.3 * np.sin(-1.0), -1.2]))],
    }


@pytest.mark.parametrize("name", EXACT)
def test_exact_solution_matches_reference(name):
    m = dl.models.get(name)
    states = [(m.q0, m.v0)] + _other_states()[name]
    h, T = 0.1, 10.0
    idx = np.array([0, 3, 17, 50, 77, 100])
    for q0, v0 in states:
        assert np.max(np.abs(np.asarray(m.system.constraint_residual(jnp.asarray(q0), jnp.asarray(v0))))) < 1e-14
        ref = dl.integrate(m.system, "reference", q0=q0, v0=v0, h=h, t_final=T)
        qe, ve = m.exact_solution(ref.t[idx], q0, v0)
        assert np.max(np.abs(qe - ref.q[idx])) <= 1e-10
        assert np.max(np.abs(ve - ref.v[idx])) <= 1e-10
        # and the motion is not trivial
        assert np.max(np.abs(qe[-1] - qe[0])) > 0.5


@pytest.mark.parametrize("name", EXACT)
def test_exact_solution_satisfies_the_constraint_and_is_differentiable(name):
    """v of the exact solution is the time derivative of its q (central differences), and
    satisfies the constraint at every time."""
    m = dl.models.get(name)
    q0, v0 = _other_states()[name][0]
    t = np.linspace(0.3, 7.0, 9)
    eps = 1e-5
    qp, _ = m.exact_solution(np.r_[0.0, t + eps], q0, v0)
    qm, _ = m.exact_solution(np.r_[0.0, t - eps], q0, v0)
    q, v = m.exact_solution(np.r_[0.0, t], q0, v0)
    assert np.max(np.abs((qp[1:] - qm[1:]) / (2 * eps) - v[1:])) < 1e-7
    res = jax.vmap(m.system.constraint_residual)(jnp.asarray(q), jnp.asarray(v))
    assert float(jnp.max(jnp.abs(res))) < 1e-12


_INVARIANT_CASES = [(name, inv) for name in ALL_MODELS
                    for inv in dl.models.get(name).invariants]


@pytest.mark.parametrize("name,invariant", _INVARIANT_CASES)
def test_invariants_conserved_by_reference_solution(name, invariant):
    m = dl.models.get(name)
    ref = dl.integrate(m.system, "reference", q0=m.q0, v0=m.v0, h=0.1, t_final=10.0)
    f = jax.jit(jax.vmap(m.invariants[invariant]))
    vals = np.asarray(f(jnp.asarray(ref.q), jnp.asarray(ref.v)))
    assert np.ptp(vals) <= 1e-10 * max(abs(vals[0]), 1e-3)


def test_every_model_with_linear_constraints_has_energy_invariant():
    for name in ALL_MODELS:
        m = dl.models.get(name)
        if not m.system.is_affine:
            assert "energy" in m.invariants, name


def test_p2_affine_energy_is_not_conserved():
    """The affine constraint does work: the reference energy of P2 changes (so the model is right
    not to declare an energy invariant)."""
    m = dl.models.get("p2-affine")
    assert m.system.is_affine and "energy" not in m.invariants
    ref = dl.integrate(m.system, "reference", q0=m.q0, v0=m.v0, h=0.1, t_final=10.0)
    assert np.ptp(ref.energy) > 1e-3


def test_p1_p2_data_from_spec():
    """GNI spec §5.5: P1 q0 = (0.5, 0.3, −0.2), v0 = (0.8, −0.4, 0.24); P2's v0_z adjusted."""
    p1, p2 = dl.models.get("p1-linear"), dl.models.get("p2-affine")
    assert np.array_equal(p1.q0, [0.5, 0.3, -0.2]) and np.array_equal(p1.v0, [0.8, -0.4, 0.24])
    assert abs(p2.v0[2] - (0.24 + 0.5 * np.sin(0.5))) < 1e-15
    q = jnp.array([0.3, -0.7, 1.1])
    assert np.allclose(np.asarray(p1.system.mass_matrix(q)), np.diag([1.0, 2.0, 1.5]))
    assert abs(float(p1.system.potential(q)) - (0.5 * (0.09 + 0.49 + 1.21) + 0.25 * 0.3 ** 4)) < 1e-15
    assert abs(float(p2.system.constraint_rhs(q)[0]) - 0.5 * np.sin(0.3)) < 1e-15


def test_gearbox_initial_energy_from_spec():
    """discrete-gradients spec §7.4 [OURS]: H0 = 2.270966669647573 (with H = T + V)."""
    m = dl.models.get("gearbox")
    E0 = float(m.system.energy(jnp.asarray(m.q0), jnp.asarray(m.v0)))
    assert abs(E0 - 2.270966669647573) < 1e-13


# ---------------------------------------------------------------------------------------------
# vertical rolling disk with nh-rattle / gni-midpoint
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_rolling_disk_theta_exact_rest_second_order(method):
    """θ does not enter G, μ or V and ∂θ ∈ D is a horizontal symmetry (2008 spec Cor 3): θ and
    θ̇ are exact to round-off. x is second order. φ̇ is *not* kept exactly by the GNI in these
    canonical coordinates (∂φ ∉ D: the reflection at q_k rotates some momentum into φ): with the
    consistent start-up (default) φ, φ̇ converge at order 4 (measured 3.99), with the Legendre
    start-up p⁺₀ = G v₀ at order 2. (discrete-gradients spec §7.0's 'exact in ρ, θ, φ' is a
    property of the discrete-gradient / reduced implicit midpoint method, not of the GNI.)"""
    m = dl.models.get("vertical-rolling-disk")
    hs = [0.2, 0.1, 0.05]
    for startup, (lo, hi) in (("consistent", (3.7, 4.3)), ("legendre", (1.85, 2.15))):
        sx, sphi = _disk_slopes(m, method, hs, startup)
        assert 1.85 <= sx <= 2.15
        assert lo <= sphi <= hi, (startup, sphi)


def _disk_slopes(m, method, hs, startup):
    ex, ephi = [], []
    for h in hs:
        tr = dl.integrate(m.system, method, q0=m.q0, v0=m.v0, h=h, t_final=5.0, startup=startup)
        qe, ve = m.exact_solution(tr.t, m.q0, m.v0)
        assert np.max(np.abs(tr.q[:, 2] - qe[:, 2])) <= 1e-12
        assert np.max(np.abs(tr.v[:, 2] - ve[:, 2])) <= 1e-12
        ex.append(max(np.max(np.abs(tr.q[:, :2] - qe[:, :2])), np.max(np.abs(tr.v[:, :2] - ve[:, :2]))))
        ephi.append(max(np.max(np.abs(tr.q[:, 3] - qe[:, 3])), np.max(np.abs(tr.v[:, 3] - ve[:, 3]))))
    return fitted_order(hs, ex), fitted_order(hs, ephi)


# ---------------------------------------------------------------------------------------------
# chaotic quartic: the H = 3.06 family
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.7, 1.2, np.pi / 2])
def test_chaotic_quartic_family_energy_306(alpha):
    """discrete-gradients spec §7.1: q0 = (cos α, 0.6, 0.4, 0.2, 1, 1, 1), q̇0 = sin α e_w1 has
    H = ½(1 + 0.56 + 3 + 0.56 + 1) = 3.06 for every α, and satisfies the constraint."""
    m = dl.models.get("chaotic-quartic", alpha=alpha)
    assert m.params["n"] == 3
    assert np.allclose(m.q0, [np.cos(alpha), 0.6, 0.4, 0.2, 1.0, 1.0, 1.0], atol=1e-15)
    H = float(m.system.energy(jnp.asarray(m.q0), jnp.asarray(m.v0)))
    assert abs(H - 3.06) <= 1e-14
    assert abs(float(m.system.constraint_residual(jnp.asarray(m.q0), jnp.asarray(m.v0))[0])) <= 1e-15


def test_chaotic_quartic_potential_and_constraint():
    """V = ½(|q|² + z1²z2² + Σ w_i² z_i²), μ = (1, 0_n, wᵀ), written again here."""
    m = dl.models.get("chaotic-quartic")
    rng = np.random.default_rng(0)
    q = rng.normal(size=7)
    w, z = q[1:4], q[4:]
    V = 0.5 * (q @ q + z[0] ** 2 * z[1] ** 2 + np.sum(w * w * z * z))
    assert abs(float(m.system.potential(jnp.asarray(q))) - V) < 1e-13
    assert np.allclose(np.asarray(m.system.constraint_matrix(jnp.asarray(q))),
                       np.r_[1.0, 0.0, 0.0, 0.0, w][None, :], atol=1e-15)


# ---------------------------------------------------------------------------------------------
# parameter validation
# ---------------------------------------------------------------------------------------------

def test_unknown_parameter_names_valid_ones():
    with pytest.raises(UnknownNameError) as ei:
        dl.models.get("chaplygin-sleigh", mass=2.0)
    msg = str(ei.value)
    assert "mass" in msg
    for valid in ("m", "J", "a"):
        assert valid in msg


def test_unknown_model_lists_models():
    with pytest.raises(UnknownNameError) as ei:
        dl.models.get("chaplygin-sled")
    for name in ("chaplygin-sleigh", "gearbox", "p1-linear"):
        assert name in str(ei.value)


@pytest.mark.parametrize("name,params", [
    ("chaplygin-sleigh", {"m": 0.0}), ("chaplygin-sleigh", {"J": -1.0}),
    ("vertical-rolling-disk", {"m": -2.0}), ("vertical-rolling-disk", {"r": 0.0}),
    ("chaotic-quartic", {"n": 1}), ("chaotic-quartic", {"n": 2.5}),
    ("chaplygin-sleigh", {"a": float("nan")}), ("gearbox", {"asymmetry": "big"}),
])
def test_invalid_parameter_values(name, params):
    with pytest.raises(InputError) as ei:
        dl.models.get(name, **params)
    assert list(params)[0] in str(ei.value)


def test_parameters_change_the_model():
    """A parameter reaches the system: the sleigh's G(q)[2, 2] is J + m a²."""
    m = dl.models.get("chaplygin-sleigh", m=2.0, a=0.5, J=3.0)
    G = np.asarray(m.system.mass_matrix(jnp.array([0.0, 0.0, 0.4])))
    assert abs(G[2, 2] - (3.0 + 2.0 * 0.25)) < 1e-15
    assert abs(G[0, 2] - (-2.0 * 0.5 * np.sin(0.4))) < 1e-15


def test_tilting_disk_closed_form_equals_its_vector_derivation():
    """The built-in tilting disk's closed-form G(q) and μ(q) against the vector form they were
    worked out from: G = m J_Cᵀ J_C + J_ωᵀ 𝕀 J_ω (J_C = ∂C/∂q by jax.jacfwd of the centre, J_ω the
    angular-velocity map) and μ the horizontal slip velocity of the contact point, at random q."""
    import jax
    import jax.numpy as jnp
    m, r, g = 1.3, 0.4, 9.81
    system = dl.models.factory("tilting-disk")({"m": m, "r": r, "g": g})

    def frames(q):
        c1, s1, c2, s2 = jnp.cos(q[0]), jnp.sin(q[0]), jnp.cos(q[1]), jnp.sin(q[1])
        Yx, Yy, ez = jnp.array([c1, s1, 0.0]), jnp.array([-s1, c1, 0.0]), jnp.array([0.0, 0.0, 1.0])
        return Yx, ez, c2 * Yy + s2 * ez, -s2 * Yy + c2 * ez

    def centre(q):
        return jnp.array([q[3], q[4], 0.0]) + r * frames(q)[3]

    def vector_form(q):
        Yx, ez, Ly, Lz = frames(q)
        JC = jax.jacfwd(centre)(q)
        Jw = jnp.stack([ez, Yx, Ly, jnp.zeros(3), jnp.zeros(3)], axis=1)
        I = (m * r * r / 4) * (jnp.eye(3) - jnp.outer(Ly, Ly)) + (m * r * r / 2) * jnp.outer(Ly, Ly)
        G = m * JC.T @ JC + Jw.T @ I @ Jw
        slip = JC - r * jnp.cross(Jw.T, Lz).T
        return G, slip[:2], slip[2]

    rng = np.random.default_rng(3)
    for _ in range(5):
        q = jnp.asarray(rng.uniform(-1.5, 1.5, 5))
        G, mu, vertical = vector_form(q)
        np.testing.assert_allclose(np.asarray(system.mass_matrix(q)), np.asarray(G), rtol=0, atol=1e-14)
        np.testing.assert_allclose(np.asarray(system.constraint_matrix(q)), np.asarray(mu), rtol=0, atol=1e-15)
        np.testing.assert_allclose(np.asarray(vertical), 0.0, atol=1e-15)      # holds identically
        assert float(system.potential(q)) == pytest.approx(m * g * r * np.cos(float(q[1])), rel=1e-15)

"""The built-in Whipple–Carvallo bicycle (``whipple-bicycle``): its linearisation against the
eigenvalues Meijaard, Papadopoulos, Ruina & Schwab publish (Proc. R. Soc. A 463 (2007), Table 2 —
numbers of the paper, not of this code), its kinematics against an independent computation of the
angular velocities, its initial states on the constraints, the constraints along a run, and the
model against SymPy's Whipple bicycle imported by ``dl.from_sympy`` (another derivation: Kane's
method, other axes)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.models import whipple_bicycle as wb

RNG = np.random.default_rng(7)

#: Meijaard et al. 2007, Table 2: eigenvalues (1/s) at v = 0, 5 and 10 m/s
PUBLISHED = {0.0: [-5.53094371765393, -3.13164324790656, 3.13164324790656, 5.53094371765393],
             5.0: [-14.07838969279822, -0.32286642900409, -0.77534188219585 + 4.46486771378823j,
                   -0.77534188219585 - 4.46486771378823j],
             10.0: [-24.62459635017404, 0.16105338653172, -3.72016840437287 + 10.90681139476287j,
                    -3.72016840437287 - 10.90681139476287j]}


@pytest.fixture(scope="module")
def bicycle():
    return dl.models.get("whipple-bicycle")


def _nearest_error(computed, published):
    return max(float(np.min(np.abs(np.asarray(computed) - lam))) for lam in published)


def test_coordinates_and_the_reference_configuration(bicycle):
    """The documented coordinate names; upright at zero pitch the front contact is on the ground
    (φ = 0 at round-off) a wheelbase ahead of the rear one; the metric is symmetric positive
    definite at random configurations; (Φ; μ) has full row rank 5 there."""
    s, p = bicycle.system, bicycle.params
    assert bicycle.coordinates == ("x", "y", "yaw", "roll", "pitch", "steer", "rear_wheel", "front_wheel")
    assert s.labels["coordinate_names"] == bicycle.coordinates
    k = wb.kinematics(p, jnp.zeros(8))
    np.testing.assert_allclose(np.asarray(k["Q"]), [p["w"], 0.0, 0.0], atol=1e-15)
    G_fn, C_fn = jax.jit(s.mass_matrix), jax.jit(s.constraint_matrix)
    for _ in range(3):
        q = jnp.asarray(RNG.uniform(-0.4, 0.4, 8))
        G = np.asarray(G_fn(q))
        np.testing.assert_allclose(G, G.T, atol=1e-13)
        assert np.linalg.eigvalsh(G)[0] > 0.05
        assert np.linalg.svd(np.asarray(C_fn(q)), compute_uv=False)[-1] > 0.1


def test_closed_form_jacobians_equal_autodiff_of_the_kinematics(bicycle):
    """The closed-form Jacobians behind the metric and the constraints, at random configurations
    and velocities (off φ = 0 too): the angular velocities equal vee(Ṙ Rᵀ) of the four bodies'
    rotation matrices (R_R and R_F include the wheel angles), the mass centres' velocities the
    derivatives of their positions, and Φ the derivative of φ, all by forward-mode autodiff
    (measured ≤ 2.2e-15)."""
    p, s = bicycle.params, bicycle.system

    @jax.jit
    def differences(q, v):
        k, dk = jax.jvp(lambda x: wb.kinematics(p, x), (q,), (v,))
        Jw = wb.angular_velocity_jacobians(p, q)
        Jv = wb.velocity_jacobians(p, q)
        out = []
        for body, key in (("rear frame", "R_B"), ("fork", "R_H"), ("rear wheel", "R_R"), ("front wheel", "R_F")):
            W = dk[key] @ k[key].T
            out.append(Jw[body] @ v - jnp.stack([W[2, 1], W[0, 2], W[1, 0]]))
        out += [Jv[c] @ v - dk[c] for c in ("C_R", "B", "H", "C_F", "S")]
        out.append(s.holonomic_jacobian(q) @ v - jax.jvp(s.holonomic, (q,), (v,))[1])
        return jnp.max(jnp.abs(jnp.concatenate(out)))
    for _ in range(3):
        q, v = jnp.asarray(RNG.uniform(-0.5, 0.5, 8)), jnp.asarray(RNG.normal(size=8))
        assert float(differences(q, v)) <= 1e-13


@pytest.mark.full
def test_linearisation_has_meijaards_eigenvalues(bicycle):
    """In the full suite: the compile of the linearisation (forward-mode autodiff over the index-1
    equations) took 450 s at load average 20–25 on the 2-core machine.
    The 4 eigenvalues of the model's linearised lateral motion (autodiff of the index-1
    equations about upright straight running) equal Table 2's at 0, 5 and 10 m/s to 1e-10
    (measured 9.8e-15, 2.7e-14, 5.3e-14). Negative control: the table's eigenvalues at 5 m/s are more than 1e-3 from
    ours at 5.01 m/s."""
    for speed, pub in PUBLISHED.items():
        ev = np.linalg.eigvals(wb.lateral_matrix(bicycle.system, speed))
        assert _nearest_error(ev, pub) <= 1e-10, (speed, ev)
    assert _nearest_error(np.linalg.eigvals(wb.lateral_matrix(bicycle.system, 5.01)), PUBLISHED[5.0]) > 1e-3


@pytest.mark.full
def test_basu_mandals_accelerations(bicycle):
    """The nonlinear equations at the general state of Basu-Mandal, Chatterjee & Papadopoulos,
    Proc. R. Soc. A 463 (2007), Table 1 (lean 35.6°, steer 13.2°): their printed pitch is on our
    φ = 0 and their rates on our constraints to 1e-12 (measured 4e-14 and 5e-14), and the 9
    accelerations equal their table to 1e-10 (measured 1.2e-12: their 13 digits)."""
    from dalembert.experiments.meijaard2007 import basu_accelerations, basu_state
    table = np.array([-0.5041626315047, -0.3449706619454, -1.4604528332980, 0.8353281706379, -7.8555281128244,
                      0.1205543897884, -4.6198904039403, 1.8472554144217, 2.4548072904550])
    q, v, (phi, res, fit) = basu_state(bicycle.system, bicycle.params)
    assert max(phi, res, fit) <= 1e-12
    assert np.max(np.abs(basu_accelerations(bicycle.system, bicycle.params, q, v) - table)) <= 1e-10


def test_upright_state_is_on_the_constraints(bicycle):
    """upright_state: φ(q0) and (Φ; μ) v0 at round-off, the given roll rate, steer, steer rate and
    rear-hub speed kept; a steer lowers the front (pitch ≠ 0); the rear wheel turns backwards
    (Meijaard's θ̇_R = −v/r_R when the pitch rate is zero)."""
    s = bicycle.system
    q0, v0 = wb.upright_state(4.6, 0.5)
    assert q0[wb.PITCH] == 0.0 and abs(v0[wb.REAR] + 4.6 / 0.3) <= 1e-12
    q0, v0 = wb.upright_state(4.0, 0.05, steer=0.1, steer_rate=-0.2)
    assert abs(float(s.holonomic(jnp.asarray(q0))[0])) <= 1e-14 and q0[wb.PITCH] != 0.0
    assert np.max(np.abs(np.asarray(s.constraint_matrix(jnp.asarray(q0))) @ v0)) <= 1e-13
    assert (v0[wb.X], v0[wb.ROLL], q0[wb.STEER], v0[wb.STEER]) == pytest.approx((4.0, 0.05, 0.1, -0.2), abs=1e-15)
    s.check(q0, v0)                                          # the engine's own checks pass


@pytest.mark.full
def test_constraints_at_round_off_along_a_run(bicycle):
    """In the full suite (the default method's first compile on this model takes minutes on the
    2-core machine): the default run (gonzalez-f with node_projection, h = 2e-3, the IFToMM
    manoeuvre M2 for 2 s) keeps |φ(q)| ≤ 1e-14 and the rolling residual ≤ 1e-11 at every node; the
    energy's relative range is ≤ 1e-6 (the bounds set for nh-rattle-sym, the earlier default:
    measured 1.1e-16, 7.0e-13, 2.7e-7; gonzalez-f: the largest constraint residual 4.5e-15, the
    energy's relative error 4.4e-14, with 4.3 Newton iterations per step)."""
    tr = dl.integrate(bicycle.system, bicycle.default_method, q0=bicycle.q0, v0=bicycle.v0, h=bicycle.default_h,
                      t_final=bicycle.default_t_final, progress=False, **bicycle.default_options)
    assert np.max(np.abs(tr.holonomic_residual)) <= 1e-14
    assert np.max(np.abs(tr.constraint_residual)) <= 1e-11
    E = np.asarray(tr.energy)
    assert np.ptp(E) / E[0] <= 1e-6


# --- against SymPy's Whipple bicycle (tests/unit/test_sympy_models.py) ----------------------------

#: our q -> the imported model's q = (q1 yaw, q2 roll, q5 steer, q4 pitch, x, y, wheel angles): SymPy's
#: model has x forward, y left, z up, and its pitch and wheel angles about the left-pointing axis
SIGNS = {"q1": (wb.YAW, -1.0), "q2": (wb.ROLL, 1.0), "q5": (wb.STEER, 1.0), "q4": (wb.PITCH, -1.0),
         "WR_cont_x": (wb.X, 1.0), "WR_cont_y": (wb.Y, -1.0), "angle_u3": (wb.REAR, -1.0),
         "angle_u6": (wb.FRONT, -1.0)}


@pytest.mark.full
def test_equal_to_sympys_whipple_bicycle(bicycle):
    """At random configurations the built-in model and SymPy's (test_kane3, imported by
    dl.from_sympy) have the same metric (mapped by the signed permutation S: G = Sᵀ G_s S) to
    1e-12, the same potential (both zero at the rear contact's height) to 1e-14 relative, the same
    configuration constraint up to sign and the same constraint row space (Φ; μ) to 1e-12."""
    pytest.importorskip("sympy")
    from test_sympy_models import whipple_bicycle       # SymPy's test_kane3 bicycle, built there
    km, values, potential = whipple_bicycle()
    imported = dl.from_sympy(km, values=values, potential=potential, name="whipple-sympy")
    S = np.zeros((8, 8))
    for row, name in enumerate(imported.coordinate_names):
        col, sign = SIGNS[name]
        S[row, col] = sign
    ours = bicycle.system
    for _ in range(3):
        q = RNG.uniform(-0.3, 0.3, 8)
        qs = jnp.asarray(S @ q)
        np.testing.assert_allclose(S.T @ np.asarray(imported.mass_matrix(qs)) @ S,
                                   np.asarray(ours.mass_matrix(jnp.asarray(q))), atol=1e-12)
        V = float(ours.potential(jnp.asarray(q)))
        assert abs(float(imported.potential(qs)) - V) <= 1e-14 * abs(V)     # measured 1.5e-15 relative (V ≈ 740 J)
        assert abs(float(imported.holonomic(qs)[0]) + float(ours.holonomic(jnp.asarray(q))[0])) <= 1e-12
        A = np.asarray(imported.constraint_matrix(qs)) @ S
        B = np.asarray(ours.constraint_matrix(jnp.asarray(q)))
        # the same row space: B's rows are combinations of A's (least squares residual zero) and vice versa
        for X, Y in ((A, B), (B, A)):
            coef = np.linalg.lstsq(X.T, Y.T, rcond=None)[0]
            assert np.max(np.abs(X.T @ coef - Y.T)) <= 1e-12

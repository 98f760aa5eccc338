"""The rattleback (Kane & Levinson 1982, PyDy's example) as a NonholonomicSystem in Euler angles and
the contact point: its closed-form velocity maps against automatic differentiation, its
Lagrange–d'Alembert accelerations against an independent body-frame Newton–Euler formulation
(quaternions, the rolling constraint eliminated), the spin reversal, and PyDy's friction torque
−σω (σ = 1e-4): the spin decays and the energy balance converges at the method's order."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError
from dalembert.models import rattleback as rb

RNG = np.random.default_rng(7)
#: configurations near the upright (|roll|, |pitch| ≤ 0.3 rad) and anywhere in yaw and position
QS = [np.concatenate([RNG.uniform(-3, 3, 1), RNG.uniform(-0.3, 0.3, 2), RNG.uniform(-1, 1, 2)]) for _ in range(3)]


def _model(friction=0.0):
    return dl.models.get("rattleback", friction=friction)


def _constrained_velocity(system, q, omega):
    """q̇ (5,) on the rolling constraints with body angular velocity ω (3,)."""
    A = np.vstack([np.asarray(rb.angular_velocity_map(jnp.asarray(q))), np.asarray(system.constraint_matrix(q))])
    return np.linalg.solve(A, np.concatenate([omega, [0.0, 0.0]]))


def test_velocity_maps_and_metric_equal_automatic_differentiation():
    """J_G in closed form equals ∂r_G/∂q by jacfwd, and G(q) equals the Hessian in q̇ of
    T = ½ m |d r_G/dt|² + ½ ωᵀ𝕀ω with ṙ_G by forward-mode differentiation of the position (measured
    ≤ 6e-17 and ≤ 3e-16)."""
    m = _model()
    p = m.params
    I = np.asarray(rb.inertia(p))

    def T(q, qd):
        vG = jax.jvp(lambda x: rb._mass_centre(p, x), (q,), (qd,))[1]
        w = rb.angular_velocity_map(q) @ qd
        return 0.5 * p["m"] * vG @ vG + 0.5 * w @ I @ w
    hessian = jax.jit(lambda q: jax.hessian(T, argnums=1)(q, jnp.zeros(5)))
    closed = jax.jit(lambda q: (rb.velocity_maps(p, q)[0], jax.jacfwd(lambda x: rb._mass_centre(p, x))(q),
                                m.system.mass_matrix(q)))
    for q in QS:
        q = jnp.asarray(q)
        JG, JG_ad, G = closed(q)
        assert float(jnp.max(jnp.abs(JG - JG_ad))) <= 1e-15
        H = hessian(q)
        assert float(jnp.max(jnp.abs(H - G))) <= 1e-14 * float(jnp.max(jnp.abs(G)))


def test_contact_point_velocity_is_zero_on_the_constraints():
    """On μ(q) q̇ = 0 the contact's material point is at rest, its vertical component included
    (not imposed: it vanishes because the contact height stays zero), and the contact height is 0
    at every configuration (r_G − C ρ has z = 0). Negative control: off the constraints the
    horizontal velocity is not zero."""
    m = _model()
    p = m.params
    for q in QS:
        JG, Jw, C, rho = rb.velocity_maps(p, jnp.asarray(q))
        v = _constrained_velocity(m.system, q, RNG.normal(size=3))
        vP = np.asarray(JG @ v + C @ jnp.cross(Jw @ v, -rho))
        assert np.max(np.abs(vP)) <= 1e-14 * np.max(np.abs(v))
        off = RNG.normal(size=5)
        assert np.max(np.abs(np.asarray(JG @ off + C @ jnp.cross(Jw @ off, -rho))[:2])) > 1e-3


@pytest.mark.parametrize("friction", [0.0, 1e-4])
def test_accelerations_equal_newton_euler(friction):
    """The Lagrange–d'Alembert acceleration of the Euler-angle system, mapped to ω̇ = J_ω q̈ + J̇_ω q̇,
    equals the body-frame Newton–Euler ω̇ (module doc of dalembert.models.rattleback) at random
    constrained states, with and without the friction torque; the energies agree (measured ω̇
    differences ≤ 2e-13 relative)."""
    m = _model(friction)
    p, system = m.params, m.system
    rhs = rb.newton_euler_rhs(p)
    acceleration = jax.jit(lambda q, v: (system.acceleration(q, v), jax.jvp(
        lambda x: rb.angular_velocity_map(x) @ v, (q,), (v,))[1] + rb.angular_velocity_map(q) @ system.acceleration(q, v)))
    for q in QS:
        omega = RNG.normal(scale=3.0, size=3)
        v = _constrained_velocity(system, q, omega)
        wdot = np.asarray(acceleration(jnp.asarray(q), jnp.asarray(v))[1])
        y = np.concatenate([rb.euler_to_quaternion(q), omega, q[3:]])
        want = rhs(0.0, y)
        assert np.max(np.abs(wdot - want[4:7])) <= 1e-11 * np.max(np.abs(want[4:7]))
        assert abs(float(system.energy(jnp.asarray(q), jnp.asarray(v))) - rb.newton_euler_energy(p, y)) <= 1e-15
        assert np.max(np.abs(v[3:] - want[7:9])) <= 1e-13 * max(1.0, np.max(np.abs(v[3:])))   # contact velocity


def test_default_state_names_units_and_friction_force():
    """PyDy's initial data on the constraints; names and units; the friction force is
    J_ωᵀ(−σω) (its power −σ|ω|² ≤ 0) and absent for σ = 0; a negative σ is refused."""
    m = _model()
    assert np.max(np.abs(np.asarray(m.system.constraint_residual(m.q0, m.v0)))) <= 1e-15
    assert np.allclose(np.asarray(rb.angular_velocity_map(jnp.asarray(m.q0))) @ m.v0, [0, 0, -5], atol=1e-14)
    assert m.coordinates == ("yaw", "roll", "pitch", "x", "y")
    assert m.system.labels["units"] == ("rad", "rad", "rad", "m", "m")
    assert not m.system.has_force and "energy" in m.invariants
    mf = _model(1e-4)
    assert mf.system.has_force and dl.Feature.FORCES in mf.system.features(mf.q0, mf.v0)
    q, v = jnp.asarray(QS[0]), jnp.asarray(_constrained_velocity(mf.system, QS[0], np.array([0.3, -1.0, 2.0])))
    w = rb.angular_velocity_map(q) @ v
    assert abs(float(mf.system.force(q, v) @ v) + 1e-4 * float(w @ w)) <= 1e-18
    with pytest.raises(InputError, match="friction"):
        dl.models.get("rattleback", friction=-1.0)


# --- full: integrations ------------------------------------------------------------------------

@pytest.mark.full
def test_reference_ode_agrees_with_newton_euler_at_t1():
    """The system's index-1 ODE (DOP853) and the Newton–Euler reference at t = 1: two independent
    formulations (measured |Δq| 1.9e-12, |Δq̇| 1.1e-10)."""
    m = _model()
    ref, label = m.state_solution(np.array([0.0, 1.0]))
    assert label == "the model's reference solution"
    tr = dl.integrate(m.system, "reference", q0=m.q0, v0=m.v0, h=0.5, t_final=1.0, progress=False)
    assert np.max(np.abs(tr.q[-1] - ref["q"][-1])) <= 1e-9
    assert np.max(np.abs(tr.v[-1] - ref["v"][-1])) <= 1e-8

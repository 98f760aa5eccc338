"""The IFToMM bicycle experiment's own quantities (the experiment's checks run in
tests/experiments/test_reproduce.py): the forward speed it reports and the energy split."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dalembert.experiments import iftomm_bicycle as X


#: the bicycle's programs compile for about a minute each on 2 cores: in the full suite
pytestmark = pytest.mark.full

def test_forward_speed_is_the_rear_hubs_velocity_along_the_heading():
    """The closed form ẋ cos ψ + ẏ sin ψ − r_R ψ̇ sin φ against forward-mode autodiff of the model's
    own rear-hub position C_R(q) projected on the heading (cos ψ, sin ψ, 0), at rolled, yawed,
    steered states with arbitrary velocities (the formula uses only the kinematics, not the
    constraints): measured equal to 1e-16. Negative control: without the −r_R ψ̇ sin φ term the
    difference is of the size of that term."""
    from dalembert.models import get, whipple_bicycle as wb
    bike = X.bicycle()
    model = get("whipple-bicycle")
    hub = jax.jit(lambda q, v: jax.jvp(lambda x: wb.kinematics(model.params, x)["C_R"], (q,), (v,))[1])
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v = rng.uniform(-0.4, 0.4, 8), rng.uniform(-2.0, 2.0, 8)
        dc = np.asarray(hub(jnp.asarray(q), jnp.asarray(v)))
        along = dc[0] * np.cos(q[2]) + dc[1] * np.sin(q[2])
        assert abs(bike.speed(q, v) - along) <= 1e-12
        assert abs(bike.speed(q, v) + 0.3 * v[2] * np.sin(q[3]) - along) > 1e-3 * abs(v[2] * np.sin(q[3]))


def test_energy_metric_and_split():
    """The metric is 100·(max − min)/E₀ in % (not relative to the mean or the last value), and
    potential + kinetic at the upright M2 state is the model's energy (0.5 vᵀGv + V)."""
    assert abs(X.energy_metric([2.0, 2.002, 1.999]) - 0.15) <= 1e-12     # (2.002 − 1.999)/2 in %
    bike = X.bicycle()
    q0, v0 = bike.upright_state(*X.MANEUVERS["M2"])
    V, T = X.energies(bike.system, q0[None], v0[None])
    np.testing.assert_allclose(V[0] + T[0], float(bike.system.energy(jnp.asarray(q0), jnp.asarray(v0))), rtol=1e-14)
    # upright at zero pitch: V = g Σ m·height above the ground (IFToMM's zero), Meijaard Table 1
    heights = {"B": (85.0, 0.9), "H": (4.0, 0.7), "R": (2.0, 0.3), "F": (3.0, 0.35)}
    np.testing.assert_allclose(V[0], 9.81 * sum(m * z for m, z in heights.values()), rtol=1e-12)


def test_symplectic_fast_newton_matches_full_newton():
    """The experiment's cheapest symplectic configuration (SYMPLECTIC_FAST: nh-rattle-4 with the
    Newton matrices kept across steps, one per stage fraction, the estimated-error test, rtol
    1e-13) solves for the roots that full Newton finds: 2 s of M2 at h = 0.025 (80 steps, 240
    stage solves), the nodes equal to the Newton tolerance and the energy metric to 1e-4 of itself
    (the energies to ~3e-13 relative); φ and the rolling residual near round-off (above full
    Newton's: linear convergence). The kept matrices cost more iterations per step than full
    Newton (measured 36.0 against 19.0): the saving is the Jacobians."""
    from dalembert.engine import integrate
    bike = X.bicycle()
    q0, v0 = bike.upright_state(*X.MANEUVERS["M2"])
    method, opts = X.SYMPLECTIC_FAST
    assert opts["jacobian_reuse"] > 0
    kw = dict(q0=q0, v0=v0, h=0.025, t_final=2.0, progress=False)
    fast = integrate(bike.system, method, **kw, **opts)
    full = integrate(bike.system, method, **kw)
    dq = float(np.max(np.abs(np.asarray(fast.q) - np.asarray(full.q))))
    m_fast, m_full = X.energy_metric(fast.energy), X.energy_metric(full.energy)
    assert dq <= 1e-10                                                  # measured 2.5e-11
    assert abs(m_fast - m_full) <= 1e-4 * m_full                         # measured 7.8e-6 relative
    assert float(np.max(np.abs(fast.holonomic_residual))) <= 1e-12      # measured 3.5e-15 (full Newton 1.3e-16)
    assert float(np.max(np.abs(fast.constraint_residual))) <= 1e-9      # measured 4.4e-12 (full Newton 1.2e-13)

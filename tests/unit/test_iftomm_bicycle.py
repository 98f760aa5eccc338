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

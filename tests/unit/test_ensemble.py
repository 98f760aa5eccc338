"""dl.ensemble: one vmapped compiled call equals the one-by-one integrations; memory filter;
bad batches; failures name the member."""
import numpy as np
import pytest

import dalembert as dl
from dalembert.models.chaotic_quartic import initial_state


@pytest.fixture(scope="module")
def quartic():
    return dl.models.get("chaotic-quartic")


def batch(alphas):
    q, v = zip(*(initial_state(3, a) for a in alphas))
    return np.stack(q), np.stack(v)


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_ensemble_equals_one_by_one(quartic, method):
    q0, v0 = batch(np.linspace(0.1, 1.4, 5))
    ens = dl.ensemble(quartic.system, method, q0=q0, v0=v0, h=0.05, t_final=3.0, save_every=2)
    assert ens.q.shape == (5, 31, 7) and ens.t.shape == (31,)
    for i in range(5):
        tr = dl.integrate(quartic.system, method, q0=q0[i], v0=v0[i], h=0.05, t_final=3.0, save_every=2)
        np.testing.assert_allclose(ens.q[i], tr.q, rtol=0, atol=1e-13)
        np.testing.assert_allclose(ens.energy[i], tr.energy, rtol=0, atol=1e-13)
        np.testing.assert_allclose(ens.member(i).v, tr.v, rtol=0, atol=1e-13)


def test_keep_filters_arrays_and_energy_family(quartic):
    q0, v0 = batch([0.2, 0.7, 1.2])
    ens = dl.ensemble(quartic.system, "nh-rattle", q0=q0, v0=v0, h=0.1, t_final=5.0, keep=["energy"])
    assert set(ens.arrays) == {"energy"}
    # the MP06 family has H = 3.06 for every member (discrete-gradients-2019.md §7.1)
    np.testing.assert_allclose(ens.energy[:, 0], 3.06, rtol=1e-14)
    assert ens.relative_energy_error.shape == (3, 51)
    with pytest.raises(AttributeError):
        ens.q
    with pytest.raises(dl.InputError, match="unknown node arrays"):
        dl.ensemble(quartic.system, "nh-rattle", q0=q0, v0=v0, h=0.1, t_final=1.0, keep=["bogus"])


def test_inconsistent_batches_and_bad_members_are_named(quartic):
    q0, v0 = batch([0.2, 0.7, 1.2])
    with pytest.raises(dl.InputError, match="one leading size"):
        dl.ensemble(quartic.system, "nh-rattle", q0=q0, v0=v0[:2], h=0.1, t_final=1.0)
    with pytest.raises(dl.InputError, match="one leading size"):
        dl.ensemble(quartic.system, "nh-rattle", q0=q0[0], v0=v0[0], h=0.1, t_final=1.0)
    bad = v0.copy()
    bad[1, 0] = 1.0  # violates ẋ + w·ż = 0
    with pytest.raises(dl.InputError, match="ensemble member 1"):
        dl.ensemble(quartic.system, "nh-rattle", q0=q0, v0=bad, h=0.1, t_final=1.0)
    with pytest.raises(dl.InputError, match="compiled method"):
        dl.ensemble(quartic.system, "reference", q0=q0, v0=v0, h=0.1, t_final=1.0)


def test_failing_member_is_named_with_its_partial_trajectory():
    import jax.numpy as jnp
    wall = dl.NonholonomicSystem(
        mass_matrix=np.eye(3), potential=lambda q: 0.5 * jnp.sum(q * q) + 0.0 * jnp.sqrt(1.0 - q[0]),
        constraint_matrix=lambda q: jnp.stack([-q[1], 0.0 * q[1], 1.0 + 0.0 * q[1]])[None, :],
        name="sqrt-wall")
    q0 = np.zeros((3, 3))
    v0 = np.array([[0.5, 0.3, 0.0], [1.5, 0.3, 0.0], [0.6, 0.3, 0.0]])  # member 1 crosses x = 1
    with pytest.raises(dl.ConvergenceError, match="ensemble member 1") as ei:
        dl.ensemble(wall, "nh-rattle", q0=q0, v0=v0, h=0.05, t_final=2.0)
    tr = ei.value.trajectory
    alone = dl.integrate(wall, "nh-rattle", q0=q0[1], v0=v0[1], h=0.05, t_final=(len(tr) - 1) * 0.05)
    np.testing.assert_allclose(tr.q, alone.q, atol=1e-13, rtol=0)
    assert np.all(tr.q[:, 0] < 1.0)

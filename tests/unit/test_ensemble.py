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
    # the members after the first are judged in one vectorised call: a bad one is still named
    nan = q0.copy()
    nan[2, 3] = np.nan
    with pytest.raises(dl.InputError, match="ensemble member 2: q0 contains non-finite"):
        dl.ensemble(quartic.system, "nh-rattle", q0=nan, v0=v0, h=0.1, t_final=1.0)
    ens = dl.ensemble(quartic.system, "nh-rattle", q0=q0, v0=bad, h=0.1, t_final=0.2, project=True)
    np.testing.assert_allclose(ens.v[[0, 2], 0], v0[[0, 2]], rtol=0, atol=1e-15)   # as given
    w = q0[1, 1:4]
    assert abs(ens.v[1, 0, 0] + w @ ens.v[1, 0, 4:]) < 1e-14                      # member 1 projected
    assert np.max(np.abs(ens.v[1, 0] - bad[1])) > 0.1
    ap = quartic.almost_poisson
    import jax
    x0 = np.array(jax.vmap(ap.reduce)(q0, v0))
    x0[1, 0] = np.inf
    with pytest.raises(dl.InputError, match="ensemble member 1: x0 contains non-finite"):
        dl.ensemble(ap, "dg-gonzalez", x0=x0, h=0.1, t_final=1.0)


@pytest.mark.parametrize("bad", [1, 2])      # with two CPU devices: on the first / the second
def test_failing_member_is_named_with_its_partial_trajectory(bad):
    import jax.numpy as jnp
    wall = dl.NonholonomicSystem(
        mass_matrix=np.eye(3), potential=lambda q: 0.5 * jnp.sum(q * q) + 0.0 * jnp.sqrt(1.0 - q[0]),
        constraint_matrix=lambda q: jnp.stack([-q[1], 0.0 * q[1], 1.0 + 0.0 * q[1]])[None, :],
        name="sqrt-wall")
    q0 = np.zeros((3, 3))
    v0 = np.array([[0.5, 0.3, 0.0], [0.6, 0.3, 0.0], [0.55, 0.3, 0.0]])
    v0[bad, 0] = 1.5                                                     # this member crosses x = 1
    with pytest.raises(dl.ConvergenceError, match=f"ensemble member {bad}") as ei:
        dl.ensemble(wall, "nh-rattle", q0=q0, v0=v0, h=0.05, t_final=2.0, on_failure="raise")
    tr = ei.value.trajectory
    alone = dl.integrate(wall, "nh-rattle", q0=q0[bad], v0=v0[bad], h=0.05, t_final=(len(tr) - 1) * 0.05)
    np.testing.assert_allclose(tr.q, alone.q, atol=1e-13, rtol=0)
    assert np.all(tr.q[:, 0] < 1.0)


# --- batched system parameters (issue 3 §3) ------------------------------------------------------

def _sleigh(p, metric_param=False):
    """Knife edge in a tilted quadratic well: q = (x, y, θ), G = diag(1, 1, ½), sin θ ẋ − cos θ ẏ = 0,
    V = ½k(x² + y²) + g y. The parameters enter the potential (with ``metric_param``, m enters
    the constant metric too)."""
    import jax.numpy as jnp
    k, g = p["k"], p["g"]
    G = (lambda q: jnp.diag(jnp.stack([p["m"], p["m"], 0.5 + 0.0 * p["m"]]))) if metric_param \
        else np.diag([1.0, 1.0, 0.5])
    return dl.NonholonomicSystem(
        mass_matrix=G,
        potential=lambda q: 0.5 * k * (q[0] ** 2 + q[1] ** 2) + g * q[1],
        constraint_matrix=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None, :],
        name="knife-edge-well")


SLEIGH_Q0 = np.array([1.0, 0.5, 0.0])
SLEIGH_V0 = np.array([0.3, 0.0, 0.7])          # on the constraint at θ = 0


@pytest.mark.parametrize("method", ["nh-rattle", pytest.param("dg-gonzalez", marks=pytest.mark.full)])
def test_ensemble_over_parameters_equals_one_by_one(method):
    params = {"g": np.array([0.0, 0.5, -0.3, 1.0]), "k": np.array([1.0, 3.0, 0.2, 2.0])}
    ens = dl.ensemble(_sleigh, method, params=params, q0=SLEIGH_Q0, v0=SLEIGH_V0, h=0.05,
                      t_final=4.0, save_every=4)
    assert ens.q.shape == (4, 21, 3)
    assert ens.metadata["params"]["k"] == [1.0, 3.0, 0.2, 2.0]
    for i in ((0, 1, 2, 3) if method == "nh-rattle" else (3,)):     # a DG compile per system: one
        sys_i = _sleigh({"g": params["g"][i], "k": params["k"][i]})
        tr = dl.integrate(sys_i, method, q0=SLEIGH_Q0, v0=SLEIGH_V0, h=0.05, t_final=4.0, save_every=4)
        np.testing.assert_allclose(ens.q[i], tr.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ens.energy[i], tr.energy, rtol=0, atol=1e-12)
    # the parameters matter: the members differ (a test that ignored params would fail here)
    finals = ens.q[:, -1]
    assert min(np.max(np.abs(finals[i] - finals[j])) for i in range(4) for j in range(i)) > 1e-3


def test_ensemble_over_parameters_batched_states_and_errors():
    params = {"g": np.array([0.1, 2.0]), "k": np.array([1.0, 3.0])}
    q0 = np.stack([SLEIGH_Q0, SLEIGH_Q0 + [0.1, -0.2, 0.0]])
    v0 = np.stack([SLEIGH_V0, SLEIGH_V0])
    ens = dl.ensemble(_sleigh, "nh-rattle", params=params, q0=q0, v0=v0, h=0.05, t_final=1.0)
    np.testing.assert_allclose(ens.q[:, 0], q0, rtol=0, atol=0)
    with pytest.raises(dl.InputError, match="2 parameter sets"):
        dl.ensemble(_sleigh, "nh-rattle", params=params, q0=np.stack([q0[0]] * 3),
                    v0=np.stack([v0[0]] * 3), h=0.05, t_final=1.0)
    with pytest.raises(dl.InputError, match="leading"):
        dl.ensemble(_sleigh, "nh-rattle", params={"g": np.array([1.0, 2.0]), "k": np.array([1.0])},
                    q0=SLEIGH_Q0, v0=SLEIGH_V0, h=0.05, t_final=1.0)
    with pytest.raises(dl.InputError, match="factory"):
        dl.ensemble(_sleigh(params), "nh-rattle", params=params, q0=q0, v0=v0, h=0.05, t_final=1.0)
    with pytest.raises(dl.InputError, match="member 1"):
        dl.ensemble(_sleigh, "nh-rattle", params=params, q0=q0, v0=np.stack([SLEIGH_V0, [0.0, 1.0, 0.0]]),
                    h=0.05, t_final=1.0)

    # a parameter in a constant metric (which nh-rattle factors once, in JAX when it is traced)
    # is batched like any other: each member equals its own system's run
    pm = dict(params, m=np.array([1.0, 2.0]))
    ens = dl.ensemble(lambda p: _sleigh(p, metric_param=True), "nh-rattle", params=pm, q0=q0, v0=v0,
                      h=0.05, t_final=1.0)
    for i in range(2):
        tr = dl.integrate(_sleigh({k: v[i] for k, v in pm.items()}, metric_param=True), "nh-rattle",
                          q0=q0[i], v0=v0[i], h=0.05, t_final=1.0)
        np.testing.assert_allclose(ens.q[i], tr.q, rtol=0, atol=1e-12)
    assert np.max(np.abs(ens.q[0, -1] - ens.q[1, -1])) > 1e-3


# --- members split over the CPU devices (engine.request_cpu_devices) ----------------------------

needs_two_devices = pytest.mark.skipif(len(__import__("jax").devices()) < 2,
                                       reason="one CPU device (a one-core machine or DALEMBERT_CPU_DEVICES=1)")


@needs_two_devices
def test_members_over_devices_equal_one_device_and_padding_is_dropped(quartic, monkeypatch):
    import jax
    from dalembert.engine import ensembles
    q0, v0 = batch(np.linspace(0.2, 1.3, 5))               # 5 members: padded to 6 on 2 devices
    kw = dict(q0=q0, v0=v0, h=0.05, t_final=3.0, save_every=3)
    split = dl.ensemble(quartic.system, "si-dla", **kw)
    assert split.metadata["devices"] == min(len(jax.devices()), 5)
    assert split.q.shape == (5, 21, 7)
    monkeypatch.setattr(ensembles, "ensemble_devices", lambda B, custom_calls=False: jax.devices()[:1])
    one = dl.ensemble(quartic.system, "si-dla", **kw)
    assert one.metadata["devices"] == 1
    np.testing.assert_allclose(split.q, one.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(split.energy, one.energy, rtol=0, atol=1e-13)
    # members differ (a wrong member order or a padding copy in the output would show here)
    assert np.min(np.abs(np.diff(split.q[:, -1, 0]))) > 1e-3


@needs_two_devices
@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_lapack_program_runs_on_fewer_devices_than_pool_threads_and_equals_integrate():
    """A step that calls LAPACK (here a Cholesky factorisation in H) runs on at most min(cores, NPROC − 1)
    devices (a LAPACK kernel waits on XLA's pool; engine.ensemble_devices), one without on all."""
    import os

    import jax
    import jax.numpy as jnp
    from dalembert.engine import xla as engine
    J = jnp.array([[0.0, 1.0], [-1.0, 0.0]])

    def H(x):
        M = jnp.array([[2.0 + x[0] ** 2, x[0] * x[1]], [x[0] * x[1], 2.0 + x[1] ** 2]])
        return 0.5 * jnp.sum(x * x) + 0.2 * jnp.sum(jnp.log(jnp.diagonal(jnp.linalg.cholesky(M))))  # + 0.1 log det M

    ap = dl.AlmostPoissonSystem(lambda x: J, H)
    x0 = np.stack([[0.3 + 0.1 * i, -0.2 * i] for i in range(6)])
    ens = dl.ensemble(ap, "dg-gonzalez", x0=x0, h=0.1, t_final=2.0)
    pool = int(os.environ.get("NPROC") or engine._usable_cores())
    assert ens.metadata["devices"] == min(len(jax.devices()), 6, engine._usable_cores(), pool - 1)
    for i in (0, 5):
        tr = dl.integrate(ap, "dg-gonzalez", x0=x0[i], h=0.1, t_final=2.0)
        np.testing.assert_allclose(ens.x[i], tr.x, rtol=0, atol=1e-13)
    # energy is conserved by the DG method: the members really ran
    assert np.max(np.abs(ens.energy - ens.energy[:, :1])) < 1e-13
    lapack_free = dl.ensemble(dl.AlmostPoissonSystem(lambda x: J, lambda x: 0.5 * jnp.sum(x * x) + 0.1 * x[0] ** 4),
                              "dg-gonzalez", x0=x0, h=0.1, t_final=2.0)
    assert lapack_free.metadata["devices"] == min(len(jax.devices()), 6)

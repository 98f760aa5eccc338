"""Sweeps on a Dask cluster (issue 14): a 2-worker LocalCluster gives the local ensemble's result,
a worker killed mid-sweep does not change it, and a rerun skips the tasks that are done."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import dalembert as dl

distributed = pytest.importorskip("dask.distributed")

# one pytest-xdist worker runs this module, so that its cluster is started once (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("dask-cluster")

from test_protocol import knife_edge   # a system of ours, not in the zoo

SYSTEM = knife_edge()
B = 24
_rng = np.random.default_rng(7)
Q0 = _rng.normal(size=(B, 3)) * 0.3
V0 = np.stack([np.array([np.cos(q[2]), np.sin(q[2]), 0.5 + 0.1 * i]) for i, q in enumerate(Q0)])
KW = dict(h=0.01, t_final=40.0, save_every=7, q0=Q0, v0=V0)


@pytest.fixture(scope="module")
def reference():
    return dl.ensemble(SYSTEM, "nh-rattle", **KW)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _same(a, b, atol=0.0):
    assert a.t.shape == b.t.shape and list(a.status) == list(b.status)
    for k in ("q", "v", "energy", "constraint_residual"):
        np.testing.assert_allclose(a.arrays[k], b.arrays[k], rtol=0, atol=atol, err_msg=k)


def test_sweep_with_a_killed_worker_equals_the_local_ensemble(reference, client, tmp_path):
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    tasks = tmp_path / "tasks"

    def kill_when_started():              # after the first task file: a worker dies mid-sweep
        deadline = time.time() + 120
        while time.time() < deadline and not (tasks.exists() and any(tasks.glob("task-*.npz"))):
            time.sleep(0.02)
        os.kill(victim, signal.SIGKILL)
    killer = threading.Thread(target=kill_when_started, daemon=True)
    killer.start()
    ens = dl.sweep(SYSTEM, "nh-rattle", out=tmp_path, client=client, members_per_task=2, **KW)
    killer.join(timeout=5)
    assert victim not in client.run(os.getpid).values()       # the worker was replaced
    _same(ens, reference)
    assert ens.metadata["sweep"]["tasks"] == 12
    _same(dl.load(tmp_path / "sweep.npz"), reference)


def test_a_rerun_skips_done_tasks_and_another_sweep_is_refused(reference, client, tmp_path):
    dl.sweep(SYSTEM, "nh-rattle", out=tmp_path, client=client, members_per_task=5, **KW)
    files = sorted((tmp_path / "tasks").glob("task-*.npz"))
    assert len(files) == 5
    for f in files[1:3]:                  # as if the client had been killed before these finished
        f.unlink()
    again = dl.sweep(SYSTEM, "nh-rattle", out=tmp_path, client=client, **KW)
    assert again.metadata["sweep"]["tasks_run"] == 2
    _same(again, reference)
    with pytest.raises(dl.InputError, match="another sweep"):
        dl.sweep(SYSTEM, "nh-rattle", out=tmp_path, client=client, **dict(KW, h=0.02))


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_a_parameter_sweep_equals_the_parameter_ensemble(client, tmp_path):
    def skate(p):
        import jax.numpy as jnp
        return dl.NonholonomicSystem(
            mass_matrix=jnp.eye(3), potential=lambda q: 0.5 * p["k"] * q[0] ** 2,
            constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="k-skate")
    params = {"k": np.linspace(0.5, 2.0, 6)}
    kw = dict(h=0.01, t_final=10.0, save_every=10, q0=Q0[0], v0=V0[0], params=params)
    local = dl.ensemble(skate, "gni-midpoint", **kw)
    ens = dl.sweep(skate, "gni-midpoint", out=tmp_path, client=client, members_per_task=4, **kw)
    # an implicit step's Newton solves are vectorised over the task's members, so a task of 4
    # rounds differently from the ensemble of 6: the bound is 1000 steps × the Newton rtol 1e-14
    _same(ens, local, atol=1000 * 1e-14)
    assert ens.metadata["params"]["k"] == params["k"].tolist()

"""First calls: the step traced once per run (engine.programs.once / traced_once) and dalembert's
own persistent cache of compiled programs (engine.disk_cache)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.engine import disk_cache, loop, programs


def _skate(counter):
    """A knife edge (x, y, θ) whose metric depends on q (a mass that grows with x), written as a
    user writes it: G = the Hessian of T in v; ``counter`` counts the traces of T."""
    def T(q, v):
        counter[0] += 1
        m = 1.0 + 0.1 * jnp.tanh(q[0])
        return 0.5 * m * (v[0] ** 2 + v[1] ** 2) + 0.5 * 0.3 * v[2] ** 2

    def metric(q):
        return jax.hessian(T, argnums=1)(q, jnp.zeros_like(q))

    def mu(q):
        return jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])
    system = dl.NonholonomicSystem(metric, lambda q: 0.5 * q[2] ** 2, mu, name="hessian-skate")
    q0 = np.array([0.1, 0.0, 0.3])
    v0 = np.array([np.cos(0.3), np.sin(0.3), 0.5])
    return system, q0, v0


def test_step_traced_once_gives_the_same_run():
    """The programs built from the traced-once step equal, bit for bit, those that trace the
    step wherever it is used (two formulations of one run), and trace the user's T less often."""
    counter = [0]
    system, q0, v0 = _skate(counter)
    x0s, h = (q0, v0), np.float64(0.05)
    method = dl.methods.get("nh-rattle")
    runs = {}
    for once in (False, True):
        counter[0] = 0
        b = programs.bind(system, method, x0s, {}, trace_once=once)

        def start(x, hh, b=b):
            st = b.scheme.init(*b.convert(*x), hh)
            return st, loop.node_outputs(b.system, b.scheme.observe(st, hh))
        st, _ = jax.jit(start)(x0s, h)
        state_s = programs._shapes_of(st)
        if once:
            b = programs.traced_once(b, state_s, h)
        chunk = loop.make_chunk(b.system, b.scheme, 8, state_s, h)
        out = jax.jit(chunk)(st, h, 8, 3, True)
        runs[once] = (jax.tree_util.tree_leaves(out), counter[0])
    for a, c in zip(runs[False][0], runs[True][0]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(c))
    # (the user's T itself is traced once per system either way: systems.kind.traced_once)
    assert runs[False][1] == 1 and runs[True][1] == 0


def test_once_falls_back_for_other_shapes():
    calls = [0]

    def f(x):
        calls[0] += 1
        return jnp.sin(x) * 2.0
    g = programs.once(f, jax.ShapeDtypeStruct((3,), jnp.float64))
    assert calls[0] == 1
    np.testing.assert_array_equal(np.asarray(g(jnp.arange(3.0))), np.asarray(f(jnp.arange(3.0))))
    assert calls[0] == 2                     # (the reference call above)
    g(jnp.arange(4.0))                       # another shape: fn itself
    assert calls[0] == 3


def _lowered():
    return jax.jit(lambda x, h: (jnp.cumsum(jnp.sin(x)) * h, {"e": jnp.dot(x, x)})).lower(
        np.linspace(0.0, 1.0, 7), np.float64(0.1))


def test_disk_cache_roundtrip(tmp_path, monkeypatch):
    """A program stored by one compile is loaded by the next (the compiler is not called) and
    gives the same bits; a damaged entry is removed and compiled again."""
    monkeypatch.setattr(disk_cache, "directory", lambda: tmp_path)
    monkeypatch.setattr(disk_cache, "MIN_COMPILE_S", 0.0)
    args = (np.linspace(0.0, 1.0, 7), np.float64(0.1))
    first = disk_cache.compile_cached(_lowered(), lambda lw: lw.compile(), {})
    entries = list(tmp_path.glob("*.xla"))
    assert len(entries) == 1

    def refuse(_):
        raise AssertionError("compiled although the entry was there")
    again = disk_cache.compile_cached(_lowered(), refuse, {})
    for a, b in zip(jax.tree_util.tree_leaves(first(*args)), jax.tree_util.tree_leaves(again(*args))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    entries[0].write_bytes(b"not an executable")              # negative control: damaged
    compiled = []
    disk_cache.compile_cached(_lowered(), lambda lw: compiled.append(1) or lw.compile(), {})
    assert compiled == [1]
    # other compiler options: another entry
    disk_cache.compile_cached(_lowered(), lambda lw: lw.compile(), {"some_option": ""})
    assert len(list(tmp_path.glob("*.xla"))) == 2


def test_disk_cache_stands_aside(monkeypatch, tmp_path):
    """Off with DALEMBERT_COMPILATION_CACHE=0, and when JAX's own persistent cache is on (the
    test session's conftest turns it on)."""
    monkeypatch.setenv("DALEMBERT_CACHE_DIR", str(tmp_path))
    if jax.config.jax_compilation_cache_dir:
        assert disk_cache.directory() is None
    monkeypatch.setenv(disk_cache.ENV, "0")
    assert disk_cache.directory() is None


@pytest.mark.parametrize("method", ["nh-rattle", pytest.param("dg-gonzalez", marks=pytest.mark.full)])
def test_user_callables_traced_once_per_system(method, monkeypatch):
    """The user's T runs once per system and shape: every program, check, derivative and vmap
    reuses its jaxpr (measured before: 25 traces of T in a first call on the hessian coin, 60
    before the step was traced once); a second run from another state traces nothing. The run
    equals, bit for bit, the one with the callables traced wherever they are used."""
    from dalembert.systems import nonholonomic
    counter = [0]
    system, q0, v0 = _skate(counter)
    traj = dl.integrate(system, method, h=0.05, t_final=0.5, q0=q0, v0=v0)
    assert counter[0] == 1
    dl.integrate(system, method, h=0.05, t_final=0.5, q0=q0 + np.array([0.1, -0.2, 0.0]), v0=v0)
    assert counter[0] == 1
    monkeypatch.setattr(nonholonomic, "traced_once", lambda owner, fn: fn)
    inline = [0]
    system2, _, _ = _skate(inline)
    traj2 = dl.integrate(system2, method, h=0.05, t_final=0.5, q0=q0, v0=v0)
    assert inline[0] > 5                     # the negative control: traced at every use
    np.testing.assert_array_equal(np.asarray(traj.q), np.asarray(traj2.q))
    np.testing.assert_array_equal(np.asarray(traj.v), np.asarray(traj2.v))


def test_constant_metric_seen_through_jit():
    """A metric the user wrapped in jax.jit (a call of an inner jaxpr) is still recognised as
    constant, and one that reads q is not (the data-flow analysis follows the call)."""
    M = jnp.diag(jnp.array([1.0, 2.0, 0.5]))
    mu = lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])
    q = np.array([0.1, 0.2, 0.3])
    const = dl.NonholonomicSystem(jax.jit(lambda q: M + 0.0 * jnp.ones(3)[0]), None, mu)
    varying = dl.NonholonomicSystem(jax.jit(lambda q: M * (1.0 + 0.1 * q[0] ** 2)), None, mu)
    assert const.constant_metric(q)
    assert not varying.constant_metric(q)


@pytest.mark.parametrize("method, explicit", [("nh-rattle", True), ("gni-euler-a", True), ("dg-gonzalez", False)])
def test_never_fails_read_from_the_kept_trace(method, explicit):
    """The explicit-step test read from the step's kept trace agrees with the test that traces the
    step again (two formulations), on the constant-metric knife edge where nh-rattle and the GNI
    Euler step are explicit and dg-gonzalez is not; and on the hessian skate, where nh-rattle is
    implicit (the negative control: the kept trace is read, and says so)."""
    mu = lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])
    knife = dl.NonholonomicSystem(jnp.diag(jnp.array([1.0, 1.0, 0.3])), lambda q: 0.5 * q[2] ** 2, mu)
    skate, q0s, v0s = _skate([0])
    q0, v0 = np.array([0.1, 0.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.5])
    for system, qv, expect in ((knife, (q0, v0), explicit), (skate, (q0s, v0s), False)):
        m = dl.methods.get(method)
        b = programs.bind(system, m, qv, {}, trace_once=True)
        h = np.float64(0.05)
        st = jax.eval_shape(lambda x, hh: b.scheme.init(*b.convert(*x), hh), qv, h)
        kept = programs.traced_once(b, st, h)
        assert loop._converged_of_trace(kept.scheme.step, (st, h)) is not None
        assert loop._converged_of_trace(b.scheme.step, (st, h)) is None
        assert loop.never_fails(kept.scheme, st, h) == loop.never_fails(b.scheme, st, h) == expect

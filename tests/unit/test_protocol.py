"""The system-kind protocol, the engine's caches and the functional core (issue: one system-kind
protocol, an engine that behaves inside a user's JAX program)."""
import gc
import json
import subprocess
import sys
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert import _cache
from dalembert.methods.kinds import methods_for
from dalembert.systems.kind import find_view


def knife_edge(k=1.0):
    """A skate on a spring, not in the model zoo: q = (x, y, φ), blade along (cos φ, sin φ)."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.3])),
        potential=lambda q: 0.5 * k * (q[0] ** 2 + q[1] ** 2),
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
        name="spring-skate")


Q0, V0 = np.array([0.3, -0.2, 0.1]), np.array([np.cos(0.1), np.sin(0.1), 0.7])


def test_every_registered_method_declares_kinds_and_every_kind_is_named():
    kinds = {"nonholonomic", "almost-poisson", "euler-poincare-suslov", "lie-nonholonomic", "reduced"}
    for name, t in dl.methods.available().items():
        assert t.integrates and set(t.integrates) <= kinds, name
    assert dl.LeftInvariantSystem.kinds() == ("left-invariant", "euler-poincare-suslov")


def test_incompatible_pair_is_refused_before_tracing_naming_both_sides():
    sus = dl.models.get("suslov")
    with pytest.raises(dl.InputError) as err:
        dl.integrate(sus.system, "nh-rattle", h=0.1, t_final=1.0, **sus.initial_state)
    msg = str(err.value)
    assert "integrates nonholonomic systems" in msg and "euler-poincare-suslov" in msg
    assert "eps-midpoint" in msg                              # the methods that do take it
    with pytest.raises(dl.InputError, match="integrates reduced systems"):
        dl.ensemble(knife_edge(), "lie-gni", q0=np.stack([Q0, Q0]), v0=np.stack([V0, V0]), h=0.1, t_final=1.0)
    assert set(methods_for(sus.system)) >= {"eps-midpoint", "lie-gni-mv", "reference"}
    assert "nh-rattle" not in methods_for(sus.system)


def test_incompatible_pair_on_the_command_line_is_one_line():
    out = subprocess.run([sys.executable, "-m", "dalembert.cli", "run", "suslov", "--method", "nh-rattle",
                          "--no-plots", "--t-final", "0.1"], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "--method nh-rattle does not integrate suslov" in lines[0], out.stderr
    assert "eps-midpoint" in lines[0] and "dalembert list --model suslov" in lines[0]


def test_views_are_registered_and_applied():
    sleigh = dl.models.get("chaplygin-sleigh")
    assert find_view(sleigh.system, ("almost-poisson",)).target == "almost-poisson"
    assert find_view(sleigh.system, ("nonholonomic",)) is None
    tr = dl.integrate(sleigh.system, "dg-gonzalez", q0=sleigh.q0, v0=sleigh.v0, h=0.1, t_final=2.0)
    assert tr.metadata["kind"] == "nonholonomic" and tr.max_relative_energy_error < 1e-12
    # the same numbers as the explicit reduction anchored at q0
    ap = dl.almost_poisson(sleigh.system, sleigh.q0)
    tr2 = dl.integrate(ap, "dg-gonzalez", x0=np.asarray(ap.reduce(sleigh.q0, sleigh.v0)), h=0.1, t_final=2.0)
    np.testing.assert_allclose(tr.q, tr2.q, rtol=0, atol=1e-13)


def test_two_chunks_serve_every_run_length_and_save_every(compile_counter):
    """A single run compiles its start program and a chunk in one of two sizes, each once: the
    short run's (at most loop.SHORT_CHUNK_SAVES nodes; its output buffer is cheap to zero at each
    call) and the full one. Later runs of any length and save_every compile nothing, and the
    short chunk's nodes are the full chunk's, bit for bit."""
    from dalembert.engine import loop
    s = knife_edge(2.0)
    dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.01, t_final=1.0)          # 100 nodes: short
    assert compile_counter[0] == 2                                               # start, short chunk
    n = len(_cache.for_object(s))
    long = dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.02, t_final=294.0, save_every=7)  # 2100
    assert compile_counter[0] == 3                                               # the full chunk
    assert len(_cache.for_object(s)) == n
    compile_counter[0] = 0
    assert loop.is_short_run(1000) and not loop.is_short_run(loop.SHORT_CHUNK_SAVES + 1)
    short = dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.02, t_final=20.0)              # 1000
    dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.02, t_final=20.02, save_every=3)      # 334
    every = dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.02, t_final=294.0)            # 14700
    assert compile_counter[0] == 0
    np.testing.assert_array_equal(long.q, every.q[::7])     # the nodes of save_every=7 are those of 1
    np.testing.assert_array_equal(short.q, every.q[:1001])  # the short chunk's are the full chunk's
    np.testing.assert_array_equal(short.energy, every.energy[:1001])


def test_rich_programs_have_one_chunk_size(compile_counter, monkeypatch):
    """Where the start program is not small (here: the bound set to 0 lines), a short run compiles
    the full chunk, and a long run after it compiles nothing: a second compile of a rich system's
    chunk would cost seconds (the negative control is the test above: 2, then 3 compiles)."""
    from dalembert.engine import programs
    monkeypatch.setattr(programs, "SHORT_CHUNK_MAX_LINES", 0)
    s = knife_edge(2.5)
    short = dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.01, t_final=1.0)         # 100 nodes
    assert compile_counter[0] == 2                                              # start, full chunk
    long = dl.integrate(s, "gni-midpoint", q0=Q0, v0=V0, h=0.01, t_final=30.0)          # 3000 nodes
    assert compile_counter[0] == 2
    np.testing.assert_array_equal(short.q, long.q[:101])


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_caches_go_with_the_system_and_clear_caches_empties_them():
    s = knife_edge(3.0)
    dl.integrate(s, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=0.5)
    ref = weakref.ref(s)
    assert _cache.for_object(s)
    del s
    gc.collect()
    assert ref() is None                      # nothing dalembert keeps holds the system alive
    s2 = knife_edge(4.0)
    dl.integrate(s2, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=0.5)
    dl.clear_caches()
    assert _cache.cache_size() == 0
    dl.integrate(s2, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=0.5)   # compiles again, runs


def test_options_with_arrays_are_hashable_cache_keys():
    ball = dl.models.get("rolling-ball")
    st = ball.initial_state
    x1 = np.asarray(st["x0"]) + 0.01 * np.asarray(st["xdot0"])
    kw = dict(h=0.01, t_final=0.1, **st)
    a = dl.integrate(ball.system, "reduced-gni", startup=("second-point", x1, np.asarray(st["xi0"])), **kw)
    b = dl.integrate(ball.system, "reduced-gni", startup=("second-point", x1 + 1e-3, np.asarray(st["xi0"])), **kw)
    assert not np.array_equal(a.x, b.x)       # different arrays, different programs


def test_solve_under_jit_vmap_and_grad_agrees_with_integrate():
    s = knife_edge()
    tr = dl.integrate(s, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=2.0, save_every=4)
    f = jax.jit(lambda q0, v0, h: dl.solve(s, "nh-rattle", (q0, v0), h, 200, save_every=4))
    out = f(Q0, V0, 0.01)
    np.testing.assert_allclose(np.asarray(out["q"]), tr.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(np.asarray(out["t"]), tr.t, rtol=0, atol=1e-13)
    assert bool(out["ok"]) and int(out["failed_step"]) == -1
    hs = jnp.array([0.01, 0.005])
    qs = jax.vmap(lambda h: dl.solve(s, "nh-rattle", (Q0, V0), h, 200)["q"][-1])(hs)
    for h, q in zip(hs, qs):
        ref = dl.integrate(s, "nh-rattle", q0=Q0, v0=V0, h=float(h), t_final=200 * float(h)).q[-1]
        np.testing.assert_allclose(q, ref, rtol=0, atol=1e-12)

    def final_x(v0y, h=0.01):
        v0 = jnp.array([jnp.cos(0.1), jnp.sin(0.1), v0y]) * 1.0
        return dl.solve(s, "nh-rattle", (jnp.asarray(Q0), v0), h, 100)["q"][-1, 0]
    g = jax.grad(final_x)(0.7)
    eps = 1e-6
    fd = (final_x(0.7 + eps) - final_x(0.7 - eps)) / (2 * eps)
    assert abs(g - fd) <= 1e-6 * max(1.0, abs(fd))
    # an implicit method differentiates by the implicit function theorem (here forward mode)
    def f(y):
        v0 = jnp.array([jnp.cos(0.1), jnp.sin(0.1), y])
        return dl.solve(s, "gni-midpoint", (jnp.asarray(Q0), v0), 0.01, 50)["q"][-1, 0]
    _, df = jax.jvp(f, (0.7,), (1.0,))
    fd = (f(0.7 + eps) - f(0.7 - eps)) / (2 * eps)
    assert abs(df - fd) <= 1e-6 * max(1.0, abs(fd))


def test_integrate_inside_a_trace_says_use_solve():
    s = knife_edge()
    with pytest.raises(dl.InputError, match="dl.solve"):
        jax.jit(lambda h: dl.integrate(s, "nh-rattle", q0=Q0, v0=V0, h=h, t_final=1.0).q)(0.01)


def test_solve_reports_a_failed_step_without_raising():
    s = dl.NonholonomicSystem(mass_matrix=jnp.eye(3), potential=lambda q: jnp.log(1.0 - q[0]),
                              constraint_matrix=lambda q: jnp.array([[0.0, 0.0, 1.0]]), name="log-wall")
    out = jax.jit(lambda: dl.solve(s, "nh-rattle", (jnp.zeros(3), jnp.array([3.0, 0.0, 0.0])), 0.1, 50))()
    assert not bool(out["ok"]) and 0 <= int(out["failed_step"]) < 50
    assert np.all(np.isfinite(np.asarray(out["q"])))         # the state froze at the last good step


def test_dalembert_list_shows_the_kinds():
    out = subprocess.run([sys.executable, "-m", "dalembert.cli", "list", "--json"], capture_output=True,
                         text=True, timeout=300)
    data = json.loads(out.stdout)
    assert data["methods"]["dg-gonzalez"]["integrates"] == ["almost-poisson"]
    assert "nonholonomic -> almost-poisson" in data["views"]

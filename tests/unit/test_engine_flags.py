"""engine.xla: per-executable compiler options, and the opt-in process settings (on copies of the
environment and a stand-in for jax.config, so the test process is not changed)."""
import pytest

from dalembert.engine import xla as engine


def test_compiler_options_are_per_executable_and_can_be_switched_off(monkeypatch):
    import jax
    import jax.numpy as jnp
    monkeypatch.delenv("DALEMBERT_XLA_YNN", raising=False)
    monkeypatch.setenv("DALEMBERT_XLA_SMALL_LOOPS", "0")        # (the small-loop entry: below)
    assert engine.compiler_options() == engine.COMPILER_OPTIONS
    lowered = jax.jit(lambda a: jnp.sum(a * a)).lower(jnp.ones(5))
    assert float(engine.compile_lowered(lowered)(jnp.ones(5))) == 5.0
    monkeypatch.setenv("DALEMBERT_XLA_YNN", "1")
    assert engine.compiler_options() == {}
    monkeypatch.delenv("DALEMBERT_XLA_SMALL_LOOPS")
    assert set(engine.compiler_options()) <= {"xla_backend_extra_options"}



_PER_EXECUTABLE = r"""
import json, sys, tempfile
from pathlib import Path
import jax, jax.numpy as jnp
from jax import lax
from dalembert.engine import xla

def dumped(options):
    where = Path(tempfile.mkdtemp())
    lowered.compile(compiler_options={**options, "xla_dump_to": str(where)})
    return "".join(p.read_text() for p in where.glob("*.debug_options"))

def body(c, _):
    return c + 1e-3 * jnp.sin(c[::-1]), None
x = jnp.linspace(0.0, 1.0, 3)
lowered = jax.jit(lambda x: lax.scan(body, x, None, length=50)[0]).lower(x)
same = bool(jnp.all(xla.compile_lowered(lowered)(x) == lowered.compile()(x)))
print(json.dumps({"option": xla.small_loop_option(), "ours": dumped(xla.compiler_options()),
                  "plain": dumped({}), "same": same}))
"""


def test_small_loop_threshold_is_per_executable():
    """In a process without XLA_FLAGS, dalembert's programs carry the small-loop threshold in their
    own debug options (as XLA dumps them); a program compiled the ordinary way in the same process
    does not (negative control), and the two compute the same numbers."""
    import json
    import os
    import subprocess
    import sys
    if engine._jaxlib_version() not in engine.SMALL_LOOP_JAXLIB_VERSIONS:
        pytest.skip("the option is only used on the jaxlib versions it was checked on")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "DALEMBERT_XLA_SMALL_LOOPS")}
    out = subprocess.run([sys.executable, "-c", _PER_EXECUTABLE], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    setting = f"xla_cpu_small_while_loop_byte_threshold={engine.SMALL_LOOP_BYTES}"
    assert res["option"] == {"xla_backend_extra_options": setting}
    assert "xla_cpu_small_while_loop_byte_threshold" in res["ours"] and str(engine.SMALL_LOOP_BYTES) in res["ours"]
    assert "xla_dump_to" in res["plain"] and "small_while_loop" not in res["plain"]
    assert res["same"]


def test_extra_options_shim_keeps_everything_else():
    """The serialized entry merges into a copy of the options: replicas, partitions, debug options
    and the scalar overrides are kept; calls without the entry get JAX's options unchanged."""
    from jax._src import compiler
    assert engine._install_extra_options_shim()
    assert getattr(compiler.get_compile_options, "_dalembert_extra_options", False)
    plain = compiler.get_compile_options(num_replicas=1, num_partitions=1)
    assert plain.SerializeAsString() == compiler.get_compile_options.__wrapped__(
        num_replicas=1, num_partitions=1).SerializeAsString()
    with_entry = compiler.get_compile_options(
        num_replicas=1, num_partitions=1,
        env_options_overrides={"xla_backend_extra_options": "a_key=12,b_key=x", "xla_cpu_enable_fast_math": False})
    raw = with_entry.SerializeAsString()
    assert b"a_key" in raw and b"12" in raw and b"b_key" in raw
    assert [k for k, _ in with_entry.env_option_overrides] == ["xla_cpu_enable_fast_math"]
    assert engine._parse_extra("a=1, b = 2,") == {"a": "1", "b": "2"}


def test_small_loop_option_added_once_and_other_flags_kept():
    env = {"DALEMBERT_XLA_SMALL_LOOPS": "1", "XLA_FLAGS": "--xla_foo=1"}
    assert engine.request_small_loop_kernels(env)
    assert env["XLA_FLAGS"].split()[0] == "--xla_foo=1"
    assert engine.request_small_loop_kernels(env)               # idempotent
    assert env["XLA_FLAGS"].count("small_while_loop") == 1
    env = {"DALEMBERT_XLA_SMALL_LOOPS": "0"}
    assert not engine.request_small_loop_kernels(env) and "XLA_FLAGS" not in env


def test_unknown_jaxlib_is_left_alone(monkeypatch):
    monkeypatch.setattr(engine, "_jaxlib_version", lambda: (99, 0))
    env = {}
    assert not engine.request_small_loop_kernels(env)
    assert env == {}


def test_configure_after_jax_started_warns_and_changes_nothing(monkeypatch):
    import os
    monkeypatch.setattr(engine, "backends_started", lambda: True)
    before = dict(os.environ)
    with pytest.warns(RuntimeWarning, match="already started"):
        out = engine.configure()
    assert dict(os.environ) == before
    assert out["cpu_devices"] >= 1


# --- engine.request_cpu_devices: one CPU device per pool thread for ensembles ---------------------

class _Config:
    """Stands in for jax.config: records the update, or raises as JAX does once backends started."""

    def __init__(self, started=False, preset=-1):
        self.jax_num_cpu_devices = preset
        self.started = started

    def update(self, name, value):
        if self.started:
            raise RuntimeError("jax_num_cpu_devices config should be updated before backends are initialized")
        setattr(self, name, value)


def test_cpu_devices_one_per_pool_thread_and_pool_twice_the_cores():
    cfg, env = _Config(), {"DALEMBERT_CPU_DEVICES": "3"}
    assert engine.request_cpu_devices(env, cfg) == 6
    assert cfg.jax_num_cpu_devices == 6
    assert env["NPROC"] == "6"     # LAPACK programs get ≤ min(cores, NPROC − 1) devices (ensemble_devices)


def test_cpu_devices_respect_nproc_opt_out_and_existing_settings():
    cfg, env = _Config(), {"DALEMBERT_CPU_DEVICES": "4", "NPROC": "3"}
    assert engine.request_cpu_devices(env, cfg) == 3 and env["NPROC"] == "3"
    for env, cfg in (({"DALEMBERT_CPU_DEVICES": "1"}, _Config()),
                     ({"DALEMBERT_CPU_DEVICES": "4", "NPROC": "1"}, _Config()),
                     ({"DALEMBERT_CPU_DEVICES": "4", "XLA_FLAGS": "--xla_force_host_platform_device_count=8"},
                      _Config()),
                     ({"DALEMBERT_CPU_DEVICES": "4"}, _Config(preset=6)),
                     ({"DALEMBERT_CPU_DEVICES": "4"}, _Config(started=True))):
        before = dict(env)
        assert engine.request_cpu_devices(env, cfg) == 1
        assert env == before                                   # nothing changed
        assert cfg.jax_num_cpu_devices in (-1, 6)


# --- engine.ensemble_devices / _custom_calls: LAPACK programs get fewer devices than pool threads ---

def test_custom_calls_found_in_a_lapack_program_and_not_in_elementwise_code():
    import jax
    import jax.numpy as jnp
    A = jnp.eye(12) + 0.1
    assert any("lapack" in c for c in engine._custom_calls(jax.jit(lambda a: jnp.linalg.solve(a, a[0])).lower(A)))
    assert engine._custom_calls(jax.jit(lambda a: jnp.tanh(a) @ a).lower(A)) == ()


def test_ensemble_devices_leave_a_pool_thread_free_for_lapack(monkeypatch):
    import jax
    monkeypatch.setattr(jax, "devices", lambda: list(range(8)))
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    monkeypatch.setattr(engine, "_usable_cores", lambda: 4)
    monkeypatch.setenv("NPROC", "8")
    assert engine.ensemble_devices(200) == list(range(8))
    assert engine.ensemble_devices(5) == list(range(5))                   # at most one per member
    assert engine.ensemble_devices(200, custom_calls=True) == list(range(4))   # min(cores, NPROC − 1)
    monkeypatch.setenv("NPROC", "3")
    assert engine.ensemble_devices(200, custom_calls=True) == list(range(2))
    monkeypatch.delenv("NPROC")
    assert engine.ensemble_devices(200, custom_calls=True) == list(range(3))   # pool = cores
    assert engine.ensemble_devices(1) == [0]

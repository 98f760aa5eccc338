"""Importing dalembert leaves the process as it was, float64 aside (run in fresh interpreters)."""
import json
import subprocess
import sys

SCRIPT = r"""
import json, os
import jax
env_before = dict(os.environ)
import dalembert as dl
from jax._src import xla_bridge
started = xla_bridge.backends_are_initialized()
changed = sorted(k for k in set(env_before) | set(os.environ) if env_before.get(k) != os.environ.get(k))
print(json.dumps({"changed": changed, "started": started, "devices": len(jax.devices()),
                  "x64": bool(jax.config.jax_enable_x64)}))
"""


def _run(code, env=None):
    import os
    e = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "NPROC", "JAX_NUM_CPU_DEVICES")}
    e.update(env or {})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=300)
    assert out.returncode == 0, out.stderr
    return out


def test_import_changes_no_environment_variable_device_count_or_backend():
    res = json.loads(_run(SCRIPT).stdout.strip().splitlines()[-1])
    assert res["changed"] == []                 # no XLA_FLAGS, NPROC, ... written
    assert res["started"] is False              # JAX's backends are not started by the import
    assert res["devices"] == 1                  # the user's device count (JAX's default: one CPU device)
    assert res["x64"] is True                   # the one documented change


def test_import_after_jax_started_in_float32_warns():
    code = ("import warnings, jax, jax.numpy as jnp\n"
            "jnp.ones(3).block_until_ready()\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import dalembert\n"
            "print(any('float32' in str(x.message) for x in w))")
    assert _run(code).stdout.strip().endswith("True")


def test_configure_is_the_opt_in():
    code = ("import os, json, dalembert as dl, jax\n"
            "out = dl.configure()\n"
            "print(json.dumps({'out': out, 'devices': len(jax.devices()), 'flags': os.environ.get('XLA_FLAGS', '')}))")
    res = json.loads(_run(code, {"DALEMBERT_CPU_DEVICES": "2"}).stdout.strip().splitlines()[-1])
    assert res["devices"] == res["out"]["cpu_devices"] == 4          # two per core: NPROC = 4
    # the small-loop option is set on the jaxlib versions it was checked on (XLA aborts on unknown options)
    assert res["out"]["small_loops"] == ("small_while_loop" in res["flags"])

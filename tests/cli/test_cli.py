"""Command-line tests: every subcommand end to end (in-process), and the one-line error contract
(unknown model / method / parameter, malformed --init: one line on stderr, non-zero exit)."""
import json
import subprocess
import sys

import numpy as np
import pytest

import dalembert as dl
from dalembert.cli import main


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_list_json_names_every_model_and_method(capsys):
    code, out, _ = run_cli(["list", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data["models"]) == set(dl.models.available())
    assert set(data["methods"]) == set(dl.methods.available())
    assert data["methods"]["nh-rattle"]["order"] == 2


def test_run_writes_files_that_reload_and_satisfy_the_constraint(tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(["run", "nonholonomic-particle", "--method", "nh-rattle", "--h", "0.05",
                            "--t-final", "2", "--out", str(out)], capsys)
    assert code == 0, err
    for f in ("trajectory.npz", "summary.json", "path.png", "energy.png", "constraint.png"):
        assert (out / f).stat().st_size > 0
    traj = dl.load(out / "trajectory.npz")
    summary = json.loads((out / "summary.json").read_text())
    assert traj.q.shape == (41, 3) and np.isclose(traj.t[-1], 2.0)
    assert summary["n_steps"] == 40
    # Thm 1 of Ferraro et al. 2008 (flat metric, V = 0): |Δq_k/h| is constant along the GNI
    speeds = np.linalg.norm(np.diff(traj.q, axis=0), axis=1) / 0.05
    assert np.ptp(speeds) < 1e-12 * speeds[0]
    # the node energy uses the averaged velocity: conserved only to O(h²)
    assert 1e-12 < summary["max_relative_energy_error"] < 1e-2
    assert summary["max_constraint_residual"] < 1e-13
    assert summary["invariants"]["y-momentum"]["max_relative_deviation"] < 1e-12


def test_run_param_and_init_are_used(tmp_path, capsys):
    out = tmp_path / "disk"
    code, _, err = run_cli(["run", "vertical-rolling-disk", "--method", "gni-midpoint", "--h", "0.1",
                            "--t-final", "1", "--param", "r=2", "--init", "q0=0,0,0,0",
                            "--init", "v0=2,0,0.5,1", "--no-plots", "--out", str(out)], capsys)
    assert code == 0, err
    traj = dl.load(out / "trajectory.npz")
    assert traj.metadata["parameters"]["r"] == 2.0
    np.testing.assert_allclose(traj.q[0], [0, 0, 0, 0])
    # the disk's exact flow has constant θ̇ (kept exactly by the GNI) and φ̇ (kept to O(h²))
    np.testing.assert_allclose(traj.v[:, 2], 0.5, atol=1e-13)
    np.testing.assert_allclose(traj.v[:, 3], 1.0, atol=1e-2)
    assert np.ptp(traj.v[:, 3]) > 0  # with r = 2 (not the default 1) the GNI is not exact in φ̇


def test_run_rejects_inconsistent_initial_velocity_unless_projected(tmp_path, capsys):
    args = ["run", "nonholonomic-particle", "--h", "0.1", "--t-final", "0.5", "--no-plots",
            "--init", "q0=0,1,0", "--init", "v0=1,0,0", "--out", str(tmp_path / "x")]
    code, _, err = run_cli(args, capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "violates the constraints" in err
    code, _, err = run_cli(args + ["--project"], capsys)
    assert code == 0, err
    traj = dl.load(tmp_path / "x" / "trajectory.npz")
    assert np.max(np.abs(traj.constraint_residual)) < 1e-13


def test_convergence_fits_second_order_for_rattle(tmp_path, capsys):
    out = tmp_path / "conv"
    code, _, err = run_cli(["convergence", "nonholonomic-particle", "--methods", "nh-rattle,gni-euler-a",
                            "--h", "0.2,0.1,0.05", "--t-final", "2", "--out", str(out)], capsys)
    assert code == 0, err
    data = json.loads((out / "convergence.json").read_text())
    assert (out / "convergence.png").stat().st_size > 0
    assert abs(data["orders_q"]["nh-rattle"] - 2) < 0.15
    # V = 0: L_d^A = L_d^SV, so GNI-A is the same scheme as RATTLE on the particle
    np.testing.assert_allclose(data["errors_q"]["gni-euler-a"], data["errors_q"]["nh-rattle"], rtol=1e-10)


def test_reproduce_lists_and_runs_one_experiment(tmp_path, capsys):
    code, out, _ = run_cli(["reproduce", "--list"], capsys)
    assert code == 0 and "ferraro2015-adjointness" in out
    code, _, err = run_cli(["reproduce", "ferraro2015-adjointness", "--quick", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    checks = json.loads((tmp_path / "checks.json").read_text())
    assert checks["total"] > 0 and checks["passed"] == checks["total"]
    html = (tmp_path / "index.html").read_text()
    assert "data:image/png;base64," in html and "ferraro2015-adjointness" in html


@pytest.mark.parametrize("args, needle", [
    (["run", "no-such-model"], "unknown model 'no-such-model'; choose from:"),
    (["run", "gearbox", "--method", "no-such-method"], "unknown method 'no-such-method'; methods for gearbox: nh-rattle"),
    (["run", "suslov", "--method", "nh-rattle"], "--method nh-rattle does not integrate suslov"),
    (["run", "gearbox", "--h", "0.03", "--t-final", "1"], "--t-final = 1 is not a whole number of steps of --h = 0.03"),
    (["run", "chaplygin-sleigh", "--init", "v0=1,1,1"], "pass --project"),
    (["run", "gearbox", "--param", "stiffness=2"], "has no parameter 'stiffness'; valid: asymmetry"),
    (["run", "gearbox", "--param", "asymmetry"], "--param expects NAME=VALUE"),
    (["run", "gearbox", "--init", "q0=1,2"], "has 3 coordinates"),
    (["run", "gearbox", "--init", "q0=1,a,3"], "not a comma-separated list of numbers"),
    (["run", "gearbox", "--init", "p0=1,2,3"], "unknown initial-state name 'p0'"),
    (["run", "gearbox", "--h", "-0.1"], "h must be > 0"),
    (["run", "gearbox", "--h", "nan"], "h must be finite"),
    (["run", "chaplygin-sleigh", "--param", "m=-1"], "must be > 0"),
    (["convergence", "gearbox", "--methods", "nh-rattle,bogus"], "unknown method 'bogus'"),
    (["reproduce", "no-such-experiment"], "unknown experiment"),
    (["run", "gearbox", "--bogus-option"], "No such option"),
])
def test_cli_errors_are_one_line_and_nonzero(args, needle, capsys):
    code, _, err = run_cli(args, capsys)
    assert code != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dalembert: error:") and needle in lines[0]
    assert "Traceback" not in err


def test_console_script_exit_status():
    """The installed entry point itself (a real process): non-zero exit, one line, no traceback."""
    p = subprocess.run([sys.executable, "-m", "dalembert.cli", "run", "nope"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and "unknown model" in p.stderr


def test_persistent_compilation_cache_is_written_and_reused(tmp_path):
    """A `dalembert run` stores its compiled chunk on disk; a second run finds it (cache hits)."""
    import os
    env = dict(os.environ, DALEMBERT_CACHE_DIR=str(tmp_path / "cache"))
    args = [sys.executable, "-m", "dalembert.cli", "run", "p1-linear", "--h", "0.1", "--t-final", "1",
            "--no-plots", "--out", str(tmp_path / "o")]
    subprocess.run(args, env=env, check=True, capture_output=True)
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(entries) >= 2  # at least the start-up function and the chunk
    subprocess.run(args, env=env, check=True, capture_output=True)
    # the second run compiled nothing new: the cache holds the same entries
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == entries


def test_run_a_model_whose_state_is_not_q_v(tmp_path, capsys):
    """The Suslov problem on SO(3): initial state (R0, omega0); trajectory.npz holds R and omega."""
    out = tmp_path / "suslov"
    code, _, err = run_cli(["run", "suslov", "--h", "0.01", "--t-final", "1", "--out", str(out),
                            "--init", "R0=1,0,0,0,1,0,0,0,1"], capsys)
    assert code == 0, err
    traj = dl.load(out / "trajectory.npz")
    assert traj.R.shape == (101, 3, 3) and traj.omega.shape == (101, 3)
    # group membership and the constraint at round-off; eps-midpoint conserves the energy exactly
    np.testing.assert_allclose(np.einsum("kij,kil->kjl", traj.R, traj.R), np.broadcast_to(np.eye(3), (101, 3, 3)),
                               atol=1e-13)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["max_constraint_residual"] < 1e-13
    assert summary["max_relative_energy_error"] < 1e-13
    code, _, err = run_cli(["run", "suslov", "--init", "q0=1,2,3"], capsys)
    assert code == 2 and "valid: R0, omega0" in err


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_run_rolling_ball_with_animation(tmp_path, capsys):
    """The rolling ball through the CLI: x, R, omega saved, the rolling constraint (41) in spatial ω
    at round-off, and --animate writes a GIF whose frames show the run."""
    from PIL import Image

    from dalembert.models import rolling_ball as rb
    out = tmp_path / "ball"
    code, _, err = run_cli(["run", "rolling-ball", "--h", "0.05", "--t-final", "2", "--out", str(out),
                            "--no-plots", "--animate"], capsys)
    assert code == 0, err
    traj = dl.load(out / "trajectory.npz")
    assert traj.x.shape == (41, 2) and traj.R.shape == (41, 3, 3) and traj.omega.shape == (41, 3)
    assert np.abs(rb.rolling_residual(rb.FIG1_PARAMS, traj.x, traj.R, traj.xdot, traj.omega)).max() < 1e-12
    with Image.open(out / "animation.gif") as im:
        assert im.n_frames == 41


def test_animate_needs_a_ball_like_model(tmp_path, capsys):
    code, _, err = run_cli(["run", "gearbox", "--t-final", "1", "--no-plots", "--animate",
                            "--out", str(tmp_path / "g")], capsys)
    assert code != 0 and len(err.strip().splitlines()) == 1
    assert "--animate needs a model with a contact point" in err
    assert not (tmp_path / "g" / "trajectory.npz").exists()       # refused before integrating


def test_unwritable_out_and_inexact_t_final_are_refused_before_integrating(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run_cli(["run", "gearbox", "--out", str(blocker / "sub")], capsys)
    assert code == 1 and "--out" in err and "not writable" in err
    code, _, err = run_cli(["run", "gearbox", "--h", "0.03", "--t-final", "10", "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and "not a whole number of steps" in err and "10.02" in err


@pytest.mark.parametrize("sig, status, stream", [("SIGINT", 130, False), ("SIGTERM", 143, False),
                                                 ("SIGTERM", 143, True)])
def test_signal_then_resume_equals_the_uninterrupted_run(sig, status, stream, tmp_path):
    """A real process: the signal arrives mid-run (after the first checkpoint), the process
    writes the partial trajectory (or, --stream, keeps the streamed file's nodes) and its
    checkpoint and exits with 128 + signal; --resume finishes with the uninterrupted run's
    result, bit for bit."""
    import os
    import signal
    import time
    out = tmp_path / "run"
    args = ["gearbox", "--method", "nh-rattle", "--h", "0.001", "--t-final", "6000", "--save-every", "997",
            "--no-plots"]
    p = subprocess.Popen([sys.executable, "-m", "dalembert.cli", "run", *args, "--out", str(out),
                          "--checkpoint", "--checkpoint-every", "0"] + (["--stream"] if stream else []),
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (out / "checkpoint.npz").exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    p.send_signal(getattr(signal, sig))
    err = p.communicate(timeout=120)[1]
    assert p.returncode == status, err
    assert err.strip().count("\n") == 0 and f"interrupted ({sig})" in err and "--resume" in err
    result = out / ("trajectory.h5" if stream else "trajectory.npz")
    if stream:
        assert not result.exists() and "trajectory.h5.partial" in err
        part = dl.load(out / "trajectory.h5.partial")
        assert part.t[-1] < 6000 and "interrupted" not in part.metadata
    else:
        part = dl.load(result)
        assert part.metadata["interrupted"]["signal"] == sig and part.t[-1] < 6000
    assert (out / "checkpoint.npz").exists() and not (out / "summary.json").exists()
    r = subprocess.run([sys.executable, "-m", "dalembert.cli", "run", "--resume", str(out), "--no-plots"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = dl.load(result, lazy=False)
    assert not (out / "checkpoint.npz").exists() and (out / "summary.json").exists()
    mdl = dl.models.get("gearbox")
    ref = dl.integrate(mdl.system, "nh-rattle", h=0.001, t_final=6000.0, save_every=997, **mdl.initial_state)
    assert res.t[-1] == ref.t[-1] == pytest.approx(6000.0)
    for k in ("q", "v", "energy"):
        np.testing.assert_array_equal(getattr(res, k), getattr(ref, k), err_msg=k)


def test_convergence_of_the_rolling_ball_against_its_reference(tmp_path, capsys):
    """`dalembert convergence` on a shape × group model: x and R against the §4.1 reference."""
    out = tmp_path / "conv"
    code, _, err = run_cli(["convergence", "rolling-ball", "--methods", "lie-gni", "--h", "0.04,0.02,0.01",
                            "--t-final", "2", "--param", "I1=1", "--param", "I2=0.5", "--param", "I3=0.7",
                            "--out", str(out)], capsys)
    assert code == 0, err
    data = json.loads((out / "convergence.json").read_text())
    assert 1.8 <= data["orders_q"]["lie-gni"] <= 2.3


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_sweep_command_writes_the_members_and_refuses_bad_vary(tmp_path, capsys):
    pytest.importorskip("dask.distributed")
    code, _, err = run_cli(["sweep", "chaplygin-sleigh", "--vary", "v0[9]=0:1"], capsys)
    assert code != 0 and "has 3 entries" in err and "Traceback" not in err
    out = tmp_path / "sw"
    code, _, err = run_cli(["sweep", "chaplygin-sleigh", "--members", "4", "--vary", "v0[2]=0.1:0.4",
                            "--method", "nh-rattle", "--h", "0.1", "--t-final", "5", "--save-every", "5",
                            "--workers", "1", "--project", "--out", str(out)], capsys)
    assert code == 0, err
    ens = dl.load(out / "sweep.npz")
    summary = json.loads((out / "summary.json").read_text())
    assert len(ens) == summary["members"] == 4 and summary["failed"] == []
    mdl = dl.models.get("chaplygin-sleigh")
    q0, v0 = (np.repeat(np.asarray(mdl.initial_state[k], float)[None], 4, axis=0) for k in ("q0", "v0"))
    v0[:, 2] = np.linspace(0.1, 0.4, 4)
    ref = dl.ensemble(mdl.system, "nh-rattle", h=0.1, t_final=5.0, save_every=5, project=True,
                      keep=("energy", "constraint_residual"), q0=q0, v0=v0)
    np.testing.assert_array_equal(ens.arrays["energy"], ref.arrays["energy"])


# --- issue 39 item 12: an unusable or damaged compilation cache, SIGTERM while starting, disk full ---

def _cli_process(args, env_extra, **kw):
    import os
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "dalembert.cli", *args], env=env, capture_output=True,
                          text=True, timeout=300, **kw)


def test_an_unusable_cache_directory_warns_once_and_the_command_works(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for cache in (blocker, blocker / "sub"):          # a file in its place; a path through a file
        p = _cli_process(["list", "--models"], {"DALEMBERT_CACHE_DIR": str(cache)})
        assert p.returncode == 0, p.stderr
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        assert lines[0].startswith(f"dalembert: warning: CacheWarning: the compilation cache directory {cache} "
                                   f"is not usable") and "running without a persistent compilation cache" in lines[0]
        assert "gearbox" in p.stdout


def test_a_read_only_cache_directory_is_refused_by_the_api_and_skipped_by_configure(tmp_path, monkeypatch):
    """(root ignores permissions, so the read-only directory is simulated: creating a file in it
    fails with EACCES.)"""
    import errno
    import tempfile
    import warnings

    import jax

    from dalembert import config
    from dalembert.engine import xla

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")
    before = jax.config.jax_compilation_cache_dir
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(dl.InputError) as ei:
        config.enable_compilation_cache(tmp_path / "ro")
    assert str(ei.value) == f"the compilation cache directory {tmp_path / 'ro'} is not usable (Permission denied)"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = xla.configure(small_loops=False, cpu_devices=False, compilation_cache=tmp_path / "ro")
    assert out["compilation_cache"] is None and jax.config.jax_compilation_cache_dir == before
    assert [type(x.message) for x in w] == [xla.CacheWarning]


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_damaged_cache_entries_warn_once_then_are_replaced(tmp_path):
    cache = tmp_path / "cache"
    args = ["run", "p1-linear", "--h", "0.1", "--t-final", "1", "--no-plots", "--out", str(tmp_path / "o")]
    env = {"DALEMBERT_CACHE_DIR": str(cache)}
    assert _cli_process(args, env).returncode == 0
    entries = sorted(cache.glob("*-cache"))
    assert len(entries) >= 2
    for e in entries:
        e.write_bytes(b"damaged")
    second = _cli_process(args, env)
    assert second.returncode == 0, second.stderr
    warned = [ln for ln in second.stderr.splitlines() if "warning" in ln]
    assert len(warned) == 1 and "damaged entry of the compilation cache" in warned[0] and str(cache) in warned[0]
    assert all(e.read_bytes() != b"damaged" for e in entries if e.exists())    # written afresh
    third = _cli_process(args, env)
    assert third.returncode == 0 and "warning" not in third.stderr, third.stderr


def test_sigterm_while_starting_says_so_and_exits_143(tmp_path):
    import os
    import signal
    import time
    out = tmp_path / "o"
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-m", "dalembert.cli", "run", "gearbox", "--h", "0.001",
                          "--t-final", "100", "--no-plots", "--out", str(out)], stderr=subprocess.PIPE,
                         text=True, env=env)
    time.sleep(0.5)                        # importing dalembert and JAX, or building and compiling
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=120)[1]
    assert p.returncode == 143, err
    assert err.strip().count("\n") == 0 and err.startswith("dalembert: terminated (SIGTERM) while starting")
    assert err.strip().endswith("nothing was written")
    assert not (out / "trajectory.npz").exists()


def test_disk_full_names_the_file(tmp_path, capsys, monkeypatch):
    import errno
    import os

    from dalembert._io import atomic_path
    target = tmp_path / "x.npz"
    with pytest.raises(OSError) as ei:
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert ei.value.errno == errno.ENOSPC and ei.value.filename == str(target) and str(target) in str(ei.value)
    assert list(tmp_path.iterdir()) == []                  # the temporary file is gone
    real = os.fsync

    def full(fd):
        real(fd)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "o"
    code, _, err = run_cli(["run", "p1-linear", "--h", "0.1", "--t-final", "1", "--no-plots", "--out", str(out)],
                           capsys)
    assert code == 1 and err.strip().count("\n") == 0, err
    assert err.startswith(f"dalembert: error: no space left on the device writing {out / 'trajectory.npz'}")

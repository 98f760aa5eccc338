"""Fault injection on `dalembert run` (issue 39): SIGKILL at random times (the finalisation window
included) then --resume, concurrent writers, stale checkpoints, damaged partial files, unusable
output paths. The quick tests run in CI; ``test_sigkill_soak`` (marked ``full``) kills ≥ 20 runs
and records the table (trials, resumed bit for bit, lost) in ``$DALEMBERT_FAULT_TABLE`` if set."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dalembert as dl

SRC = str(Path(dl.__file__).resolve().parents[1])
#: a streamed, checkpointed run of ~2 s (a checkpoint after every chunk)
RUN = ["gearbox", "--method", "nh-rattle", "--h", "0.001", "--t-final", "4000", "--save-every", "997",
       "--no-plots"]
T_FINAL = 4000.0


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("DALEMBERT_TEST_PAUSE_AFTER_FINALISE", None)
    env.update(extra)
    return env


def _cli(*args, cwd=None, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "dalembert.cli", "run", *args], capture_output=True,
                          text=True, cwd=cwd, env=env or _env(), timeout=timeout)


def _start(out: Path, **env):
    return subprocess.Popen([sys.executable, "-m", "dalembert.cli", "run", *RUN, "--out", str(out), "--stream",
                             "--checkpoint", "--checkpoint-every", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env(**env))


@pytest.fixture(scope="module")
def reference():
    mdl = dl.models.get("gearbox")
    ref = dl.integrate(mdl.system, "nh-rattle", h=0.001, t_final=T_FINAL, save_every=997, **mdl.initial_state)
    return {k: np.asarray(getattr(ref, k)) for k in ("t", "q", "v", "energy")}


def _same(path, reference) -> bool:
    res = dl.load(path, lazy=False)
    return all(np.array_equal(np.asarray(getattr(res, k)), a) for k, a in reference.items())


def _kill_and_resume(out: Path, kind: str, rng: random.Random, workdir: Path, reference: dict) -> dict:
    """One trial: a run killed (SIGKILL) at a random time ("stepping": after its first checkpoint;
    "finalised": in the window after trajectory.h5 is final and before the checkpoint is removed),
    then resumed from another working directory (or started again when nothing was checkpointed).
    Returns {"resumed", "bitwise", "lost"}."""
    shutil.rmtree(out, ignore_errors=True)
    result = out / "trajectory.h5"
    p = _start(out, **({"DALEMBERT_TEST_PAUSE_AFTER_FINALISE": "30"} if kind == "finalised" else {}))
    deadline = time.time() + 120
    if kind == "finalised":
        while not result.exists() and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 0.2))
    else:
        while not (out / "checkpoint.npz").exists() and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0, 1.5))
    complete_before = result.exists()
    before = result.read_bytes() if complete_before else None
    p.kill()
    p.wait(timeout=60)
    if not (out / "checkpoint.npz").exists() and not complete_before:
        r = _cli(*RUN, "--out", str(out), "--stream", cwd=workdir)       # nothing to resume: again
        resumed = False
    else:
        r = _cli("--resume", str(out.resolve()), "--no-plots", cwd=workdir)
        resumed = True
    assert r.returncode == 0, r.stderr
    assert len(r.stderr.strip().splitlines()) <= 1, r.stderr
    lost = complete_before and (not result.exists() or result.read_bytes() != before)
    if complete_before:
        assert "holds a complete result" in r.stderr, r.stderr
    return {"resumed": resumed, "bitwise": _same(result, reference), "lost": bool(lost),
            "done": not (out / "checkpoint.npz").exists() and (out / "summary.json").exists()}


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_sigkill_while_stepping_and_after_finalising_then_resume(tmp_path, reference):
    """SIGKILL at random times, one of them in the finalisation window: --resume (from another
    directory) ends with the uninterrupted run's result bit for bit, and a complete result is
    never lost."""
    rng = random.Random(39)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for i, kind in enumerate(["stepping", "stepping", "finalised"]):
        t = _kill_and_resume(tmp_path / f"run{i}", kind, rng, elsewhere, reference)
        assert t["bitwise"] and not t["lost"] and t["done"], (kind, t)


def test_stale_checkpoint_beside_a_complete_result_is_reported_not_resumed(tmp_path, reference):
    """A complete trajectory.h5 with the checkpoint of the same run beside it (killed after the
    file was final): --resume keeps the file byte for byte, removes the stale checkpoint, writes
    the missing summary and says so in one line."""
    out = tmp_path / "run"
    p = _start(out, DALEMBERT_TEST_PAUSE_AFTER_FINALISE="30")
    deadline = time.time() + 120
    while not (out / "trajectory.h5").exists() and time.time() < deadline:
        time.sleep(0.01)
    p.kill()
    p.wait(timeout=60)
    assert (out / "checkpoint.npz").exists() and not (out / "summary.json").exists()
    before = (out / "trajectory.h5").read_bytes()
    r = _cli("--resume", str(out), "--no-plots")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "holds a complete result (trajectory.h5" in r.stderr
    assert "stale" in r.stderr and "nothing to resume" in r.stderr
    assert (out / "trajectory.h5").read_bytes() == before and _same(out / "trajectory.h5", reference)
    assert not (out / "checkpoint.npz").exists() and (out / "summary.json").exists()


def test_a_second_writer_is_refused_and_a_killed_holder_does_not_block(tmp_path):
    from dalembert._io import LOCK_NAME, hold_lock
    out = tmp_path / "run"
    out.mkdir()
    lock = hold_lock(out / LOCK_NAME, "test")            # this process is "the first run"
    try:
        t0 = time.time()
        r = _cli(*RUN, "--out", str(out), "--stream")
        assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
        assert f"--out {out} is being written by another dalembert run (pid {os.getpid()}" in r.stderr
        assert time.time() - t0 < 60 and not (out / "trajectory.h5").exists()
        assert not (out / "trajectory.h5.partial").exists()
    finally:
        lock.close()
    # a holder killed with SIGKILL: the OS releases its lock
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from dalembert._io import hold_lock; "
                               f"hold_lock({str(out / LOCK_NAME)!r}, 'x'); print('held', flush=True); time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True, env=_env())
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait(timeout=60)
    r = _cli("gearbox", "--t-final", "1", "--no-plots", "--out", str(out), "--stream")
    assert r.returncode == 0, r.stderr
    assert dl.load(out / "trajectory.h5").t[-1] == pytest.approx(1.0)


def test_a_truncated_partial_file_is_reported_in_seconds(tmp_path):
    out = tmp_path / "run"
    p = _start(out)
    deadline = time.time() + 120
    while not (out / "checkpoint.npz").exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)
    p.kill()
    p.wait(timeout=60)
    part = out / "trajectory.h5.partial"
    os.truncate(part, part.stat().st_size * 9 // 10)
    t0 = time.time()
    r = _cli("--resume", str(out), "--no-plots", timeout=120)
    assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
    assert f"{part} (the streamed nodes of this checkpoint) is damaged, truncated" in r.stderr
    assert "start the run again" in r.stderr and time.time() - t0 < 60


def test_a_checkpoint_cannot_choose_where_a_run_writes(tmp_path):
    from dalembert.engine import checkpoint as ckpt_mod
    mdl = dl.models.get("gearbox")
    kw = dict(h=0.01, t_final=2.0, **mdl.initial_state)
    d = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        _interrupted(lambda: dl.integrate(mdl.system, "nh-rattle", chunk_steps=50, checkpoint=d / "ck.npz",
                                          checkpoint_every=0, stream=d / "r.h5", **kw))
    ck = ckpt_mod.read(d / "ck.npz")
    assert ck["metadata"]["stream"] == "r.h5"                  # relative to the run's directory
    md = dict(ck["metadata"], stream="../evil.h5")
    ckpt_mod.write(d / "ck.npz", metadata=md, state_leaves=ck["state_leaves"], nodes_done=ck["nodes_done"],
                   steps_done=ck["steps_done"], arrays=ck["arrays"])
    with pytest.raises(dl.InputError, match=r"outside the run's directory .*refused") as e:
        dl.resume(d / "ck.npz", system=mdl.system)
    assert "\n" not in str(e.value) and not (tmp_path / "evil.h5.partial").exists()


def _interrupted(fn):
    """Run ``fn`` (a streamed, checkpointed run) with a KeyboardInterrupt at its second chunk."""
    from unittest import mock

    from dalembert.engine import stream
    real, count = stream.StreamNodes.append, {"n": 0}

    def stop(self, arrays):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(self, arrays)
    with mock.patch.object(stream.StreamNodes, "append", stop):
        return fn()


@pytest.mark.parametrize("bad, what", [("dir", "is a directory"), (123, "must be a file path"),
                                       ("under-file", "cannot be written")])
def test_unusable_output_paths_are_refused_before_the_run(bad, what, tmp_path):
    mdl = dl.models.get("gearbox")
    blocker = tmp_path / "file"
    blocker.write_text("")
    path = {"dir": tmp_path, "under-file": blocker / "sub" / "r.h5"}.get(bad, bad)
    for name in ("stream", "checkpoint"):
        t0 = time.time()
        with pytest.raises(dl.InputError, match=what) as e:
            dl.integrate(mdl.system, "nh-rattle", h=0.001, t_final=1e6, **{name: path}, **mdl.initial_state)
        assert "\n" not in str(e.value) and str(e.value).startswith(name) and time.time() - t0 < 30


def test_unwritable_out_directory_is_refused_before_the_run(tmp_path):
    """Read-only --out: chmod where it binds (not as root), else a path under a file."""
    blocker = tmp_path / "file"
    blocker.write_text("")
    outs = [blocker / "sub"]
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        outs.append(ro)
    for out in outs:
        r = _cli(*RUN, "--out", str(out), "--stream")
        assert r.returncode == 1 and r.stderr.strip().count("\n") == 0, r.stderr
        assert f"--out {out} is not writable" in r.stderr


def test_a_failed_rerun_keeps_the_earlier_result(tmp_path, monkeypatch):
    """A rerun into a directory that fails (here: the disk fills at its second chunk) leaves the
    earlier run's files as they were."""
    from dalembert import cli
    from dalembert.engine import stream
    out = tmp_path / "run"
    args = ["run", "gearbox", "--t-final", "20", "--no-plots", "--out", str(out), "--stream"]
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    assert e.value.code == 0
    before = {f: (out / f).read_bytes() for f in ("trajectory.h5", "summary.json")}
    real, n = stream.StreamNodes.append, {"k": 0}

    def full(self, arrays):
        n["k"] += 1
        if n["k"] == 2:
            raise OSError(28, "No space left on device")
        return real(self, arrays)
    monkeypatch.setattr(stream.StreamNodes, "append", full)
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "gearbox", "--t-final", "2000", "--no-plots", "--out", str(out), "--stream"])
    assert e.value.code != 0
    assert {f: (out / f).read_bytes() for f in before} == before


@pytest.mark.full
def test_sigkill_soak(tmp_path, reference):
    """≥ 20 SIGKILLs at random times (16 while stepping, 8 in the finalisation window), each then
    resumed: the table (trials, resumed bit for bit, lost) is printed and, with
    DALEMBERT_FAULT_TABLE=path, written as JSON. Lost must be 0 and every result bit for bit."""
    rng = random.Random(int(os.environ.get("DALEMBERT_FAULT_SEED", "2026")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    table = {}
    for kind, n in (("stepping", 16), ("finalised", 8)):
        rows = [_kill_and_resume(tmp_path / "run", kind, rng, elsewhere, reference) for _ in range(n)]
        table[kind] = {"trials": n, "resumed": sum(r["resumed"] for r in rows),
                       "bit_for_bit": sum(r["bitwise"] for r in rows), "lost": sum(r["lost"] for r in rows)}
    print(json.dumps(table))
    if os.environ.get("DALEMBERT_FAULT_TABLE"):
        Path(os.environ["DALEMBERT_FAULT_TABLE"]).write_text(json.dumps(table, indent=2))
    for kind, row in table.items():
        assert row["lost"] == 0 and row["bit_for_bit"] == row["trials"], (kind, row)


def test_rerunning_the_same_command_continues_its_checkpoint_and_another_is_refused(tmp_path, monkeypatch, capsys):
    """After an interrupt, the same `dalembert run` command continues from the checkpoint (the
    uninterrupted run's result bit for bit, checkpoint removed); another command (here --h)
    into the same --out is refused in one line and leaves the checkpoint and the partial result."""
    from unittest import mock

    from dalembert import cli
    from dalembert.engine import loop, stream
    out = tmp_path / "run"
    args = ["run", "gearbox", "--h", "0.01", "--t-final", "2", "--no-plots", "--out", str(out)]
    monkeypatch.setattr(loop, "CHUNK_SAVES", 50)         # four chunks
    real, count = stream.MemoryNodes.append_records, {"n": 0}

    def stop(self, records, layout):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(self, records, layout)

    def run(argv):
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        return e.value.code, capsys.readouterr()
    with mock.patch.object(stream.MemoryNodes, "append_records", stop):
        code, _ = run(args)
    assert code == 130 and (out / "checkpoint.npz").exists()
    before = {f: (out / f).read_bytes() for f in ("checkpoint.npz", "trajectory.npz")}
    code, io = run(args[:3] + ["0.02"] + args[4:])
    assert code == 1 and io.err.count("\n") == 1 and "holds another run's checkpoint (differs in: --h (0.01" in io.err
    assert {f: (out / f).read_bytes() for f in before} == before
    code, io = run(args)
    assert code == 0 and "from the checkpoint at step 50" in io.out, io.err
    assert not (out / "checkpoint.npz").exists()
    mdl = dl.models.get("gearbox")
    ref = dl.integrate(mdl.system, "nh-rattle", h=0.01, t_final=2.0, **mdl.initial_state)
    res = dl.load(out / "trajectory.npz")
    assert res.metadata["resumed_at_step"] == 50 and np.array_equal(res.q, ref.q) and np.array_equal(res.v, ref.v)

"""`dalembert run MODEL --param ... --reuse-compiled`: the model's parameters are arguments of the
compiled program (dalembert.engine.programs.parametrised), so that a run with other values — in a
new process, through the persistent compilation cache — does not compile the step again; the
results equal the default path's to round-off (not bit for bit: XLA compiles a constant and an
argument differently), a resumed run equals the uninterrupted one bit for bit, and the models
it cannot serve are refused in one line. Speed: benchmarks/param_recompile.py (docs/guide/cli.md)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dalembert as dl
from dalembert import _cache
from dalembert.cli import main
from dalembert.engine import programs

SRC = str(Path(dl.__file__).resolve().parents[1])
RUN = ["run", "chaplygin-sleigh", "--method", "nh-rattle", "--t-final", "20", "--no-plots"]


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _process(args, cache: Path):
    """`dalembert ARGS` in a new process on the compilation cache ``cache``, with JAX's log of
    its compilations (a line per persistent-cache hit) on stderr."""
    env = dict(os.environ, DALEMBERT_CACHE_DIR=str(cache), JAX_LOG_COMPILES="1",
               PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "dalembert.cli", *args], capture_output=True, text=True,
                          env=env, timeout=300)


def _hits(stderr: str) -> set:
    return {line.split("'")[1] for line in stderr.splitlines() if "Persistent compilation cache hit for" in line}


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_a_new_param_value_in_a_new_process_reuses_the_compiled_step(tmp_path):
    """The second process (another m) finds the step's programs in the persistent cache; the
    programs that still bake the parameters in (the initial-state check ``_values``) do not — the
    negative control that a changed value misses. The result is that of the same run in this
    process, bit for bit, and differs from the first value's."""
    cache = tmp_path / "cache"
    first = _process([*RUN, "--param", "m=1.5", "--reuse-compiled", "--out", str(tmp_path / "a")], cache)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "jit_chunk" not in _hits(first.stderr)             # compiled here: the cache was empty
    second = _process([*RUN, "--param", "m=2.5", "--reuse-compiled", "--out", str(tmp_path / "b")], cache)
    assert second.returncode == 0, second.stderr[-2000:]
    hits = _hits(second.stderr)
    assert {"jit_start", "jit_chunk"} <= hits, hits
    assert "Compiling jit(_values)" in second.stderr and "jit__values" not in hits     # baked in: missed
    a, b = dl.load(tmp_path / "a" / "trajectory.npz"), dl.load(tmp_path / "b" / "trajectory.npz")
    assert b.metadata["parameters"]["m"] == 2.5 and b.metadata["parameters_compiled_as_arguments"] is True
    mdl = dl.models.get("chaplygin-sleigh", m=2.5)
    spec = dl.models.spec("chaplygin-sleigh")
    marked = programs.parametrised(spec.system(dict(mdl.params)), spec.system, mdl.params)
    here = dl.integrate(marked, "nh-rattle", h=mdl.default_h, t_final=20.0, **mdl.initial_state)
    for k in ("q", "v", "energy"):
        np.testing.assert_array_equal(getattr(b, k), getattr(here, k), err_msg=k)
    assert np.max(np.abs(a.q - b.q)) > 1e-3                  # another m, another trajectory


def test_one_program_serves_every_parameter_value_in_process():
    """Two marked systems with different values share one compiled program (kept with the
    factory). A run equals the unmarked system's to round-off (the differences of the last bits
    grow slowly along the run), and the two values' runs differ."""
    spec = dl.models.spec("chaplygin-sleigh")
    mdl = dl.models.get("chaplygin-sleigh")
    factory = spec.system
    trajs = []
    for J in (6.0, 7.0):
        p = dict(mdl.params, J=J)
        sys_ = programs.parametrised(factory(p), factory, p)
        trajs.append(dl.integrate(sys_, "nh-rattle", h=0.1, t_final=5.0, **mdl.initial_state))
    ours = [k for k in _cache.for_object(factory) if k[0] == "single-parametrised" and k[1].name == "nh-rattle"]
    assert len(ours) == 1
    plain = factory(dict(mdl.params, J=7.0))
    ref = dl.integrate(plain, "nh-rattle", h=0.1, t_final=5.0, **mdl.initial_state)
    assert any(k[0] == "single" for k in _cache.for_object(plain))      # (the control: its own program)
    for k in ("q", "v", "energy"):
        a, b = getattr(trajs[1], k), getattr(ref, k)
        assert np.max(np.abs(a - b)) <= 1e-13 * np.max(np.abs(b)), k
    assert np.max(np.abs(trajs[0].q - trajs[1].q)) > 1e-6


def test_a_factory_that_reads_its_parameters_is_refused():
    def factory(p):
        k = float(p["k"])                   # a value, not a traced number
        return dl.NonholonomicSystem(mass_matrix=lambda q: k * np.eye(2), constraint_matrix=lambda q: q[None, :],
                                     name="reads-k")
    with pytest.raises(dl.errors.InputError, match="reads-k: its factory needs concrete parameter values"):
        programs.parametrised(factory({"k": 1.0}), factory, {"k": 1.0})
    assert programs.parametrisation(factory({"k": 1.0})) is None


@pytest.mark.parametrize("args, says", [
    (["gearbox"], "gearbox has no traceable factory (models with one: chaplygin-sleigh"),
    (["chaplygin-sleigh", "--method", "dg-gonzalez"], "dg-gonzalez integrates chaplygin-sleigh through a view"),
    (["chaplygin-sleigh", "--method", "reference"], "reference runs outside the compiled engine"),
])
def test_runs_it_cannot_serve_are_refused_in_one_line(args, says, tmp_path, capsys):
    code, _, err = run_cli(["run", *args, "--reuse-compiled", "--no-plots", "--out", str(tmp_path / "o")], capsys)
    assert code == 1 and err.count("\n") == 1 and says in err and "drop --reuse-compiled" in err, err
    assert not (tmp_path / "o" / "trajectory.npz").exists()


def test_a_resumed_run_compiles_the_same_way(tmp_path, monkeypatch, capsys):
    """An interrupted --reuse-compiled run resumed with --resume equals the uninterrupted one bit
    for bit (the checkpoint records the path); a plain run into the same --out is another run."""
    from dalembert.engine import loop, stream
    out = tmp_path / "run"
    args = [*RUN, "--param", "a=0.8", "--reuse-compiled", "--out", str(out)]
    monkeypatch.setattr(loop, "CHUNK_SAVES", 50)
    real, count = stream.MemoryNodes.append_records, {"n": 0}

    def stop(self, records, layout):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(self, records, layout)
    with monkeypatch.context() as m:
        m.setattr(stream.MemoryNodes, "append_records", stop)
        code, _, _ = run_cli(args, capsys)
    assert code == 130 and (out / "checkpoint.npz").exists()
    code, _, err = run_cli([a for a in args if a != "--reuse-compiled"], capsys)
    assert code == 1 and "parameters_compiled_as_arguments" in err, err
    code, _, err = run_cli(["run", "--resume", str(out), "--no-plots"], capsys)
    assert code == 0, err
    whole = tmp_path / "whole"
    code, _, err = run_cli([*args[:-1], str(whole)], capsys)
    assert code == 0, err
    res, ref = dl.load(out / "trajectory.npz"), dl.load(whole / "trajectory.npz")
    assert res.metadata["resumed_at_step"] > 0
    for k in ("q", "v"):
        np.testing.assert_array_equal(getattr(res, k), getattr(ref, k), err_msg=k)

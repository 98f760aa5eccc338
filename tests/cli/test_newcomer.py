"""What a new user meets first: bare ``dalembert``, the compact ``dalembert list`` and its
details, ``--method auto``, and warnings kept in ``summary.json`` and the trajectory's metadata."""
import json

import pytest

import dalembert as dl
from dalembert.methods.kinds import methods_for
from test_cli import run_cli     # (tests/cli is on sys.path: pytest's default import mode)


def test_bare_dalembert_prints_the_short_help_and_exits_0(capsys):
    code, out, err = run_cli([], capsys)
    assert code == 0 and err == ""
    for command in ("list", "run", "convergence", "sweep", "reproduce", "bench"):
        assert f"dalembert {command}" in out
    assert len(out.splitlines()) < 20


def test_list_is_one_line_per_model_and_method(capsys):
    code, out, _ = run_cli(["list"], capsys)
    assert code == 0
    lines = out.splitlines()
    names = [ln.split()[0] for ln in lines if ln.strip()]
    assert set(dl.models.available()) <= set(names) and set(dl.methods.available()) <= set(names)
    # one line each, plus two headers, a blank line, and a two-line hint after a blank line
    assert len(lines) == len(dl.models.available()) + len(dl.methods.available()) + 6
    code, out, _ = run_cli(["list", "--methods"], capsys)
    assert len(out.splitlines()) == len(dl.methods.available()) + 1
    code, out, _ = run_cli(["list", "--models"], capsys)
    assert len(out.splitlines()) == len(dl.models.available()) + 1


@pytest.mark.parametrize("model", ["chaplygin-sleigh", "suslov", "rolling-ball"])
def test_list_model_names_the_methods_that_accept_it(model, capsys):
    code, out, _ = run_cli(["list", "--model", model], capsys)
    assert code == 0
    mdl = dl.models.get(model)
    listed = {ln.split()[0] for ln in out.split("methods that accept it")[1].splitlines()[2:] if ln.strip()}
    assert listed == set(methods_for(mdl.system))
    assert f"--method {mdl.default_method}" in out
    for p in dl.models.spec(model).parameters:
        assert f"{p.name} = {p.default:g}" in out


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_method_auto_is_the_models_default_and_warnings_are_kept(tmp_path, capsys):
    out = tmp_path / "auto"
    code, stdout, err = run_cli(["run", "chaplygin-sleigh", "--method", "auto", "--h", "0.1", "--t-final", "20",
                                 "--no-plots", "--out", str(out)], capsys)
    assert code == 0, err
    assert json.loads((out / "summary.json").read_text())["method"] == dl.models.get("chaplygin-sleigh").default_method
    assert str(out) in stdout and "trajectory.npz" in stdout
    # the two-step GNI in the sleigh's attracting regime: the warning is in the files, not only on stderr
    bad = tmp_path / "gni"
    code, stdout, err = run_cli(["run", "chaplygin-sleigh", "--method", "gni-midpoint", "--param", "J=1", "--init",
                            "v0=-0.5,0,0.3", "--project", "--no-plots", "--out", str(bad)], capsys)
    assert code == 0 and "ParasiticModeWarning" in err
    assert "or a smaller h" in next(ln for ln in stdout.splitlines() if ln.startswith("warning: ParasiticModeWarning"))
    summary = json.loads((bad / "summary.json").read_text())
    assert [w["category"] for w in summary["warnings"]] == ["ParasiticModeWarning"]
    assert summary["parasitic_mode"]["step"] > 0
    assert dl.load(bad / "trajectory.npz").metadata["warnings"] == summary["warnings"]


@pytest.mark.parametrize("args, hint", [
    (["run", "chaplygin-slei"], "did you mean 'chaplygin-sleigh'?"),
    (["run", "chaplygin-sleigh", "--method", "dg-avff"], "did you mean 'dg-avf'?"),
    (["run", "chaplygin-sleigh", "--param", "JJ=2"], "did you mean 'J'?"),
])
def test_a_typo_gets_the_closest_name(args, hint, capsys):
    code, _, err = run_cli(args, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and hint in err


def test_the_reference_method_runs_without_a_checkpoint_and_says_so(tmp_path, capsys):
    out = tmp_path / "ref"
    code, stdout, err = run_cli(["run", "chaplygin-sleigh", "--method", "reference", "--h", "0.1", "--t-final", "2",
                                 "--no-plots", "--out", str(out)], capsys)
    assert code == 0, err
    assert "no checkpoint" in stdout and "outside the compiled engine" in stdout
    assert dl.load(out / "trajectory.npz").metadata["method"] == "reference"
    assert not (out / "checkpoint.npz").exists() and (out / "summary.json").exists()
    # asked for explicitly: refused in one line before any work, naming the option
    for flag in ("--checkpoint", "--stream"):
        code, _, err = run_cli(["run", "chaplygin-sleigh", "--method", "reference", flag, "--out",
                                str(tmp_path / "x")], capsys)
        assert code == 1 and len(err.strip().splitlines()) == 1 and f"error: {flag}: reference runs outside" in err
        assert not (tmp_path / "x").exists()
    # the negative control: a compiled method with --checkpoint is not refused
    code, stdout, err = run_cli(["run", "chaplygin-sleigh", "--method", "nh-rattle", "--h", "0.1", "--t-final", "2",
                                 "--checkpoint", "--no-plots", "--out", str(tmp_path / "y")], capsys)
    assert code == 0 and "no checkpoint" not in stdout, err


def test_sweep_without_dask_names_the_extra_in_one_line(tmp_path, capsys, monkeypatch):
    import sys
    for name in ("dask", "dask.distributed", "distributed", "cloudpickle"):
        monkeypatch.setitem(sys.modules, name, None)          # (import of a None entry: ImportError)
    code, _, err = run_cli(["sweep", "chaplygin-sleigh", "--members", "2", "--out", str(tmp_path / "s")], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "pip install 'dalembert[sweep]'" in err and "not installed" in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("columns", [None, "60"])
def test_piped_output_is_not_wrapped_at_80_columns_unless_COLUMNS_says_so(columns, tmp_path, capsys, monkeypatch):
    from dalembert import cli
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    code, stdout, err = run_cli(["run", "nonholonomic-particle", "--h", "0.05", "--t-final", "2", "--no-plots",
                                 "--out", str(tmp_path / "p")], capsys)
    assert code == 0, err
    speed = [ln for ln in stdout.splitlines() if "speed" in ln]
    # the speed row is about 90 columns: one line piped, wrapped in 60 columns (the negative control)
    assert ("compile" in speed[0] and len(speed[0]) > 80) == (columns is None)
    assert cli._console().width == (cli.PIPE_WIDTH if columns is None else 60)

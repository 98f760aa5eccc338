"""The README's examples, run as a reader would, with their results checked against the model's
exact or reference solution (the sleigh example: its final position), and the ten-line skate of
"Your own system" against the index-1 reference ODE of the same system."""
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

import dalembert as dl
from dalembert.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"
#: README runs longer than this (in model time units) are checked for their invariants only: a
#: reference solution to t = 5·10⁴ of a chaotic system is not a reference.
COMPARE_UP_TO = 1000.0


def readme_runs():
    lines = [ln.split("#")[0].strip() for ln in README.read_text().splitlines()]
    runs = [shlex.split(ln)[1:] for ln in lines if ln.startswith("dalembert run ")]
    assert runs, "the README has no `dalembert run` example"
    return runs


def _without(args, flags_with_value=(), flags=()):
    out, it = [], iter(args)
    for a in it:
        if a in flags_with_value:
            next(it)
        elif a not in flags:
            out.append(a)
    return out


@pytest.mark.parametrize("args", readme_runs(), ids=lambda a: " ".join(a[:3]))
def test_readme_run_example_matches_the_models_solution(args, tmp_path, capsys):
    # what the example writes besides the trajectory (animation, stream, checkpoints) has its own tests
    args = _without(args, ("--out", "--animation-format", "--checkpoint-every"),
                    ("--animate", "--stream", "--checkpoint"))
    with pytest.raises(SystemExit) as exc:
        main(args + ["--no-plots", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert exc.value.code == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["warnings"] == [], "a README example warns: " + err
    traj = dl.load(tmp_path / "trajectory.npz")
    mdl = dl.models.get(summary["model"], **summary["parameters"])
    assert summary["max_constraint_residual"] < 1e-10
    if summary["energy_is_invariant"]:   # bounded, no drift: the second half no worse than the first
        err = np.abs(traj.energy - traj.energy[0]) / abs(traj.energy[0])
        half = len(err) // 2
        assert summary["max_relative_energy_error"] < 2e-2 and err[half:].max() < 1.5 * err[:half].max() + 1e-12
    T = summary["t_final"]
    if T > COMPARE_UP_TO:
        return
    state0 = {k: np.asarray(traj.metadata[k]) for k in mdl.initial_state}   # as projected by --project
    ref, label = mdl.state_solution(np.array([0.0, T]), **state0)
    name = mdl.path_array
    got, want = np.asarray(getattr(traj, name))[-1], np.asarray(ref[name])[-1]
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.max(np.abs(got - want)) < 1e-3 * scale, (
        f"{' '.join(args)}: final {name} {got} against the {label} {want}")


def test_the_sleigh_example_ends_where_the_exact_solution_does(tmp_path, capsys):
    """The README's sleigh (J = 1, v0 = (−0.5, 0, 0.3), projected): the default method follows the
    exact solution to t = 200, where the parasitic mode of gni-midpoint ended at (−4.6, 7.2)."""
    with pytest.raises(SystemExit):
        main(["run", "chaplygin-sleigh", "--param", "J=1", "--init", "v0=-0.5,0,0.3", "--project",
              "--no-plots", "--out", str(tmp_path)])
    traj = dl.load(tmp_path / "trajectory.npz")
    mdl = dl.models.get("chaplygin-sleigh", J=1.0)
    q, _ = mdl.solution(np.array([0.0, traj.t[-1]]), traj.q[0], traj.v[0])
    assert np.allclose(q[-1][:2], [-129.81, -42.40], atol=0.01)           # the exact solution itself
    assert np.max(np.abs(traj.q[-1] - q[-1])) < 1e-4


def _readme_python_block(heading):
    text = README.read_text()
    section = text.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_own_system_example_against_the_reference_ode():
    code = _readme_python_block("## Your own system in ten lines").replace("print(", "_ = (")
    ns = {}
    exec(compile(code, str(README), "exec"), ns)
    traj, skate = ns["traj"], ns["skate"]
    assert traj.max_constraint_residual < 1e-12 and traj.max_relative_energy_error < 1e-3
    T = float(traj.t[-1])
    ref = skate.reference_solution(traj.q[0], traj.v[0], t=np.array([0.0, T]))
    assert np.max(np.abs(traj.q[-1] - np.asarray(ref["q"])[-1])) < 1e-3 * max(1.0, np.max(np.abs(ref["q"][-1])))

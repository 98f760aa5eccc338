"""A model of your own on the command line: `dalembert run FILE.py:FUNCTION` (a function returning
a system, with --init, --h, --t-final, --param) or returning a dl.models.Model (its defaults), and
`dalembert convergence` on it; the result equals the API's run; missing pieces are one-line errors."""
import json
import textwrap

import numpy as np
import pytest

import dalembert as dl
from dalembert.cli import main

SOURCE = textwrap.dedent('''
    import jax.numpy as jnp
    import numpy as np
    import dalembert as dl

    def make_system(k=0.5):
        return dl.NonholonomicSystem(
            mass_matrix=lambda q: jnp.diag(jnp.array([1.0 + 0.1 * q[1] ** 2, 1.0, 0.2])),
            potential=lambda q: k * q[0] ** 2 + 0.3 * q[1] ** 2,
            constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="my-skate",
            coordinate_names=["x", "y", "theta"], units=["m", "m", "rad"])

    def make_model(k=0.5):
        return dl.models.Model(name="my-skate-model", params={"k": k}, system=make_system(k),
                               q0=np.array([2.0, 1.0, 0.3]), v0=np.array([np.cos(0.3), np.sin(0.3), 0.8]),
                               coordinates=("x", "y", "theta"), source="test", default_h=0.05,
                               default_t_final=1.0, default_method="auto")
''')
Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


@pytest.fixture()
def module(tmp_path):
    path = tmp_path / "my_skate.py"
    path.write_text(SOURCE)
    return path


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_run_a_function_returning_a_system_equals_the_api_run(module, tmp_path, capsys):
    out = tmp_path / "run"
    code, _, err = run_cli(["run", f"{module}:make_system", "--param", "k=0.7", "--init", "q0=2,1,0.3",
                            "--init", f"v0={float(V0[0])!r},{float(V0[1])!r},0.8", "--h", "0.05", "--t-final", "1",
                            "--out", str(out)], capsys)
    assert code == 0, err
    traj = dl.load(out / "trajectory.npz")
    ns = {}
    exec(SOURCE, ns)
    api = dl.integrate(ns["make_system"](k=0.7), q0=Q0, v0=V0, h=0.05, t_final=1.0, progress=False)
    assert traj.metadata["method"] == api.metadata["method"] == "nh-rattle-sym"
    assert np.array_equal(traj.q, api.q) and traj.metadata["units"] == ["m", "m", "rad"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["parameters"] == {"k": 0.7}


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_run_and_converge_a_function_returning_a_model(module, tmp_path, capsys):
    code, _, err = run_cli(["run", f"{module}:make_model", "--out", str(tmp_path / "run")], capsys)
    assert code == 0, err
    assert dl.load(tmp_path / "run" / "trajectory.npz").t[-1] == 1.0
    code, out, err = run_cli(["convergence", f"{module}:make_model", "--methods", "nh-rattle-sym",
                              "--h", "0.1,0.05,0.025", "--out", str(tmp_path / "conv")], capsys)
    assert code == 0, err
    res = json.loads((tmp_path / "conv" / "convergence.json").read_text())
    assert abs(res["orders_q"]["nh-rattle-sym"] - 2.0) <= 0.15          # measured 2.00


@pytest.mark.parametrize("args,match", [
    (["--init", "q0=2,1,0.3", "--init", "v0=1,0,0"], "pass --h and --t-final"),
    (["--h", "0.1", "--t-final", "1"], "give its initial state"),
])
def test_missing_pieces_are_one_line_errors(module, args, match, capsys, tmp_path):
    code, _, err = run_cli(["run", f"{module}:make_system", "--out", str(tmp_path / "r")] + args, capsys)
    assert code != 0 and match in err and len(err.strip().splitlines()) == 1


def test_an_unknown_function_or_file_is_a_one_line_error(module, capsys, tmp_path):
    for ref, match in ((f"{module}:nope", "has no function 'nope'"), ("missing_file.py:f", "no file")):
        code, _, err = run_cli(["run", ref, "--out", str(tmp_path / "r")], capsys)
        assert code != 0 and match in err and len(err.strip().splitlines()) == 1


def test_a_forced_model_reports_the_energy_balance_not_the_energy(tmp_path, capsys):
    """A damped skate: summary.json has the balance E − E0 − W (small, order h²) and the work (< 0);
    the printed summary says "energy balance"; the energy is not declared an invariant."""
    path = tmp_path / "damped.py"
    path.write_text(SOURCE + textwrap.dedent('''
        def make_damped():
            return dl.NonholonomicSystem(
                mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 0.5 * q[0] ** 2,
                constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]),
                force=lambda q, v, t: -0.3 * v, name="damped")
    '''))
    code, out, err = run_cli(["run", f"{path}:make_damped", "--init", "q0=2,1,0.3", "--init",
                              f"v0={float(V0[0])!r},{float(V0[1])!r},0.8", "--h", "0.01", "--t-final", "2",
                              "--out", str(tmp_path / "run")], capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["work"] < 0 and summary["max_energy_balance_residual"] < 1e-4     # measured 1.4e-5
    assert not summary["energy_is_invariant"] and "energy balance" in out


def test_stop_when_ends_the_run_at_the_event(tmp_path, capsys):
    """--stop-when 'q[1] > 0.5' on the nonholonomic particle: the run ends where y first rises
    through 0.5, located to round-off (|y − 0.5| ≤ 1e-12 at the last node, which is before
    t_final); a condition that never holds leaves the run whole (negative control); a bad
    expression is a one-line usage error."""
    out = tmp_path / "run"
    code, text, err = run_cli(["run", "nonholonomic-particle", "--method", "nh-rattle-sym", "--h", "0.05",
                               "--t-final", "20", "--stop-when", "q[1] > 0.5", "--out", str(out)], capsys)
    assert code == 0, err
    traj = dl.load(out / "trajectory.npz")
    summary = json.loads((out / "summary.json").read_text())
    assert traj.t[-1] < 20.0 and summary["stopped_at"] == traj.t[-1] and abs(traj.q[-1][1] - 0.5) <= 1e-12
    assert np.all(traj.q[:-1, 1] < 0.5 + 1e-12) and "stopped" in text
    code, _, err = run_cli(["run", "nonholonomic-particle", "--method", "nh-rattle-sym", "--h", "0.05",
                            "--t-final", "2", "--stop-when", "q[1] > 1e9", "--out", str(tmp_path / "r2")], capsys)
    assert code == 0 and dl.load(tmp_path / "r2" / "trajectory.npz").t[-1] == 2.0
    code, _, err = run_cli(["run", "nonholonomic-particle", "--stop-when", "q[1] + w", "--out",
                            str(tmp_path / "r3")], capsys)
    assert code != 0 and "one comparison" in err and len(err.strip().splitlines()) == 1

"""The configuration-constraint residual max |φ(q)| beside the rolling one: in summary.json and
the printed summary of `dalembert run`, in constraint.png and the quick-look figure, and in the
report's constraint checks — for a system with configuration constraints only (the
nonholonomic particle, without them, is the negative control)."""
import json

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert import plots
from dalembert.experiments.base import constraint_checks
from dalembert.models import base as models_base
from test_cli import run_cli     # (tests/cli is on sys.path: pytest's default import mode)

NAME = "skate-unit-test"


def _skate_unit(p):
    """A skate whose heading is the unit vector (c, s), φ = c² + s² − 1 (tests/unit/test_holonomic.py)."""
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2, 0.2])),
        potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]), name=NAME)
    th, u, w = 0.3, 1.0, 0.8
    c, s = np.cos(th), np.sin(th)
    return models_base.Model(NAME, p, system, np.array([2.0, 1.0, c, s]), np.array([u * c, u * s, -w * s, w * c]),
                             ("x", "y", "c", "s"), "test", invariants={"energy": system.energy},
                             default_method="nh-rattle-sym", default_h=0.1, default_t_final=1.0)


@pytest.fixture
def skate_model(monkeypatch):
    monkeypatch.setitem(models_base._SPECS, NAME, models_base.ModelSpec(NAME, "unit-vector skate", (), _skate_unit,
                                                                        "test"))
    return NAME


@pytest.fixture
def figures(monkeypatch):
    """{file name: [(label, y data) of each line of each axis]} of the figures a run saves."""
    seen = {}
    real = plots.save_figure

    def record(fig, path):
        seen[path.name] = [(ln.get_label(), np.asarray(ln.get_ydata())) for ax in fig.get_axes() for ln in ax.lines]
        return real(fig, path)
    monkeypatch.setattr(plots, "save_figure", record)
    return seen


@pytest.mark.parametrize("with_phi", [True, False])
def test_run_shows_the_configuration_residual_only_for_a_system_with_one(with_phi, skate_model, figures, tmp_path,
                                                                          capsys):
    model = skate_model if with_phi else "nonholonomic-particle"
    out = tmp_path / "run"
    code, stdout, err = run_cli(["run", model, "--h", "0.1", "--t-final", "1", "--out", str(out)], capsys)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    lines = figures["constraint.png"]
    if with_phi:
        phi = dl.load(out / "trajectory.npz").holonomic_residual
        assert summary["max_holonomic_residual"] == float(np.max(np.abs(phi))) <= 1e-14
        row = next(ln for ln in stdout.splitlines() if "|φ(q)|" in ln)
        assert f"{summary['max_holonomic_residual']:.3e}" in row and "constraint units" in row
        assert [lab for lab, _ in lines][1] == plots.HOLONOMIC_LABEL and len(lines) == 2
        np.testing.assert_array_equal(lines[1][1], np.maximum(np.abs(phi[:, 0]), 1e-18))
    else:
        assert "max_holonomic_residual" not in summary and "φ" not in stdout and "constraint units" not in stdout
        assert len(lines) == 1 and lines[0][0] != plots.HOLONOMIC_LABEL
    assert "max constraint residual" in stdout and summary["max_constraint_residual"] <= 1e-13


def test_quick_look_and_report_checks_add_the_configuration_residual_only_with_one(skate_model):
    with_phi = dl.models.get(skate_model)
    without = dl.models.get("nonholonomic-particle")
    for mdl, k in ((with_phi, 2), (without, 1)):
        tr = dl.integrate(mdl.system, mdl.default_method, h=0.1, t_final=1.0, progress=False, **mdl.initial_state)
        fig = tr.plot()
        labels = [ln.get_label() for ln in fig.get_axes()[2].lines]
        assert len(labels) == k and (plots.HOLONOMIC_LABEL in labels) == (k == 2)
        checks = constraint_checks("run", tr, 1e-12)
        assert len(checks) == k and all(c.passed for c in checks)
        assert ("|φ(q)|" in checks[-1].claim) == (k == 2)
        if k == 2:    # a bound the run does not meet fails (the check is not vacuous)
            assert not constraint_checks("run", tr, 1e-12, holonomic_bound=-1.0)[1].passed
        plots.plt.close(fig)

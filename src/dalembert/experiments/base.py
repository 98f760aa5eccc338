"""The experiment framework behind ``dalembert reproduce``.

An experiment is a function ``run(quick: bool, out: Path) -> ExperimentResult`` registered under
an id prefixed by its paper (``ferraro2015-``, ``celledoni2019-``, ...). It returns its data, the
figures it drew, and its checks: each a claim, the expected value or range, the measured value,
pass/fail and the source of the expectation. ``quick`` versions (shorter times, fewer
trajectories) are what CI runs; the full versions are what the report shows.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import plots
from ..errors import UnknownNameError, did_you_mean
from ..monitors import record_warning


@dataclass
class Check:
    """claim, expected (text), measured (text), passed, source (paper / target id)."""

    claim: str
    expected: str
    measured: str
    passed: bool
    source: str = ""

    def as_dict(self):
        return {"claim": self.claim, "expected": self.expected, "measured": self.measured,
                "passed": bool(self.passed), "source": self.source}


def check_range(claim, value, lo, hi, source="", fmt="{:.3f}") -> Check:
    """A Check that lo ≤ value ≤ hi."""
    return Check(claim, f"in [{fmt.format(lo)}, {fmt.format(hi)}]", fmt.format(value),
                 bool(lo <= value <= hi), source)


def check_below(claim, value, bound, source="", fmt="{:.2e}") -> Check:
    """A Check that value ≤ bound."""
    return Check(claim, f"≤ {fmt.format(bound)}", fmt.format(value), bool(value <= bound), source)


def check_above(claim, value, bound, source="", fmt="{:.2e}") -> Check:
    """A Check that value > bound."""
    return Check(claim, f"> {fmt.format(bound)}", fmt.format(value), bool(value > bound), source)


def constraint_checks(label, traj, bound, source="", holonomic_bound=None) -> list:
    """The checks of a trajectory's constraint residuals, for the report: max |μ(q) v − ν(q)| ≤
    ``bound`` and, for a system with configuration constraints (``traj.holonomic_residual``),
    max |φ(q)| ≤ ``holonomic_bound`` (default ``bound``) beside it, in the constraint's own units.
    Without configuration constraints: the rolling check only."""
    checks = [check_below(f"{label}: max constraint residual |μ(q) v − ν(q)|", traj.max_constraint_residual,
                          bound, source)]
    if "holonomic_residual" in traj.fields():
        checks.append(check_below(f"{label}: max configuration-constraint residual |φ(q)| (constraint units)",
                                  traj.max_holonomic_residual, bound if holonomic_bound is None else holonomic_bound,
                                  source))
    return checks


@dataclass
class ExperimentResult:
    id: str
    title: str
    paper: str
    description: str
    checks: list = field(default_factory=list)
    figures: list = field(default_factory=list)   # paths of PNG files
    data: dict = field(default_factory=dict)       # JSON-serialisable
    notes: str = ""
    quick: bool = False
    wall_time_s: float = 0.0
    #: the warnings issued while it ran, each once: [{"category": ..., "message": ...}]
    warnings: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


@dataclass(frozen=True)
class Experiment:
    id: str
    title: str
    paper: str
    description: str
    func: Callable  # (quick, out_dir) -> (checks, figures, data, notes)
    #: False when even the quick version outlasts the CI budget (tests/experiments/test_reproduce.py
    #: then runs it in the full suite only), e.g. a model whose first compile takes minutes
    quick_in_ci: bool = True


_REGISTRY: dict[str, Experiment] = {}


def experiment(id: str, title: str, paper: str, description: str = "", quick_in_ci: bool = True):
    """Decorator registering ``func(quick: bool, out: Path) -> (checks, figures, data, notes)``;
    ``quick_in_ci``: see :class:`Experiment`."""
    def deco(func):
        _REGISTRY[id] = Experiment(id, title, paper, description or (func.__doc__ or "").strip(), func,
                                   quick_in_ci)
        return func
    return deco


def available() -> dict:
    return dict(_REGISTRY)


def get(id: str) -> Experiment:
    try:
        return _REGISTRY[id]
    except KeyError:
        raise UnknownNameError(f"unknown experiment {id!r}{did_you_mean(id, _REGISTRY)}; choose from: "
                               f"{', '.join(sorted(_REGISTRY))}") from None


def run(exp: Experiment, quick: bool = False, out: Path = Path("reports/latest")) -> ExperimentResult:
    """Run one experiment; figures go to ``out/figures/<id>/``."""
    fig_dir = Path(out) / "figures" / exp.id
    fig_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught, plots.dimensionless_labels():
        warnings.simplefilter("always")
        checks, figures, data, notes = exp.func(quick, fig_dir)
    issued = {}            # each distinct warning once, in the order issued (shown in the report)
    for w in caught:
        record_warning(issued, w.category, w.message)
    return ExperimentResult(exp.id, exp.title, exp.paper, exp.description, list(checks),
                            list(figures), data, notes, quick, time.perf_counter() - t0,
                            issued.get("warnings", []))

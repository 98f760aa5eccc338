"""Experiments of the papers, run by ``dalembert reproduce``; see :mod:`.base`."""
from .base import Check, Experiment, ExperimentResult, available, experiment, get, run
from . import ferraro2015  # noqa: F401  (registers its experiments)

__all__ = ["Check", "Experiment", "ExperimentResult", "available", "experiment", "get", "run"]

"""Experiments of the papers, run by ``dalembert reproduce``; see :mod:`.base`."""
from .base import Check, Experiment, ExperimentResult, available, experiment, get, run
from . import ferraro2015  # noqa: F401  (registers its experiments)
from . import jimenez_scheurle  # noqa: F401,E402  (Suslov problem, Jiménez–Scheurle 2015)

__all__ = ["Check", "Experiment", "ExperimentResult", "available", "experiment", "get", "run"]
from . import ferraro2008  # noqa: F401,E402  (momentum and energy preserving GNI, Ferraro et al. 2008)
from . import celledoni2019  # noqa: F401,E402  (energy-preserving DG integrators, Celledoni et al. 2019)
from . import meijaard2007  # noqa: F401,E402  (the Whipple bicycle benchmark, Meijaard et al. 2007; Basu-Mandal et al. 2007)
from . import eulers_disk  # noqa: F401,E402  (Euler's disk: relative equilibrium, Moffatt 2000)
from . import iftomm_bicycle  # noqa: F401,E402  (IFToMM uncontrolled bicycle: manoeuvres M1–M3 and the energy-efficiency test)
from . import rattleback  # noqa: F401,E402  (the rattleback over long times: energy, reversals, friction)

"""dalembert — structure-preserving integrators for nonholonomic mechanical systems.

>>> import dalembert as dl
>>> sys = dl.NonholonomicSystem(mass_matrix=..., potential=..., constraint_matrix=...)
>>> traj = dl.integrate(sys, "nh-rattle", q0=q0, v0=v0, h=0.01, t_final=10.0)

Importing dalembert enables float64 in JAX (``jax_enable_x64``) and changes nothing else in the
process. ``dl.configure()`` opts in to the process-wide XLA and CPU-device settings that make
dalembert fastest (the command line calls it).
"""
from . import _terminate
if _terminate.is_cli_process():   # the `dalembert` command: a SIGTERM while importing says so
    _terminate.install()
from ._version import __version__
from . import config  # noqa: F401  (enables float64 before anything is traced)
from . import errors, lie, linalg, methods
from ._cache import clear_caches
from .declarations import Claim, Feature, Invariant, NodeArray, Role
from .errors import (ConstraintViolationError, ConvergenceError, DalembertError, InputError,
                     UnknownNameError)
from .systems import (AlmostPoissonSystem, EulerPoincareSuslovSystem, HeavyBodySystem, LeftInvariantSystem,
                      NonholonomicSystem, ReducedSystem, SystemKind, almost_poisson)
from .results import Ensemble, Trajectory, load
from .engine import configure, ensemble, integrate, resume, solve, sweep
from .engine.interrupts import RunInterrupted
from . import models
from .convergence import convergence
from .sympy_models import from_sympy
from .methods.kinds import recommend

__all__ = [
    "NonholonomicSystem", "AlmostPoissonSystem", "almost_poisson", "EulerPoincareSuslovSystem",
    "LeftInvariantSystem", "HeavyBodySystem", "ReducedSystem", "SystemKind",
    "integrate", "recommend", "resume", "solve", "sweep", "ensemble", "Ensemble", "RunInterrupted", "configure", "clear_caches",
    "Trajectory", "load", "methods", "models", "convergence", "from_sympy", "lie", "linalg", "errors",
    "DalembertError", "InputError", "ConstraintViolationError", "ConvergenceError",
    "UnknownNameError", "Invariant", "Claim", "Feature", "Role", "NodeArray", "__version__",
]

"""dalembert — structure-preserving integrators for nonholonomic mechanical systems.

>>> import dalembert as dl
>>> sys = dl.NonholonomicSystem(mass_matrix=..., potential=..., constraint_matrix=...)
>>> traj = dl.integrate(sys, "nh-rattle", q0=q0, v0=v0, h=0.01, t_final=10.0)

float64 is enabled for JAX on import.
"""
__version__ = "0.1.0"

from . import _config  # noqa: F401  (enables float64 before anything is traced)
from . import errors, linalg, methods
from .errors import (ConstraintViolationError, ConvergenceError, DalembertError, InputError,
                     UnknownNameError)
from .systems import NonholonomicSystem
from .systems import AlmostPoissonSystem, almost_poisson
from .trajectory import Trajectory, load
from .engine import Ensemble, ensemble, integrate
from . import models  # noqa: E402
from .convergence import convergence  # noqa: E402

__all__ = [
    "NonholonomicSystem", "AlmostPoissonSystem", "almost_poisson", "integrate", "Trajectory", "load", "methods", "models", "convergence",
    "DalembertError", "InputError", "ConstraintViolationError", "ConvergenceError",
    "UnknownNameError", "errors", "linalg", "__version__",
]
from . import lie  # noqa: E402
from .systems import EulerPoincareSuslovSystem, LeftInvariantSystem  # noqa: E402
__all__ += ["EulerPoincareSuslovSystem", "LeftInvariantSystem", "lie"]
__all__ += ["ensemble", "Ensemble"]
from .systems import ReducedSystem  # noqa: E402
__all__ += ["ReducedSystem"]

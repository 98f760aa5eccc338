"""Continuous models: the system kinds that methods discretise (:mod:`dalembert.systems.kind`)."""
from .kind import NoReferenceError, SystemKind, register_view, views
from .nonholonomic import NonholonomicSystem
from .almost_poisson import AlmostPoissonSystem
from .reduction import almost_poisson
from .euler_poincare_suslov import EulerPoincareSuslovSystem, HeavyBodySystem, LeftInvariantSystem
from .lie_nonholonomic import LieNonholonomicSystem
from .reduced import ReducedSystem

__all__ = ["SystemKind", "NoReferenceError", "register_view", "views", "NonholonomicSystem",
           "AlmostPoissonSystem", "almost_poisson", "EulerPoincareSuslovSystem",
           "LeftInvariantSystem", "HeavyBodySystem", "LieNonholonomicSystem", "ReducedSystem"]

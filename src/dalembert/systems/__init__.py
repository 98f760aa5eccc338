"""Continuous models: the systems that methods discretise."""
from .nonholonomic import NonholonomicSystem
from .almost_poisson import AlmostPoissonSystem, almost_poisson

__all__ = ["NonholonomicSystem", "AlmostPoissonSystem", "almost_poisson"]
from .euler_poincare_suslov import EulerPoincareSuslovSystem, LeftInvariantSystem  # noqa: E402
__all__ += ["EulerPoincareSuslovSystem", "LeftInvariantSystem"]
from .reduced import ReducedSystem  # noqa: E402
__all__ += ["ReducedSystem"]

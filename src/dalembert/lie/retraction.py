"""Retractions τ: so(3) → SO(3) as objects that methods take as a parameter.

A :class:`Retraction` bundles τ, its inverse and its right-trivialised tangent dτ with inverse
(conventions in :mod:`dalembert.lie.so3`): ``d/ds τ(w + s z)|₀ = hat(dτ_w z) τ(w)``. The
left-trivialised tangent is dτ_{−w} (``dtau_left``). Source: Ferraro et al. 2015, Appendix
(retraction maps); Jiménez–Scheurle 2015 §4.1 and §5.1.

``cayley`` is exact-in-group, rational and singularity-free in its derivatives (the choice of the
papers); ``exponential`` is the Riemannian exponential (dexp⁻¹ is singular at |w| = 2π).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import UnknownNameError
from . import so3


@dataclass(frozen=True)
class Retraction:
    """A retraction on SO(3).

    name : ``"cayley"`` or ``"exponential"``.
    tau : w (..., 3) -> R (..., 3, 3).
    inverse : R (..., 3, 3) -> w (..., 3), defined near the identity.
    dtau : w -> (..., 3, 3), the right-trivialised tangent.
    dtau_inv : w -> (..., 3, 3), its inverse.
    """

    name: str
    tau: Callable
    inverse: Callable
    dtau: Callable
    dtau_inv: Callable

    def __call__(self, w):
        return self.tau(w)

    def dtau_left(self, w):
        """Left-trivialised tangent, ``τ(w)⁻¹ d/ds τ(w + s z)|₀ = hat(dτ^L_w z)``; equals dτ_{−w}."""
        return self.dtau(-w)

    def dtau_left_inv(self, w):
        """Inverse of :meth:`dtau_left`; equals dτ⁻¹_{−w}."""
        return self.dtau_inv(-w)

    def __repr__(self):
        return f"<retraction {self.name}>"


cayley = Retraction("cayley", so3.cayley, so3.cayley_inv, so3.dcay, so3.dcay_inv)
exponential = Retraction("exponential", so3.exp, so3.log, so3.dexp, so3.dexp_inv)

_BY_NAME = {"cayley": cayley, "cay": cayley, "exponential": exponential, "exp": exponential}


def get_retraction(name_or_retraction) -> Retraction:
    """``"cayley"``/``"cay"`` or ``"exponential"``/``"exp"`` (a Retraction is returned as is)."""
    if isinstance(name_or_retraction, Retraction):
        return name_or_retraction
    try:
        return _BY_NAME[name_or_retraction]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown retraction {name_or_retraction!r}; choose from: cayley, exponential") from None

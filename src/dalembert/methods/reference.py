"""Reference solutions: the index-1 Lagrange–d'Alembert ODE integrated with SciPy's DOP853.

State y = (q, v) with q̇ = v, v̇ = a(q, v) from :meth:`NonholonomicSystem.acceleration`
(``G a = f + μᵀλ``, ``μ a + μ̇ v = ν̇``; Ferraro–Jiménez–Martín de Diego 2015 (2) and the ODE (17) of
its §5, with the affine term ν̇ added: docs/theory/ferraro2015.md),
at rtol = atol = 1e-13 by default (DESIGN.md, "Reference solutions"). The right-hand side is
compiled once with ``jax.jit``. The velocity constraint is not re-projected: its drift is
reported in the trajectory's ``constraint_residual`` (typically ≲ 1e-12).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np

from ..systems.index1_ode import _rhs, reference_solution  # noqa: F401  (re-exported)
from ..declarations import Feature
from .base import Method, Traits


@dataclass(frozen=True, eq=False)
class Reference(Method):
    """Each system kind's reference solution (for a NonholonomicSystem: the index-1 ODE with
    DOP853 at rtol = atol = 1e-13); the ground truth for tests and experiments. Not compiled:
    the engine calls :meth:`solve`."""

    def options(self) -> dict:
        """The options of :meth:`solve`: ``{"rtol": 1e-13, "atol": 1e-13}``."""
        params = inspect.signature(self.solve).parameters.values()
        return {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}

    def solve(self, system, *state, rtol: float = 1e-13, atol: float = 1e-13):
        """``(arrays, info)``: the named node arrays at the times ``t`` (``solve(system, *state0,
        t)``), from ``system.reference_solution`` (the system-kind protocol), and the solver's
        settings.

        Raises NoReferenceError (an InputError) for a kind without one.
        """
        *x0s, t = state
        out = system.reference_solution(*x0s, t=t, rtol=rtol, atol=atol)
        return {k: np.asarray(v) for k, v in out.items()}, {"rtol": rtol, "atol": atol,
                                                            "ode_method": "DOP853"}

METHODS = (
    Reference(
        name="reference",
        traits=Traits(
            order=8, symmetric=False, implicit=False,
            preserves=(),
            node_velocity="v(t_k) of the index-1 ODE (constraint drift at the 1e-13 level)",
            source="index-1 Lagrange–d'Alembert ODE, SciPy DOP853, rtol = atol = 1e-13",
            family="reference", integrates=("nonholonomic", "reduced", "lie-nonholonomic"),
            accepts={Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC, Feature.ATTITUDE_POTENTIAL,
                     Feature.RIGHT_TRIVIALISED, Feature.GROUP_NOT_SO3, Feature.HOLONOMIC_CONSTRAINTS,
                     Feature.FORCES, Feature.CONTROLS, Feature.EXPLICIT_TIME}),
        description="Ground truth: the kind's index-1 ODE integrated by DOP853 at rtol = atol = 1e-13.",
        compiled=False),
)

"""The typed vocabulary in which methods and system kinds declare themselves.

* :class:`Invariant` — what a method can preserve exactly (to round-off): the node constraint, a
  discrete constraint, the energy, group membership, a momentum map… Each member says whether it
  can be checked from a trajectory's node arrays (``checkable``) and how (``how``).
* :class:`Claim` — one entry of ``Traits.preserves``: an invariant, the formula and its source
  for people, and when the claim holds only under a condition, that condition.
* :class:`Feature` — what a system has beyond the plain kind: affine constraints, a
  configuration-dependent metric, configuration constraints, forces, controls, explicit time…
  A system lists its features (``system.features()``); a method lists the features it accepts
  (``Traits.accepts``); :func:`dalembert.methods.resolve` refuses a mismatch before anything is
  traced, naming the feature and the methods that accept the system.
* :class:`Role` and :class:`NodeArray` — the node arrays a system kind reports, with their role
  (configuration, velocity, momentum, group element, multiplier…) and units, read by convergence,
  verification, plots and the command line instead of array names.

This module imports nothing else of dalembert: systems and methods both build on it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable


class Invariant(enum.Enum):
    """A structure a method may preserve exactly (to round-off).

    Each member has ``label`` (short name), ``checkable`` (True: it can be measured from a
    trajectory's node arrays; the conformance suite measures it) and ``how`` (what is measured,
    or why it cannot be read from the nodes).
    """

    NODE_CONSTRAINT = ("node constraint", True,
                       "max |μ(q_k)v_k − ν(q_k)| over the nodes (the kind's constraint residual), "
                       "relative to max(1, max |v_k|)")
    HOLONOMIC_CONSTRAINT = ("configuration constraint", True,
                            "max |φ(q_k)| over the nodes of a system with configuration constraints, relative "
                            "to max(1, max |q_k|); not applicable without them")
    DISCRETE_CONSTRAINT = ("discrete constraint", True,
                           "max |ω_d(q_k, q_{k+1}, h)| over consecutive nodes of a run saved at every "
                           "step, ω_d the claim's discrete constraint, relative to max(1, max |v_k|); "
                           "a claim without a measurable ω_d (group increments) is proved, not checked")
    ENERGY = ("energy", True,
              "max |E_k − E_0| / |E_0| of the node energy (the kind's diagnostics)")
    ENERGY_BALANCE = ("energy balance", True,
                      "max |E_k − E_0 − W_k| / |E_0|, W_k the discrete work of the non-conservative forces")
    GROUP_MEMBERSHIP = ("group membership", True,
                        "max |I − R_kᵀR_k|_F over the nodes (the kind's orthogonality defect)")
    MOMENTUM_MAP = ("momentum map", False,
                    "the nonholonomic momentum equation of a horizontal symmetry: needs the symmetry's "
                    "generator, which no system declares; proved, not checked")
    REGULAR_CHART = ("regular chart", False,
                     "a property of the step (the chart is re-centred before its singularity), not a "
                     "quantity at the nodes; proved, not checked")

    def __init__(self, label: str, checkable: bool, how: str):
        self.label = label
        self.checkable = checkable
        self.how = how

    def __str__(self):
        return self.label


@dataclass(frozen=True)
class Claim:
    """One thing a method preserves: an entry of ``Traits.preserves``.

    invariant : the :class:`Invariant`.
    statement : the formula and its source, for people (shown by ``dalembert list`` and the docs).
    condition : "" when the claim holds for every system the method takes; else the condition in
        words (e.g. "constant covectors A").
    holds_for : with a condition, ``system -> bool | None``: whether the condition holds for a
        system (None: cannot tell); the conformance suite checks the claim only where it holds.
    node_quantity : False when the preserved quantity is not the one the node arrays report (e.g. a
        momentum at the step's endpoint where the nodes report the averaged one): proved, not
        checked from the nodes.
    discrete_constraint : for ``DISCRETE_CONSTRAINT``: ``system -> ω_d(q0, q1, h)`` (m,), the
        measured form; None when it is not a function of consecutive node arrays q.
    options : ``((name, value), …)``: the build options under which the claim holds (empty: any).
    """

    invariant: Invariant
    statement: str
    condition: str = ""
    holds_for: Callable | None = None
    node_quantity: bool = True
    discrete_constraint: Callable | None = None
    options: tuple = ()

    def holds_with(self, options: dict) -> bool:
        """Whether the claim holds for a run with these build options (defaults filled in)."""
        return all(options.get(k) == v for k, v in self.options)

    def __str__(self):
        return self.statement

    @property
    def checkable(self) -> bool:
        """Whether the claim can be measured from node arrays (it may still need a system for which
        its condition holds)."""
        if not (self.invariant.checkable and self.node_quantity):
            return False
        if self.invariant is Invariant.DISCRETE_CONSTRAINT:
            return self.discrete_constraint is not None
        return True

    def as_dict(self) -> dict:
        return {"invariant": self.invariant.label, "statement": self.statement,
                "condition": self.condition, "checkable": self.checkable}


class Feature(enum.Enum):
    """A feature of a system beyond its plain kind, which a method must accept to integrate it.

    ``label`` names it in messages; ``doc`` says what it is.
    """

    AFFINE_CONSTRAINTS = ("affine constraints", "μ(q)v = ν(q) with ν ≠ 0 (a moving support)")
    CONFIGURATION_METRIC = ("configuration-dependent metric",
                            "a kinetic metric that depends on the configuration (q, or x and R)")
    ATTITUDE_POTENTIAL = ("attitude-dependent potential", "a potential that depends on R (shape × group)")
    RIGHT_TRIVIALISED = ("right trivialisation", "group velocities in the spatial (right-trivialised) frame")
    GROUP_NOT_SO3 = ("group other than SO(3)", "a matrix Lie group other than SO(3)")
    NON_QUADRATIC_LAGRANGIAN = ("non-quadratic reduced Lagrangian", "l(ω) other than ½ωᵀ𝕀ω")
    NON_SYMMETRIC_INERTIA = ("non-symmetric inertia form", "an EPS system declared with symmetric=False")
    HOLONOMIC_CONSTRAINTS = ("configuration constraints", "φ(q) = 0 beside the velocity constraints")
    FORCES = ("non-conservative forces", "a generalized force f(q, v, t)")
    CONTROLS = ("controls", "a force that takes a control signal u")
    EXPLICIT_TIME = ("explicit time", "a potential V(q, t) or constraint right-hand side ν(q, t) that depends "
                                      "on t (a force's time is part of FORCES)")

    def __init__(self, label: str, doc: str):
        self.label = label
        self.doc = doc

    def __str__(self):
        return self.label


class Role(enum.Enum):
    """The role of a node array of a system kind."""

    CONFIGURATION = "configuration"
    VELOCITY = "velocity"
    MOMENTUM = "momentum"
    GROUP_ELEMENT = "group element"
    GROUP_VELOCITY = "group velocity"
    MULTIPLIER = "multiplier"
    STATE = "state"

    def __str__(self):
        return self.value


@dataclass(frozen=True)
class NodeArray:
    """One node array a system kind reports: ``name`` (the Trajectory attribute), ``role``,
    ``unit`` (words; "system units" where the user's coordinates decide), ``state`` (the keyword of
    the initial state that gives it, e.g. "q0"; "" when it is not part of the initial state) and
    ``symbol`` (for plots)."""

    name: str
    role: Role
    unit: str = "system units"
    state: str = ""
    symbol: str = ""

"""Left-trivialised torques on the Lie-group kinds: the mixin that gives
``EulerPoincareSuslovSystem`` and ``LieNonholonomicSystem`` (and any kind on a group with node
arrays (g, ξ)) ``force=τ(g, ξ, t[, u])`` with the conventions of ``NonholonomicSystem(force=...)``:
controls, the engine's clock, the initial-state check and the work (:mod:`dalembert.engine.forcing`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, linalg
from ..declarations import Feature
from ..errors import InputError
from .nonholonomic import NonholonomicSystem, _depends_on_input, _no_controls, _positional_count


class ControlledForce:
    """Mixin of the kinds whose force may take a control u (c,) as its last argument: the control
    signal with the conventions of ``NonholonomicSystem(force=f(q, v, t, u), controls=...)`` (one
    mechanism for every kind): an (N, c) array, one row per step, read at the engine's clock's
    step index (held constant over the step), or a callable t -> (c,); :meth:`with_controls` gives
    the same system with other controls (``dl.integrate``/``dl.solve(..., controls=U)``; a traced U
    is kept traced, so ``jax.grad`` w.r.t. U works).

    A kind calls :meth:`_init_controls` in its constructor, evaluates its force with
    :meth:`control` as the last argument when :attr:`controlled` is True, and adds
    :meth:`control_features` to its features.
    """

    #: how a force that takes a control is written (in the error messages)
    controlled_signature = "force(g, ξ, t, u)"

    def _init_controls(self, takes_u: bool, controls, name: str):
        """Record whether the force takes u and the signal (None: refused when the force is
        evaluated); InputError for controls given to a force that takes none."""
        self._force_takes_u = bool(takes_u)
        if controls is not None and not self._force_takes_u:
            raise InputError(f"{name}: controls= is given but force does not take a control: write "
                             f"{self.controlled_signature}")
        self._controls = _no_controls if self._force_takes_u and controls is None else controls
        self._control_grid = None

    @property
    def controlled(self) -> bool:
        """True if the force takes a control u."""
        return getattr(self, "_force_takes_u", False)

    def control_features(self) -> set:
        """{CONTROLS} for a force that takes a control, else empty."""
        return {Feature.CONTROLS} if self.controlled else set()

    def with_controls(self, controls, *, h=None, t0: float = 0.0):
        """The same system with the control signal ``controls`` ((N, c) array or callable t -> (c,)),
        as :meth:`NonholonomicSystem.with_controls <dalembert.NonholonomicSystem.with_controls>`
        (InputError for a force that takes no control, an array that is not 2-D or not finite)."""
        if not self.controlled:
            raise InputError(f"{self.name}: controls are given but its force takes none; write "
                             f"{self.controlled_signature}")
        return NonholonomicSystem.with_controls(self, controls, h=h, t0=t0)

    def step_index(self, t):
        """The control array's step at time t (:meth:`NonholonomicSystem.step_index
        <dalembert.NonholonomicSystem.step_index>`)."""
        return NonholonomicSystem.step_index(self, t)

    def control(self, dt=0.0):
        """u (c,) at the clock's time + dt (the current step's row of an array)."""
        return NonholonomicSystem.control(self, dt)


class LeftTrivialisedTorque(ControlledForce):
    """Mixin of the Lie-group kinds for a non-conservative **left-trivialised torque**
    τ(g, ξ, t) ∈ 𝔤* (body frame; N·m on SO(3)), or τ(g, ξ, t, u) with a control u (c,), with the
    conventions of ``NonholonomicSystem(force=...)``: the time is the engine's clock
    (:mod:`dalembert.clock`; runs start at ``t0``), a control array holds one row per step,
    ``with_controls`` gives the same system with other controls, ``traj.work`` is the work
    ∫τ·ξ dt (:mod:`dalembert.engine.forcing`, with the node arrays :attr:`work_arrays` and the
    configuration rate ġ = g ξ̂ of :meth:`configuration_rate`).

    A kind calls :meth:`_init_torque` in its constructor and its :meth:`_check_torque` in its
    initial-state check, and adds :meth:`torque_features` to its features.
    """

    #: the node arrays (configuration, velocity) whose power τ·ξ the work integrates
    work_arrays = ("R", "omega")
    explicit_time = False
    has_supply = False

    def _init_torque(self, force, controls, name: str):
        if force is not None and not callable(force):
            raise InputError(f"{name}: force must be a callable force(g, ξ, t) or force(g, ξ, t, u) (a "
                             f"left-trivialised torque); got {type(force).__name__}")
        self._force = force
        self._init_controls(force is not None and _positional_count(force) >= 4, controls, name)

    @property
    def has_force(self) -> bool:
        """True if the system has a torque (``force=``)."""
        return getattr(self, "_force", None) is not None

    @property
    def timed(self) -> bool:
        """True with a torque: the system is stepped on the engine's clock and its work accounted."""
        return self.has_force

    def torque_features(self) -> set:
        """{FORCES (, CONTROLS)} with a torque, else empty."""
        if not self.has_force:
            return set()
        return {Feature.FORCES} | self.control_features()

    def force(self, g, xi, dt=0.0):
        """The torque τ(g, ξ, t) ∈ 𝔤* (body frame) at the clock's time + dt, shape (dim 𝔤,);
        zeros without one."""
        if not self.has_force:
            return jnp.zeros_like(xi)
        t = clock.now()[0] + dt
        if self._force_takes_u:
            return jnp.asarray(self._force(g, xi, t, self.control(dt)), jnp.float64)
        return jnp.asarray(self._force(g, xi, t), jnp.float64)

    def force_depends_on_velocity(self, g, xi) -> bool:
        """Whether the torque depends on ξ (decided by tracing at (g, ξ)); False without one."""
        if not self.has_force:
            return False
        return _depends_on_input(lambda w: self.force(jnp.asarray(g), w), jnp.asarray(xi, jnp.float64))

    def configuration_rate(self, g, xi):
        """ġ = g ξ̂ (left trivialisation), shape of g: the direction in which the work's Hermite
        rule differentiates the power along the motion."""
        return self.reconstruction(g, xi)

    def _check_torque(self, g, xi):
        """InputError (one line) unless τ(g0, ξ0, t0) (with its control) is a finite (dim 𝔤,) array."""
        if not self.has_force:
            return
        args = "g0, ξ0, t" + (", u" if self._force_takes_u else "")
        with jax.ensure_compile_time_eval():
            try:
                out = self.force(jnp.asarray(g), jnp.asarray(xi))
            except (TypeError, ValueError, IndexError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise InputError(f"{self.name}: force({args}) fails ({first}); it must return a torque of shape "
                                 f"({np.size(xi)},)") from None
        if jnp.shape(out) != (np.size(xi),):
            raise InputError(f"{self.name}: force({args}) returned shape {jnp.shape(out)}; expected "
                             f"({np.size(xi)},), a left-trivialised (body-frame) torque")
        if linalg.traced(out):
            return
        if not np.all(np.isfinite(np.asarray(out))):
            raise InputError(f"{self.name}: force({args}) is not finite "
                             f"({np.array2string(np.asarray(out), precision=3)}); check the torque (and the "
                             f"controls) at the initial state")

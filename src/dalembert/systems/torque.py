"""Forces with controls on every system kind, and the left-trivialised torques of the Lie-group kinds.

:class:`ControlledForce` is the one control mechanism of the kinds whose force may take a control u
(``NonholonomicSystem``, ``AlmostPoissonSystem``, ``ReducedSystem`` and the Lie-group kinds);
:class:`StateForce` adds the force f(configuration, velocity, t[, u]) of the kinds whose node is a
(configuration, velocity) pair (``NonholonomicSystem``: (q, v); the Lie-group kinds: (g, ξ));
:class:`LeftTrivialisedTorque` gives ``EulerPoincareSuslovSystem`` and ``LieNonholonomicSystem`` (and
any kind on a group with node arrays (g, ξ)) ``force=τ(g, ξ, t[, u])`` with the conventions of
``NonholonomicSystem(force=...)``: controls, the engine's clock, the initial-state check and the
work (:mod:`dalembert.engine.forcing`).
"""
from __future__ import annotations

import copy
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from .. import clock, linalg
from ..declarations import Feature
from ..errors import InputError
from .kind import _depends_on_input, _positional_count, refuse_complex, traced_once


def _no_controls(t):
    """The placeholder of a controlled force without controls: refused when evaluated."""
    raise InputError("force(q, v, t, u) takes a control but none is given: pass controls=U (an (N, c) "
                     "array, one row per step, or a callable t -> (c,)) to the system, dl.integrate or dl.solve")


class RuntimeControls:
    """The control array of a system whose (N, c) array is an argument of the engine's compiled
    programs (:meth:`ControlledForce.runtime_controlled`): read, when the force is traced, from
    :func:`dalembert.clock.controls` (the program's argument). ``shape``: (N, c)."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def value(self):
        u = clock.controls()
        if u is None or tuple(jnp.shape(u)) != self.shape:
            raise InputError(f"controls: this system's {self.shape} control array is an argument of the "
                             f"engine's programs; evaluate the system given by with_controls(U) instead")
        return u


class ControlledForce:
    """Mixin of the kinds whose force may take a control u (c,) as its last argument: the control
    signal with the conventions of ``NonholonomicSystem(force=f(q, v, t, u), controls=...)`` (one
    mechanism for every kind): an (N, c) array, one row per step, read at the engine's clock's
    step index (held constant over the step), or a callable t -> (c,); :meth:`with_controls` gives
    the same system with other controls (``dl.integrate``/``dl.solve(..., controls=U)``; a traced U
    is kept traced, so ``jax.grad`` w.r.t. U works).

    A kind calls :meth:`_init_controls` in its constructor, evaluates its force with
    :meth:`control` as the last argument when :attr:`controlled` is True (:meth:`_call_force`), and
    adds :meth:`control_features` to its features.
    """

    #: how a force that takes a control is written (in the error messages)
    controlled_signature = "force(g, ξ, t, u)"
    #: attributes holding compiled functions of the system (and so of its controls): a copy made
    #: by :meth:`with_controls` drops them
    control_caches: tuple = ()

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
        """The same system with the control signal ``controls`` ((N, c) array, one row per step,
        or a callable t -> (c,)); the data are shared (a shallow copy). ``h``, ``t0``: the step
        grid of an array (the engine's clock gives the step index; the reference solution reads it
        from the grid, :meth:`step_index`). Raises InputError for a system whose force takes no
        control, an array that is not 2-D or not finite."""
        if not self.controlled:
            raise InputError(f"{self.name}: controls are given but its force takes none; write "
                             f"{self.controlled_signature}")
        if not callable(controls):
            refuse_complex(controls, "controls")
            controls = (jnp.asarray(controls, jnp.float64) if linalg.traced(controls)
                        else np.asarray(controls, np.float64))
            if controls.ndim != 2:
                raise InputError(f"controls must be an (N, c) array, one row per step; got shape {controls.shape}")
            if not linalg.traced(controls) and not np.all(np.isfinite(controls)):
                raise InputError("controls has non-finite entries")
        other = copy.copy(self)
        other._controls = controls
        other._control_grid = None if h is None else (float(t0), float(h))
        for cache in self.control_caches:
            other.__dict__.pop(cache, None)
        if getattr(self, "_controls_origin", None) is None:
            try:                          # the system the copies are made from (weakly: see _cache)
                other._controls_origin = weakref.ref(self)
            except TypeError:
                other._controls_origin = None
        return other

    def control_array(self):
        """The (N, c) float64 control array (NumPy) when the signal is a concrete array, else
        None (a callable, a traced array, no controls)."""
        u = getattr(self, "_controls", None)
        return u if isinstance(u, np.ndarray) else None

    def runtime_controlled(self):
        """The same system with its (N, c) control array read from the argument of the engine's
        compiled programs (:func:`dalembert.clock.controls_given`) instead of a constant: one
        object per (system the copies of :meth:`with_controls` are made from, array shape), kept
        by that system (and going with it), so that the single run's programs compiled for it
        (kept with it) serve every array of that shape. Raises InputError for a system without a concrete array."""
        u = self.control_array()
        if u is None:
            raise InputError(f"{self.name}: runtime_controlled needs a concrete (N, c) control array")
        ref = getattr(self, "_controls_origin", None)
        origin = (ref() if ref is not None else None) or self

        # kept on the origin itself, not in the weak cache keyed by it: the copy shares the
        # origin's functions, which may close over the origin (a reference cycle, collected with
        # it; a weak-keyed entry whose value refers to its key would never go)
        made = origin.__dict__.setdefault("_runtime_controlled", {})
        if u.shape not in made:
            other = copy.copy(origin)
            other._controls = RuntimeControls(u.shape)
            other._control_grid = None
            for cache in origin.control_caches + ("_runtime_controlled",):
                other.__dict__.pop(cache, None)
            try:
                other._controls_origin = weakref.ref(origin)
            except TypeError:
                other._controls_origin = None
            made[u.shape] = other
        return made[u.shape]

    def step_index(self, t):
        """The step k with t in [t0 + k h, t0 + (k+1) h) on the grid of the control array (0
        without one), clipped to the array's rows; traceable."""
        grid = getattr(self, "_control_grid", None)
        if grid is None or callable(self._controls) or self._controls is None:
            return jnp.asarray(0, jnp.int32)
        t0, h = grid
        k = jnp.floor((t - t0) / h + 1e-9).astype(jnp.int32)
        return jnp.clip(k, 0, jnp.asarray(self._controls).shape[0] - 1)

    def control(self, dt=0.0):
        """u at the clock's time + dt (:mod:`dalembert.clock`): the row of the current step of an
        (N, c) array, or the callable's value; shape (c,)."""
        t, k = clock.now()
        if callable(self._controls):
            return jnp.asarray(self._controls(t + dt), jnp.float64)
        if isinstance(self._controls, RuntimeControls):       # the engine program's argument
            return jnp.asarray(self._controls.value())[k]
        return jnp.asarray(self._controls)[k]

    def _call_force(self, *state, dt=0.0):
        """The user's force ``self._force(*state, t[, u])`` at the clock's time t + dt, with the
        control :meth:`control` (dt) when it takes one, as float64."""
        t = clock.now()[0] + dt
        force = traced_once(self, self._force)
        if self.controlled:
            return jnp.asarray(force(*state, t, self.control(dt)), jnp.float64)
        return jnp.asarray(force(*state, t), jnp.float64)


class StateForce(ControlledForce):
    """Mixin of the kinds whose force is f(configuration, velocity, t[, u]) (``self._force``, None
    without one): ``NonholonomicSystem`` (q, v) and the Lie-group kinds (g, ξ,
    :class:`LeftTrivialisedTorque`). The kind declares :attr:`zero_force_like`."""

    #: which argument of :meth:`force` a zero force (a system without ``force=``) takes its shape
    #: from: 0 the configuration (the generalized force of q ∈ Rⁿ, (n,)), 1 the velocity (the
    #: torque of ξ ∈ 𝔤, (dim 𝔤,))
    zero_force_like = 1

    @property
    def has_force(self) -> bool:
        """True if the system has a non-conservative force (``force=``)."""
        return getattr(self, "_force", None) is not None

    def force(self, q, v, dt=0.0):
        """The force f(q, v, t) at the clock's time + dt (with the control u of the step when it
        takes one), float64 of the shape the force returns ((n,) generalized force; (dim 𝔤,)
        body-frame torque); zeros of the shape of the argument :attr:`zero_force_like` without one."""
        if not self.has_force:
            return jnp.zeros_like((q, v)[self.zero_force_like])
        return self._call_force(q, v, dt=dt)

    def force_depends_on_velocity(self, q, v) -> bool:
        """Whether the force depends on the velocity v (decided by tracing at (q, v)); False without one."""
        if not self.has_force:
            return False
        return _depends_on_input(lambda w: self.force(jnp.asarray(q), w), jnp.asarray(v, jnp.float64))


class LeftTrivialisedTorque(StateForce):
    """Mixin of the Lie-group kinds for a non-conservative **left-trivialised torque**
    τ(g, ξ, t) ∈ 𝔤* (body frame; N·m on SO(3)), or τ(g, ξ, t, u) with a control u (c,), with the
    conventions of ``NonholonomicSystem(force=...)``: the time is the engine's clock
    (:mod:`dalembert.clock`; runs start at ``t0``), a control array holds one row per step,
    ``with_controls`` gives the same system with other controls, ``traj.work`` is the work
    ∫τ·ξ dt (:mod:`dalembert.engine.forcing`, with the node (g, ξ) of :meth:`work_node` and the
    power of :meth:`power_and_rate`).

    A kind calls :meth:`_init_torque` in its constructor and its :meth:`_check_torque` in its
    initial-state check, and adds :meth:`torque_features` to its features.
    """

    explicit_time = False
    has_supply = False

    def _init_torque(self, force, controls, name: str):
        if force is not None and not callable(force):
            raise InputError(f"{name}: force must be a callable force(g, ξ, t) or force(g, ξ, t, u) (a "
                             f"left-trivialised torque); got {type(force).__name__}")
        self._force = force
        self._init_controls(force is not None and _positional_count(force) >= 4, controls, name)

    @property
    def timed(self) -> bool:
        """True with a torque: the system is stepped on the engine's clock and its work accounted."""
        return self.has_force

    def torque_features(self) -> set:
        """{FORCES (, CONTROLS)} with a torque, else empty."""
        if not self.has_force:
            return set()
        return {Feature.FORCES} | self.control_features()

    @staticmethod
    def work_node(obs: dict):
        """(g, ξ) = (R, ω) of a node observation: what the work quadrature reads."""
        return obs["R"], obs["omega"]

    def power_and_rate(self, g, xi, dt, *, rate: bool = True):
        """(P, Ṗ) at the node (g, ξ): the torque's power P = τ(g, ξ, t)·ξ at the clock's time + dt
        and its time derivative along the motion, Ṗ = d/ds P(g + s ġ, ξ + s ξ̇, t + s) at s = 0 with
        ġ = g ξ̂ (left trivialisation, :meth:`reconstruction`) and ξ̇ the kind's acceleration, by
        forward-mode autodiff (the Hermite work rule of order 4); (P, None) with ``rate=False``."""
        if not rate:
            return jnp.sum(self.force(g, xi, dt) * xi), None
        with clock.shifted(dt):
            a = self.acceleration(g, xi)
        gdot = self.reconstruction(g, xi)

        def power(s):
            gg, w = g + s * gdot, xi + s * a
            return jnp.sum(self.force(gg, w, dt + s) * w)
        return jax.jvp(power, (jnp.zeros((), jnp.float64),), (jnp.ones((), jnp.float64),))

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

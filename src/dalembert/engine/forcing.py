"""Forces, controls and explicit time in the engine: the clock around each step and the work.

A system with a non-conservative force (``NonholonomicSystem(force=...)``) is stepped by
:func:`with_clock`: the scheme's state is carried with the step index k, the time t_k = t0 + k·h
and the work W_k of the force, and each step, its start-up and its node outputs are traced
inside :func:`dalembert.clock.at` (t_k, k), so that the method's discrete forces read the time
of their quadrature nodes and the control u_k of the step.

The work of a method of order < 4 is the trapezoidal rule on the displacement,
    W_{k+1} = W_k + ½ (f(q_k, v_k, t_k, u_k) + f(q_{k+1}, v_{k+1}, t_{k+1}, u_k))·(q_{k+1} − q_k),
(the control held over the step), second order; from order 4 the Hermite rule on the power
P = f·v, W_{k+1} = W_k + h/2 (P_k + P_{k+1}) + h²/12 (Ṗ_k − Ṗ_{k+1}), fourth order.
``traj.work`` (N+1,) is W at the nodes, and the energy balance residual E_k − E_0 − W_k
(``traj.energy_balance_residual``) replaces the energy error of a conservative run; it converges
at min(order, 2) or min(order, 4).

A system kind whose node is not (q, v) gives its own node and power: ``work_node(observation)``
-> (c, u), the node's configuration and velocity parts (pytrees), and ``power_and_rate(c, u, dt,
rate=True)`` -> (P, Ṗ), the power at the clock's time + dt and its time derivative along the
motion ((P, None) with ``rate=False``). Its work is summed by the trapezoidal rule on the power,
W_{k+1} = W_k + h/2 (P_k + P_{k+1}), below order 4 (it has no displacement q_{k+1} − q_k: a
configuration on a group), and by the Hermite rule from order 4. The Lie-group kinds
(:class:`~dalembert.systems.torque.LeftTrivialisedTorque`, a left-trivialised torque τ(g, ξ, t)):
node (g, ξ), P = τ·ξ, Ṗ along (ġ, ξ̇) = (g ξ̂, ξ̇); a ``ReducedSystem`` on Rⁿ × G: node
((x, R), (ẋ, ξ)), P = f_x·ẋ + τ·ξ (+ λᵀν̃).

Explicit time and moving supports. With V(q, t) and affine constraints μ(q)v = ν(q, t) the
Lagrange–d'Alembert equations G q̈ = ∂L/∂q − Ġv + f + μᵀλ give, for E = T + V(q, t),

    dE/dt = f·v + λᵀμv + ∂V/∂t = f·v + λᵀν(q, t) + ∂V/∂t,

(vᵀ(G q̈ + Ġv − ∂T/∂q) = dT/dt; the constraint force does the power λᵀν, zero for linear
constraints). W then integrates this whole supply P = f·v + S, S = λ(q, v)ᵀν(q, t) + ∂V/∂t
(:meth:`~dalembert.NonholonomicSystem.supply`, λ the index-1 multiplier at the node), by the
same rules: below order 4 the force's part by the displacement rule above and S by the
trapezoidal rule h/2 (S_k + S_{k+1}); from order 4 the Hermite rule on P (Ṗ along the motion
and in t). The balance residual then converges at the same orders. The node energy is
T + V(q_k, t_k) and the constraint residual μ(q_k)v_k − ν(q_k, t_k): the clocked observation
carries its node's (t_k, k) (:data:`dalembert.clock.NODE_CLOCK`) for them.

A method that accounts for its own discrete work reports it as the node array ``work`` of its
observation (the discrete-gradient methods: W_k = Σ h∇̄Hᵀ(−R∇̄H + F̄), whose balance
E_k − E_0 − W_k is zero to round-off, McLachlan, Quispel & Robidoux 1999); the clock then
carries and reports that value, and neither quadrature nor the force at the nodes is evaluated
(decided when the step is traced: whether the observation has the key).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp

from .. import clock
from ..methods.base import Scheme, observation_dict

#: the node array of the accumulated work
WORK = "work"


class ClockState(NamedTuple):
    """inner: the method's state; k: int32 step index; t: float64 time t_k; work: W_k;
    q, v: the node's configuration and velocity (the left end of the next step's work)."""

    inner: Any
    k: Any
    t: Any
    work: Any
    q: Any
    v: Any


@dataclass(frozen=True)
class ClockedScheme(Scheme):
    """A scheme stepped on the engine's clock; ``wrap(inner_state, h)`` makes its state from a
    method state (at t0, k = 0, W = 0)."""

    wrap: Callable = None


def _supply(system, q, v, dt):
    """S = λᵀν + ∂V/∂t at a node (0.0, no operation, for a system without)."""
    if not getattr(system, "has_supply", False):
        return 0.0
    return system.supply(q, v, dt)


def _power_and_rate(system, q, v, dt):
    """(P, Ṗ) at a node (the system's own ``power_and_rate(q, v, dt)`` when it has one: a kind
    whose node is not (q, v), module doc): the power P = f(q, v, t)·v + S(q, v, t) of the force and
    the supply (module doc) and its time derivative along the motion,
    Ṗ = d/dτ P(q + τv, v + τa, t + τ) at τ = 0 with a the index-1 acceleration
    (:meth:`~dalembert.NonholonomicSystem.acceleration`), by forward-mode autodiff."""
    own = getattr(system, "power_and_rate", None)
    if own is not None:
        return own(q, v, dt)
    with clock.shifted(dt):
        a = system.acceleration(q, v)

    def power(tau):
        qq, vv = q + tau * v, v + tau * a
        return jnp.sum(system.force(qq, vv, dt + tau) * vv) + _supply(system, qq, vv, dt + tau)
    return jax.jvp(power, (jnp.zeros((), jnp.float64),), (jnp.ones((), jnp.float64),))


def with_clock(scheme: Scheme, system, t0: float = 0.0, order: int = 2) -> ClockedScheme:
    """``scheme`` on the clock (module doc); ``system`` has ``force(q, v, dt)``. ``order``: the
    method's; from 4 on the work is summed by the Hermite (corrected trapezoidal) rule
    W_{k+1} − W_k = h/2 (P_k + P_{k+1}) + h²/12 (Ṗ_k − Ṗ_{k+1}) with P = f·v (fourth order; an
    acceleration and a derivative of the power per node), else by the trapezoidal rule on the
    displacement (second order; on the power for a kind with its own ``work_node``)."""
    t0 = jnp.asarray(t0, jnp.float64)
    hermite = order >= 4
    own_node = getattr(system, "work_node", None)      # a kind whose node is not (q, v)

    def node(inner, h, t, k):
        """(q, v, the method's own work or None) at a node."""
        with clock.at(t, k):
            d = observation_dict(scheme.observe(inner, h))
        if WORK in d:                        # the method's own discrete work: no quadrature
            empty = jnp.zeros((0,), jnp.float64)
            return empty, empty, jnp.asarray(d[WORK], jnp.float64)
        return (*own_node(d), None) if own_node is not None else (d["q"], d["v"], None)

    def start_time():
        """t0: the running clock's time where the engine's start program sets it (the run's t0
        as an argument of the program, :func:`dalembert.engine.programs.started_at`), else the
        ``t0`` given here."""
        return jnp.asarray(clock.now()[0], jnp.float64) if clock.running() else t0

    def wrap(inner, h):
        if isinstance(inner, ClockState):
            return inner
        k, t = jnp.asarray(0, jnp.int32), start_time()
        q, v, own = node(inner, h, t, k)
        return ClockState(inner, k, t, jnp.zeros((), jnp.float64) if own is None else own, q, v)

    def init(*args):
        t = start_time()
        with clock.at(t, jnp.asarray(0, jnp.int32)):
            inner = scheme.init(*args)
            return wrap(inner, args[-1])

    def step(st, h):
        with clock.at(st.t, st.k):
            new, info = scheme.step(st.inner, h)
            q1, v1, own = node(new, h, st.t, st.k)
            if own is not None:                  # the method's own discrete work
                return ClockState(new, st.k + 1, st.t + h, own, q1, v1), info
            if hermite:                          # both ends with the step's own control
                p0, r0 = _power_and_rate(system, st.q, st.v, 0.0)
                p1, r1 = _power_and_rate(system, q1, v1, h)
                dw = 0.5 * h * (p0 + p1) + h * h / 12.0 * (r0 - r1)
            elif own_node is not None:           # no displacement: the trapezoidal rule on the power
                p0 = system.power_and_rate(st.q, st.v, 0.0, rate=False)[0]
                p1 = system.power_and_rate(q1, v1, h, rate=False)[0]
                dw = 0.5 * h * (p0 + p1)
            else:
                f0 = system.force(st.q, st.v)
                f1 = system.force(q1, v1, h)
                dw = (0.5 * jnp.sum((f0 + f1) * (q1 - st.q))
                      + 0.5 * h * (_supply(system, st.q, st.v, 0.0) + _supply(system, q1, v1, h)))
        return ClockState(new, st.k + 1, st.t + h, st.work + dw, q1, v1), info

    def observe(st, h):
        with clock.at(st.t, st.k):
            d = observation_dict(scheme.observe(st.inner, h))
        d.setdefault(WORK, st.work)              # the method's own, when it reports one
        if getattr(system, "explicit_time", False):
            d[clock.NODE_CLOCK] = (st.t, st.k)    # the node's diagnostics at t_k (engine.loop)
        return d

    return ClockedScheme(init=init, step=step, observe=observe, never_explicit=scheme.never_explicit,
                         wrap=wrap)

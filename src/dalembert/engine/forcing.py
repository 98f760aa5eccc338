"""Forces, controls and explicit time in the engine: the clock around each step and the work.

A system with a non-conservative force (``NonholonomicSystem(force=...)``) is stepped by
:func:`with_clock`: the scheme's state is carried with the step index k, the time t_k = t0 + k·h
and the work W_k of the force, and each step, its start-up and its node outputs are traced
inside :func:`dalembert.clock.at` (t_k, k), so that the method's discrete forces read the time
of their quadrature nodes and the control u_k of the step.

The work is the trapezoidal rule on the displacement,
    W_{k+1} = W_k + ½ (f(q_k, v_k, t_k, u_k) + f(q_{k+1}, v_{k+1}, t_{k+1}, u_k))·(q_{k+1} − q_k),
(the control held over the step), second order; ``traj.work`` (N+1,) is W at the nodes, and the
energy balance residual E_k − E_0 − W_k (``traj.energy_balance_residual``) replaces the energy
error of a conservative run. Its order is min(2, the method's); the discrete-gradient methods'
exact balance is theirs (not this quadrature's).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

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


def with_clock(scheme: Scheme, system, t0: float = 0.0) -> ClockedScheme:
    """``scheme`` on the clock (module doc); ``system`` has ``force(q, v, dt)``."""
    t0 = jnp.asarray(t0, jnp.float64)

    def node(inner, h, t, k):
        with clock.at(t, k):
            d = observation_dict(scheme.observe(inner, h))
        return d["q"], d["v"]

    def wrap(inner, h):
        if isinstance(inner, ClockState):
            return inner
        k = jnp.asarray(0, jnp.int32)
        q, v = node(inner, h, t0, k)
        return ClockState(inner, k, t0, jnp.zeros((), jnp.float64), q, v)

    def init(*args):
        with clock.at(t0, jnp.asarray(0, jnp.int32)):
            inner = scheme.init(*args)
        return wrap(inner, args[-1])

    def step(st, h):
        with clock.at(st.t, st.k):
            new, info = scheme.step(st.inner, h)
            q1, v1 = node(new, h, st.t, st.k)
            f0 = system.force(st.q, st.v)
            f1 = system.force(q1, v1, h)         # the right end, with the step's own control
        work = st.work + 0.5 * jnp.sum((f0 + f1) * (q1 - st.q))
        return ClockState(new, st.k + 1, st.t + h, work, q1, v1), info

    def observe(st, h):
        with clock.at(st.t, st.k):
            d = observation_dict(scheme.observe(st.inner, h))
        d[WORK] = st.work
        return d

    return ClockedScheme(init=init, step=step, observe=observe, never_explicit=scheme.never_explicit,
                         wrap=wrap)

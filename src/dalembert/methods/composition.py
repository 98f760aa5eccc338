"""Composition of one-step methods that share a state, e.g. GNI-A(h/2) then GNI-B(h/2).

Source: Ferraro–Jiménez–Martín de Diego 2015, Remark 5.5, read as in spec §2.3 and erratum 5:
the composition must be done in T*Q variables (state (q, p⁺)), "A first"; it is then of order 2
and differs from RATTLE. (Composing the staggered (q, p̃, λ̃) maps instead is only of order 1; see
:mod:`dalembert.methods.gni_leapfrog`.)
"""
from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp

from .base import Method, Scheme, StepInfo


@dataclass(frozen=True, eq=False)
class Composition(Method):
    """Apply ``stages = ((method, fraction), ...)`` in order within one step of size h.

    All stages must share the state type (e.g. all GNI). Reported node values are those of the
    first stage's ``observe``, evaluated with the mean of the first and last fractions of h.
    """

    stages: tuple = ()

    def build(self, system, q0, **options) -> Scheme:
        built = [(m.build(system, q0, **options), float(c)) for m, c in self.stages]
        h_obs = 0.5 * (built[0][1] + built[-1][1])

        def step(state, h):
            converged, iterations = jnp.array(True), jnp.array(0, jnp.int32)
            for scheme, c in built:
                state, info = scheme.step(state, c * h)
                converged = converged & info.converged
                iterations = iterations + info.iterations
            return state, StepInfo(converged, iterations)

        first = built[0][0]
        return Scheme(first.init, step, lambda state, h: first.observe(state, h_obs * h))

"""RATTLE for reduced spaces: algorithm (37) of Ferraro, Jiménez, Martín de Diego, Nonlinearity 28
(2015) 871, §7.2, with the fixes of errata E7–E9 (docs/theory/ferraro2015.md#e7, #e8, #e9) and the affine
term of §7.3, (38) with the sign of Π corrected (erratum E6, docs/theory/ferraro2015.md#e6).

Setting: a :class:`~dalembert.systems.reduced.ReducedSystem` with **constant** metric blocks
G̃_xx, G̃_xg, G̃_gg and the SV-type retracted discrete Lagrangian of §7.2. State
(x_k, R_k, p̃_k, ξ_k, M̃_k, λ̃_k); one step, with μ̃ = [μ | η] and Ad*_{τ(hξ)} M = τ(hξ)ᵀM (left;
τ(hξ)M for right trivialization):

    (37a) p_{k+1/2} = p̃_k − (h/2)(V_x(x_k) + μ(x_k)ᵀλ̃_k)
    (37c) x_{k+1}   = x_k + h G̃_xx⁻¹(p_{k+1/2} − G̃_xg ξ_k)            (x–x block inverse: erratum E7)
          R_{k+1}   = R_k τ(hξ_k)   (right: τ(hξ_k) R_k)
    (37d) λ̃_{k+1}   = (2/h) C̃⁻¹(μ̃G̃⁻¹(p_{k+1/2} − (h/2)V_x(x_{k+1}), Ad*M̃_k) − ν̃)   (linear, m×m;
          μ̃G̃⁻¹ of the averaged momentum = ν̃, the full inverse G̃⁻¹ here)
    (37e) p̃_{k+1}   = p_{k+1/2} − (h/2)(V_x(x_{k+1}) + μ(x_{k+1})ᵀλ̃_{k+1})
    (37b+f) M̃_{k+1} = Ad*_{τ(hξ_k)} M̃_k − h η(x_{k+1})ᵀλ̃_{k+1}            (λ = hλ̃: erratum E9)
          ξ_{k+1}:   (dτ⁻¹_{hξ})ᵀ D_σ l_d(x_{k+1}, x_{k+2}(ξ), hξ) = M̃_{k+1}  (Newton, 3 unknowns;
          D_σ l_d, not D3 L_d: erratum E8), x_{k+2}(ξ) = x_{k+1} + hG̃_xx⁻¹(p_{k+3/2} − G̃_xg ξ),
          p_{k+3/2} = p̃_{k+1} − (h/2)(V_x(x_{k+1}) + μ(x_{k+1})ᵀλ̃_{k+1}).

It is the reduced GNI (30)/(38) with the SV-type l_d written in other variables, so it reproduces
``reduced-gni`` to round-off (as the paper claims for (33)–(37); docs/theory/ferraro2015.md). Start-up
as in ``reduced-gni``: ``"legendre"`` (λ̃_0 = 0, p̃_0 = G̃u_0 x-part, M̃_0 = its g-part) or
``"consistent"`` (the default; λ̃_0 = −λ(x_0, R_0, u_0), the continuous multiplier).

Reported at the nodes: x, R; xdot, xi = G̃⁻¹p̄_k with p̄_k = (p̃_k, M̃_k + (h/2)η(x_k)ᵀλ̃_k) (the
averaged momentum: μ̃u = ν̃ exactly); momentum = p̄_k; lam = −λ̃_k (the continuous sign).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax.numpy as jnp

from .. import linalg
from ..declarations import Claim, Feature, Invariant
from ..errors import InputError
from ..solvers.newton import MAX_ITER, RTOL
from .base import Method, Scheme, StepInfo, Traits
from .reduced_gni import _PUB, _Kernels


class ReducedRattleState(NamedTuple):
    """x (n,), R (3, 3), pt = p̃_k (n,), xi = ξ_k (3,) (the interval velocity of [t_k, t_{k+1}]),
    M = M̃_k (3,), lt = λ̃_k (m,)."""

    x: Any
    R: Any
    pt: Any
    xi: Any
    M: Any
    lt: Any


@dataclass(frozen=True, eq=False)
class ReducedRattle(Method):
    """Algorithm (37) (module doc). Build options: ``startup`` ("legendre" | "consistent"),
    ``retraction`` ("cayley" | "exponential"), ``rtol``, ``max_iter`` (Newton in ξ).

    Takes R^n × SO(3) with constant metric blocks and a potential of x only (§7.2): its traits
    accept affine constraints and either trivialization, no other feature.
    """

    def build(self, system, x0=None, *, startup="consistent", retraction="cayley",
              rtol: float = RTOL, max_iter: int = MAX_ITER) -> Scheme:
        if startup not in ("legendre", "consistent"):
            raise InputError(f"unknown startup {startup!r} for {self.name}; choose from: legendre, consistent")
        k = _Kernels(system, retraction, None)
        n = system.n
        Vx = system.potential_gradient

        def ad_star(xi, M, h):
            W = k.tau.tau(h * xi)
            return linalg.vm(M, W) if system.left else linalg.mv(W, M)

        def solve_xi(x, pt, lt, mu, M, h):
            p_half = pt - 0.5 * h * (Vx(x) + linalg.vm(lt, mu[:, :n]))
            xi, _, _, conv, it = k.solve_group(p_half, M, h, rtol, max_iter)
            return xi, conv, it

        def init(x0, R0, xdot0, xi0, h):
            x0, R0, xdot0, xi0 = (jnp.asarray(a, jnp.float64) for a in (x0, R0, xdot0, xi0))
            p0 = system.momentum(x0, xdot0, xi0)
            mu = system.constraint_matrix(x0, R0)
            if startup == "consistent":
                lt = -system.multiplier(x0, R0, xdot0, xi0)
                M = p0[n:] - 0.5 * h * linalg.vm(lt, mu[:, n:])
            else:
                lt = jnp.zeros((system.m,), jnp.float64)
                M = p0[n:]
            # node 0: FL⁺_0 = p0 − (h/2)μ̃ᵀλ (consistent) or p0; FL⁻_0 = p0 + (h/2)μ̃ᵀλ = FL⁺_0 − hμ̃ᵀλ̃_0
            xi, _, _ = solve_xi(x0, p0[:n], lt, mu, M, h)
            return ReducedRattleState(x0, R0, p0[:n], xi, M, lt)

        def step(state, h):
            x, R, pt, xi, M, lt = state
            mu = system.constraint_matrix(x, R)
            p_half = pt - 0.5 * h * (Vx(x) + linalg.vm(lt, mu[:, :n]))                    # (37a)
            x1 = x + h * linalg.cho_solve(k.Lxx, p_half - linalg.mv(k.Gxg, xi))             # (37c)
            R1 = k.reconstruct(R, xi, h)
            Mp = ad_star(xi, M, h)
            g1 = Vx(x1)
            fl_plus = jnp.concatenate([p_half - 0.5 * h * g1, Mp])
            s, mu1 = k.reflection_coefficient(x1, R1, fl_plus)                            # (37d)
            lt1 = (2.0 / h) * s
            pt1 = p_half - 0.5 * h * (g1 + linalg.vm(lt1, mu1[:, :n]))                      # (37e)
            M1 = Mp - h * linalg.vm(lt1, mu1[:, n:])                                       # (37b+f)
            xi1, conv, it = solve_xi(x1, pt1, lt1, mu1, M1, h)
            return ReducedRattleState(x1, R1, pt1, xi1, M1, lt1), StepInfo(conv, it)

        def observe(state, h):
            x, R, pt, xi, M, lt = state
            mu = system.constraint_matrix(x, R)
            pbar = jnp.concatenate([pt, M + 0.5 * h * linalg.vm(lt, mu[:, n:])])
            u = k.velocity(x, R, pbar)
            return {"x": x, "R": R, "xdot": u[:n], "xi": u[n:], "momentum": pbar, "lam": -lt,
                    "xi_interval": xi}

        return Scheme(init, step, observe)


METHODS = (
    ReducedRattle(
        name="reduced-rattle",
        traits=Traits(
            order=2, symmetric=True, implicit=True,
            preserves=(Claim(Invariant.NODE_CONSTRAINT, "averaged-momentum constraint μ̃G̃⁻¹p̄_k = ν̃ (affine) exactly"),
                       Claim(Invariant.GROUP_MEMBERSHIP, "R_k ∈ SO(3) to round-off")),
            accepts={Feature.AFFINE_CONSTRAINTS, Feature.RIGHT_TRIVIALISED},
            node_velocity="G̃⁻¹p̄_k, p̄_k = (p̃_k, M̃_k + (h/2)ηᵀλ̃_k) (averaged momentum; = reduced-gni's)",
            source=f"{_PUB}, §7.2 algorithm (37) with errata E7–E9 "
                   "(docs/theory/ferraro2015.md#e7–#e9); affine term of §7.3 (38), sign as in erratum E6",
            family="reduced-gni", integrates=("reduced",),
            explicit_when=""),
        description="RATTLE for reduced spaces (37): explicit x, linear m×m solve for λ̃, Newton in ξ; "
                    "constant metric blocks; identical to reduced-gni with the SV-type l_d."),
)

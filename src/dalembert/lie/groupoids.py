"""Lie groupoids, as far as the geometric nonholonomic integrator on groupoids needs them.

Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015) 871, §8 (Definitions 8.1–8.2,
(47)–(50)). A Lie groupoid G ⇉ Q has arrows g with a source α(g) and a target β(g) in the base
Q; the product g·k is defined when β(g) = α(k), with α(g·k) = α(g), β(g·k) = β(k); each point x
has an identity ε(x) and each arrow an inverse g⁻¹ (α(g⁻¹) = β(g), g·g⁻¹ = ε(α(g))). Its Lie
algebroid AG → Q has the fibre A_x = T_{ε(x)} α⁻¹(x) (the tangent space at the identity of the
α-fibre) and the anchor ρ = Tβ: A → TQ.

The integrator (:mod:`dalembert.methods.groupoid`) differentiates a discrete Lagrangian along
the α-fibres, so besides the structure maps an instance gives a **chart of the α-fibre**,
``chart(x, z)`` = e_x(z) with α(e_x(z)) = x, e_x(0) = ε(x) and d e_x(0) an isomorphism
R^d ≅ A_x (z the coordinates of A_x in a fixed basis). Then the discrete Legendre maps of §8 are

    FL⁺_d(g)(a) = d/ds L_d(g · e_{β(g)}(s a))|₀                    ∈ A*_{β(g)}  (left translation ℓ_g)
    FL⁻_d(g)(a) = −d/ds L_d(e_{α(g)}(s a)⁻¹ · g)|₀                 ∈ A*_{α(g)}  (r_g ∘ i)

and they do not depend on the chart beyond its first derivative at 0. Arrows and base points are
pytrees of float64 arrays (traceable). The bracket of the algebroid is not needed by the scheme
and is not implemented.

Three instances (the ones the paper names):

* :class:`PairGroupoid` Q × Q ⇉ Q, Q = Rⁿ: arrows (q0, q1), A_q = T_qQ; the GNI of §4.
* :class:`LieGroupGroupoid` G ⇉ {e}: arrows W ∈ G, A = 𝔤 (left-invariant vector fields); the
  Lie-group GNI (Ferraro, Iglesias-Ponte, Martín de Diego 2008 §4).
* :class:`AtiyahGroupoid` of the trivial bundle M × G → M: arrows (x0, x1, W) ∈ M × M × G,
  (x0, x1, W)·(x1, x2, W') = (x0, x2, W W') (left trivialization; W' W for the right one),
  A_x = T_xM × 𝔤; the reduced GNI of §7.

The two instances with a group also *reconstruct*: R_{k+1} = R_k W_k (left; W_k R_k right),
Remark 7.2. :meth:`reconstruct` gives it (the pair groupoid has nothing to reconstruct).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

class LieGroupoid:
    """The interface (see the module doc). Subclasses implement every method but :meth:`anchor`."""

    name: str = "groupoid"

    def rank(self, x) -> int:
        """d = dim A_x (from static shapes)."""
        raise NotImplementedError

    def source(self, g):
        raise NotImplementedError

    def target(self, g):
        raise NotImplementedError

    def multiply(self, g, k):
        """g·k (β(g) = α(k); not checked)."""
        raise NotImplementedError

    def inverse(self, g):
        raise NotImplementedError

    def identity(self, x):
        raise NotImplementedError

    def chart(self, x, z):
        """e_x(z): an arrow with source x, e_x(0) = ε(x); z (d,)."""
        raise NotImplementedError

    def chart_inverse(self, g):
        """z with e_{α(g)}(z) = g (near the identities)."""
        raise NotImplementedError

    def reconstruct(self, R, g):
        """The reconstruction variable after the arrow g (R itself where there is none)."""
        return R

    def newton_coordinates(self, x, z):
        """The unknown y of the integrator's Newton solve for the chart coordinate z (default y = z;
        the pair groupoid solves for the new point q1 = x + z, so that the convergence test is
        relative to the size of the configuration, as it was for the GNI on Rⁿ)."""
        return z

    def arrow_from(self, x, y):
        """The arrow of the Newton unknown y (the inverse of :meth:`newton_coordinates`)."""
        return self.chart(x, y)

    def anchor(self, x, a):
        """ρ(a) = d/ds β(e_x(s a))|₀ ∈ T_xQ for a (d,) — by forward-mode autodiff."""
        return jax.jvp(lambda s: self.target(self.chart(x, s * a)), (jnp.zeros(()),), (jnp.ones(()),))[1]

    def __repr__(self):
        return f"<Lie groupoid {self.name}>"


class PairGroupoid(LieGroupoid):
    """Q × Q ⇉ Q for Q = Rⁿ: α(q0, q1) = q0, β = q1, (q0, q1)·(q1, q2) = (q0, q2), ε(q) = (q, q),
    (q0, q1)⁻¹ = (q1, q0); e_q(z) = (q, q + z), so A_q = T_qQ and ρ = id."""

    name = "pair groupoid Rⁿ × Rⁿ"

    def rank(self, x):
        return x.shape[0]

    def source(self, g):
        return g[0]

    def target(self, g):
        return g[1]

    def multiply(self, g, k):
        return (g[0], k[1])

    def inverse(self, g):
        return (g[1], g[0])

    def identity(self, x):
        return (x, x)

    def chart(self, x, z):
        return (x, x + z)

    def chart_inverse(self, g):
        return g[1] - g[0]

    def newton_coordinates(self, x, z):
        return x + z

    def arrow_from(self, x, y):
        return (x, y)


class LieGroupGroupoid(LieGroupoid):
    """A matrix Lie group G ⇉ {e} (the base is one point, an empty array): every pair of arrows
    is composable, the product is the group's; e(z) = τ(z) for a retraction τ of G (A = 𝔤 in the
    group's hat basis, ρ = 0). ``retraction``: a :class:`~dalembert.lie.retraction.Retraction`.
    ``reconstruct(R, W) = R W``."""

    def __init__(self, group, retraction):
        self.group = group
        self.retraction = retraction
        self.name = f"Lie group {group.name} ⇉ {{e}}"

    def rank(self, x):
        return self.group.dim

    def source(self, g):
        return point()

    def target(self, g):
        return point()

    def multiply(self, g, k):
        return g @ k

    def inverse(self, g):
        return self.group.inverse(g)

    def identity(self, x):
        return self.group.identity()

    def chart(self, x, z):
        return self.retraction.tau(z)

    def chart_inverse(self, g):
        return self.retraction.inverse(g)

    def reconstruct(self, R, g):
        return R @ g


class AtiyahGroupoid(LieGroupoid):
    """The Atiyah groupoid of the trivial principal bundle M × G → M, M = Rⁿ: arrows (x0, x1, W),
    α = x0, β = x1, (x0, x1, W)·(x1, x2, W') = (x0, x2, W W') with ``left=True`` (body velocities,
    R_{k+1} = R_k W_k) or (x0, x2, W' W) with ``left=False`` (spatial velocities,
    R_{k+1} = W_k R_k); ε(x) = (x, x, e); (x0, x1, W)⁻¹ = (x1, x0, W⁻¹);
    e_x(v, η) = (x, x + v, τ(η)), so A_x = T_xM × 𝔤 and ρ(v, η) = v."""

    def __init__(self, n: int, group, retraction, left: bool = True):
        self.n = int(n)
        self.group = group
        self.retraction = retraction
        self.left = bool(left)
        self.name = (f"Atiyah groupoid R^{self.n} × R^{self.n} × {group.name} ⇉ R^{self.n} "
                     f"({'left' if self.left else 'right'} trivialization)")

    def rank(self, x):
        return self.n + self.group.dim

    def source(self, g):
        return g[0]

    def target(self, g):
        return g[1]

    def _product(self, W, V):
        return W @ V if self.left else V @ W

    def multiply(self, g, k):
        return (g[0], k[1], self._product(g[2], k[2]))

    def inverse(self, g):
        return (g[1], g[0], self.group.inverse(g[2]))

    def identity(self, x):
        return (x, x, self.group.identity())

    def chart(self, x, z):
        return (x, x + z[:self.n], self.retraction.tau(z[self.n:]))

    def chart_inverse(self, g):
        return jnp.concatenate([g[1] - g[0], self.retraction.inverse(g[2])])

    def newton_coordinates(self, x, z):
        return jnp.concatenate([x + z[:self.n], z[self.n:]])

    def arrow_from(self, x, y):
        return (x, y[:self.n], self.retraction.tau(y[self.n:]))

    def reconstruct(self, R, g):
        return self._product(R, g[2])


def point() -> Any:
    """The base point of a :class:`LieGroupGroupoid` (an empty float64 array; made on each call:
    no JAX array is created when the module is imported)."""
    return jnp.zeros((0,), jnp.float64)

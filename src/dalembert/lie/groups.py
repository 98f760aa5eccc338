"""Matrix Lie groups behind one interface: SO(3), SO(n), SE(2), SE(3).

A :class:`MatrixLieGroup` G ⊂ GL(N) has its Lie algebra g ≅ R^d identified through ``hat``
(R^d → N × N matrices) and ``vee`` (its left inverse). With X = hat(ξ) the group provides

* ``exp``, ``log`` (closed forms for SO(3), SE(2), SE(3); for SO(n) the matrix exponential and a
  logarithm by inverse scaling and squaring), ``cayley`` / ``cayley_inv``
  (cay(ξ) = (I − X/2)⁻¹(I + X/2), a retraction onto SO(n) and SE(n));
* ``ad(ξ)`` (d × d, ad_ξ η = vee([X, hat η])), ``Ad(g)`` (d × d, Ad_g η = vee(g hat(η) g⁻¹)) and the
  duals ``ad_star(ξ, μ) = ad(ξ)ᵀμ``, ``Ad_star(g, μ) = Ad(g)ᵀμ`` (so that ⟨ad*_ξ μ, η⟩ = ⟨μ, ad_ξ η⟩,
  the convention of :mod:`dalembert.lie.so3`);
* the right-trivialised tangents ``dexp(ξ)`` = Σ_j ad_ξ^j/(j+1)!, with
  d/ds exp(ξ + sη)|₀ = hat(dexp_ξ η) exp(ξ), and ``dcay(ξ)``, dcay_ξ η = vee((I − X/2)⁻¹ hat(η) (I + X/2)⁻¹),
  with d/ds cay(ξ + sη)|₀ = hat(dcay_ξ η) cay(ξ); their inverses ``dexp_inv`` (Σ_j B_j ad_ξ^j/j!) and
  ``dcay_inv`` (η ↦ vee((I − X/2) hat(η) (I + X/2)) = η − ½ad_ξ η − ¼vee(X hat(η) X)); the left-
  trivialised tangents are those at −ξ;
* ``left_gradient(f, g)``: ⟨∇f(g), η⟩ = d/dε f(g exp(εη̂)) at ε = 0.

Sources: the Lie-group formulas of Ferraro, Jiménez, Martín de Diego, Nonlinearity 28 (2015), §6 and
the Appendix (dexp, dcay on SO(3)); Iserles, Munthe-Kaas, Nørsett, Zanna, "Lie-group methods",
Acta Numerica 9 (2000) §2–§3 (dexp = φ(ad), the Cayley map and its tangent for quadratic groups).
SE(2) orders its algebra as ξ = (v1, v2, ω) and SE(3) as ξ = (v, w) (translation first); SO(3)
uses :mod:`dalembert.lie.so3` (ξ = w, hat(w)v = w × v); SO(n) orders the pairs (i, j), i < j,
lexicographically with hat(ξ)[j, i] = ξ_k = −hat(ξ)[i, j].

All maps act on single elements ((d,) and (N, N)); use ``jax.vmap`` for batches. They are pure and
traceable (jit, vmap, grad).
"""
from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from ..errors import InputError
from . import so3

_F64 = jnp.float64


class MatrixLieGroup:
    """A matrix Lie group with its algebra identified with R^d (module doc).

    Attributes: ``name``, ``dim`` (d), ``matrix_size`` (N). Subclasses give ``hat`` and ``vee``;
    the rest has generic definitions (overridden by closed forms where the group has them).
    """

    name = "G"
    dim = 0
    matrix_size = 0

    # --- the algebra ---------------------------------------------------------------------------
    def hat(self, xi):
        raise NotImplementedError

    def vee(self, X):
        raise NotImplementedError

    def basis(self):
        """hat(e_j), j = 1..d: (d, N, N)."""
        return jax.vmap(self.hat)(jnp.eye(self.dim, dtype=_F64))

    def bracket(self, xi, eta):
        """[ξ, η] = vee(XY − YX), (d,)."""
        X, Y = self.hat(xi), self.hat(eta)
        return self.vee(X @ Y - Y @ X)

    def ad(self, xi):
        """Matrix of ad_ξ, (d, d): ad_ξ η = [ξ, η]."""
        X = self.hat(xi)
        return jax.vmap(lambda E: self.vee(X @ E - E @ X), out_axes=1)(self.basis())

    def ad_star(self, xi, mu):
        """ad*_ξ μ = ad_ξᵀ μ, (d,)."""
        return self.ad(xi).T @ jnp.asarray(mu, _F64)

    # --- the group -----------------------------------------------------------------------------
    def identity(self):
        return jnp.eye(self.matrix_size, dtype=_F64)

    def inverse(self, g):
        return jnp.linalg.inv(jnp.asarray(g, _F64))

    def compose(self, g, h):
        return jnp.asarray(g, _F64) @ jnp.asarray(h, _F64)

    def Ad(self, g):
        """Matrix of Ad_g, (d, d): Ad_g η = vee(g hat(η) g⁻¹)."""
        g = jnp.asarray(g, _F64)
        gi = self.inverse(g)
        return jax.vmap(lambda E: self.vee(g @ E @ gi), out_axes=1)(self.basis())

    def Ad_star(self, g, mu):
        """Ad*_g μ = Ad_gᵀ μ, (d,)."""
        return self.Ad(g).T @ jnp.asarray(mu, _F64)

    def membership_defect(self, g):
        """A scalar that is 0 (to round-off) exactly when g is in the group."""
        raise NotImplementedError

    # --- exponential and Cayley maps -------------------------------------------------------------
    def exp(self, xi):
        return jsl.expm(self.hat(jnp.asarray(xi, _F64)))

    def log(self, g):
        raise NotImplementedError

    def dexp(self, xi):
        """Right-trivialised tangent of exp, φ(ad_ξ) = Σ_j ad_ξ^j/(j+1)!, (d, d): the upper-right
        block of expm([[ad_ξ, I], [0, 0]])."""
        d = self.dim
        A = self.ad(jnp.asarray(xi, _F64))
        big = jnp.zeros((2 * d, 2 * d), _F64).at[:d, :d].set(A).at[:d, d:].set(jnp.eye(d, dtype=_F64))
        return jsl.expm(big)[:d, d:]

    def dexp_inv(self, xi):
        """Inverse of :meth:`dexp` (= Σ_j B_j ad_ξ^j/j! for ‖ad_ξ‖ < 2π), (d, d), by a solve."""
        return jnp.linalg.inv(self.dexp(jnp.asarray(xi, _F64)))

    def cayley(self, xi):
        """cay(ξ) = (I − X/2)⁻¹(I + X/2), (N, N)."""
        X = self.hat(jnp.asarray(xi, _F64))
        eye = jnp.eye(self.matrix_size, dtype=_F64)
        return jnp.linalg.solve(eye - 0.5 * X, eye + 0.5 * X)

    def cayley_inv(self, g):
        """ξ with cay(ξ) = g: X = 2(I + g)⁻¹(g − I), (d,)."""
        g = jnp.asarray(g, _F64)
        eye = jnp.eye(self.matrix_size, dtype=_F64)
        return self.vee(2.0 * jnp.linalg.solve(eye + g, g - eye))

    def dcay(self, xi):
        """Right-trivialised tangent of cay, η ↦ vee((I − X/2)⁻¹ hat(η) (I + X/2)⁻¹), (d, d)."""
        X = self.hat(jnp.asarray(xi, _F64))
        eye = jnp.eye(self.matrix_size, dtype=_F64)
        L, Rr = jnp.linalg.inv(eye - 0.5 * X), jnp.linalg.inv(eye + 0.5 * X)
        return jax.vmap(lambda E: self.vee(L @ E @ Rr), out_axes=1)(self.basis())

    def dcay_inv(self, xi):
        """Inverse of :meth:`dcay`, η ↦ vee((I − X/2) hat(η) (I + X/2)), (d, d)."""
        X = self.hat(jnp.asarray(xi, _F64))
        eye = jnp.eye(self.matrix_size, dtype=_F64)
        return jax.vmap(lambda E: self.vee((eye - 0.5 * X) @ E @ (eye + 0.5 * X)), out_axes=1)(self.basis())

    def left_gradient(self, f, g):
        """⟨∇f(g), η⟩ = d/dε f(g exp(εη̂)) at ε = 0, (d,), by autodiff along g(I + εη̂)."""
        g = jnp.asarray(g, _F64)
        return jax.grad(lambda eta: f(g @ (jnp.eye(self.matrix_size, dtype=_F64) + self.hat(eta))))(
            jnp.zeros((self.dim,), _F64))

    def __repr__(self):
        return f"<matrix Lie group {self.name}: dim {self.dim}, {self.matrix_size}×{self.matrix_size}>"


def _rotation_defect(R):
    n = R.shape[-1]
    return jnp.linalg.norm(R.T @ R - jnp.eye(n, dtype=_F64)) + jnp.abs(jnp.linalg.det(R) - 1.0)


class SpecialOrthogonal(MatrixLieGroup):
    """SO(n), n ≥ 2: d = n(n − 1)/2; hat(ξ)[j, i] = ξ_k = −hat(ξ)[i, j] over the pairs i < j in
    lexicographic order. The logarithm by inverse scaling and squaring (for rotation angles < π)."""

    def __init__(self, n: int):
        if int(n) != n or n < 2:
            raise InputError(f"SO(n) needs an integer n ≥ 2; got {n!r}")
        self.n = self.matrix_size = int(n)
        self.dim = self.n * (self.n - 1) // 2
        self.name = f"SO({self.n})"
        self._pairs = tuple(itertools.combinations(range(self.n), 2))
        self._rows = jnp.array([j for _, j in self._pairs])
        self._cols = jnp.array([i for i, _ in self._pairs])

    def hat(self, xi):
        xi = jnp.asarray(xi, _F64)
        X = jnp.zeros((self.n, self.n), _F64).at[self._rows, self._cols].set(xi)
        return X - X.T

    def vee(self, X):
        X = jnp.asarray(X, _F64)
        return 0.5 * (X[self._rows, self._cols] - X[self._cols, self._rows])

    def inverse(self, g):
        return jnp.asarray(g, _F64).T

    def membership_defect(self, g):
        return _rotation_defect(jnp.asarray(g, _F64))

    def log(self, g, squarings: int = 6, terms: int = 20):
        """vee(log g) for a rotation with angles < π: 2^k log(g^{1/2^k}), the square roots by the
        Denman–Beavers iteration and log(I + E) by its series."""
        Y = jnp.asarray(g, _F64)
        eye = jnp.eye(self.n, dtype=_F64)
        for _ in range(squarings):
            Z = eye
            for _ in range(12):
                Y, Z = 0.5 * (Y + jnp.linalg.inv(Z)), 0.5 * (Z + jnp.linalg.inv(Y))
        E = Y - eye
        out, power = jnp.zeros_like(E), eye
        for j in range(1, terms + 1):
            power = power @ E
            out = out + ((-1.0) ** (j + 1) / j) * power
        return self.vee((2.0 ** squarings) * out)


class SO3(SpecialOrthogonal):
    """SO(3) with the conventions and closed forms of :mod:`dalembert.lie.so3` (ξ = w, hat(w)v = w × v)."""

    def __init__(self):
        super().__init__(3)
        self.name = "SO(3)"

    def hat(self, xi):
        return so3.hat(xi)

    def vee(self, X):
        return so3.vee(X)

    def ad(self, xi):
        return so3.ad(xi)

    def ad_star(self, xi, mu):
        return so3.ad_star(xi, mu)

    def Ad(self, g):
        return so3.Ad(g)

    def exp(self, xi):
        return so3.exp(xi)

    def log(self, g):
        return so3.log(g)

    def dexp(self, xi):
        return so3.dexp(xi)

    def dexp_inv(self, xi):
        return so3.dexp_inv(xi)

    def cayley(self, xi):
        return so3.cayley(xi)

    def cayley_inv(self, g):
        return so3.cayley_inv(g)

    def dcay(self, xi):
        return so3.dcay(xi)

    def dcay_inv(self, xi):
        return so3.dcay_inv(xi)


class _SpecialEuclidean(MatrixLieGroup):
    """SE(k) = {[[R, t], [0, 1]]}, R ∈ SO(k): the inverse and the membership defect (k = matrix_size − 1)."""

    def inverse(self, g):
        g = jnp.asarray(g, _F64)
        k = self.matrix_size - 1
        R, t = g[:k, :k], g[:k, k]
        return jnp.eye(k + 1, dtype=_F64).at[:k, :k].set(R.T).at[:k, k].set(-R.T @ t)

    def membership_defect(self, g):
        g = jnp.asarray(g, _F64)
        k = self.matrix_size - 1
        return _rotation_defect(g[:k, :k]) + jnp.linalg.norm(g[k] - jnp.eye(k + 1, dtype=_F64)[k])


class SE2(_SpecialEuclidean):
    """SE(2) = {[[R, t], [0, 1]]}: ξ = (v1, v2, ω), hat(ξ) = [[0, −ω, v1], [ω, 0, v2], [0, 0, 0]]."""

    name, dim, matrix_size = "SE(2)", 3, 3

    def hat(self, xi):
        xi = jnp.asarray(xi, _F64)
        z = jnp.zeros((), _F64)
        return jnp.array([[z, -xi[2], xi[0]], [xi[2], z, xi[1]], [z, z, z]])

    def vee(self, X):
        X = jnp.asarray(X, _F64)
        return jnp.stack([X[0, 2], X[1, 2], 0.5 * (X[1, 0] - X[0, 1])])

    @staticmethod
    def _V(th):
        """[[a, −b], [b, a]] with a = sin θ/θ, b = (1 − cos θ)/θ = 2 sin²(θ/2)/θ (Taylor series, to
        θ⁸ and θ⁹, for |θ| < 0.05)."""
        small = jnp.abs(th) < 0.05            # the closed forms' derivatives lose ε/θ below this
        ts = jnp.where(small, 1.0, th)
        t2 = th * th
        a_ser = 1.0 - t2 / 6.0 * (1.0 - t2 / 20.0 * (1.0 - t2 / 42.0 * (1.0 - t2 / 72.0)))
        b_ser = th / 2.0 * (1.0 - t2 / 12.0 * (1.0 - t2 / 30.0 * (1.0 - t2 / 56.0 * (1.0 - t2 / 90.0))))
        a = jnp.where(small, a_ser, jnp.sin(ts) / ts)
        b = jnp.where(small, b_ser, 2.0 * jnp.sin(0.5 * ts) ** 2 / ts)
        return jnp.array([[a, -b], [b, a]])

    def exp(self, xi):
        xi = jnp.asarray(xi, _F64)
        th = xi[2]
        R = jnp.array([[jnp.cos(th), -jnp.sin(th)], [jnp.sin(th), jnp.cos(th)]])
        return jnp.eye(3, dtype=_F64).at[:2, :2].set(R).at[:2, 2].set(self._V(th) @ xi[:2])

    def log(self, g):
        g = jnp.asarray(g, _F64)
        th = jnp.arctan2(g[1, 0], g[0, 0])
        return jnp.concatenate([jnp.linalg.solve(self._V(th), g[:2, 2]), th[None]])


class SE3(_SpecialEuclidean):
    """SE(3) = {[[R, t], [0, 1]]}: ξ = (v, w), hat(ξ) = [[ŵ, v], [0, 0]] (translation first)."""

    name, dim, matrix_size = "SE(3)", 6, 4

    def hat(self, xi):
        xi = jnp.asarray(xi, _F64)
        return jnp.zeros((4, 4), _F64).at[:3, :3].set(so3.hat(xi[3:])).at[:3, 3].set(xi[:3])

    def vee(self, X):
        X = jnp.asarray(X, _F64)
        return jnp.concatenate([X[:3, 3], so3.vee(0.5 * (X[:3, :3] - X[:3, :3].T))])

    def exp(self, xi):
        xi = jnp.asarray(xi, _F64)
        w = xi[3:]
        return jnp.eye(4, dtype=_F64).at[:3, :3].set(so3.exp(w)).at[:3, 3].set(so3.dexp(w) @ xi[:3])

    def log(self, g):
        g = jnp.asarray(g, _F64)
        w = so3.log(g[:3, :3])
        return jnp.concatenate([so3.dexp_inv(w) @ g[:3, 3], w])


def SO(n: int) -> MatrixLieGroup:
    """SO(n); SO(3) with the :mod:`dalembert.lie.so3` conventions."""
    return SO3() if n == 3 else SpecialOrthogonal(n)


def SE(n: int) -> MatrixLieGroup:
    """SE(2) or SE(3)."""
    if n == 2:
        return SE2()
    if n == 3:
        return SE3()
    raise InputError(f"SE(n) is available for n = 2, 3; got {n!r}")


def group(name: str) -> MatrixLieGroup:
    """The group named "SO(n)" / "SOn" (n ≥ 2), "SE(2)", "SE(3)" (case-insensitive)."""
    key = str(name).upper().replace("(", "").replace(")", "").replace(" ", "")
    if key.startswith("SO") and key[2:].isdigit():
        return SO(int(key[2:]))
    if key in ("SE2", "SE3"):
        return SE(int(key[2]))
    raise InputError(f"unknown Lie group {name!r}; choose from: SO(n) (n ≥ 2), SE(2), SE(3)")

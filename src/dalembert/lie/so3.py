"""The rotation group SO(3) and its Lie algebra so(3) ≅ R³.

Conventions (Jiménez–Scheurle 2015 §5.1, docs/theory/jimenez-scheurle2015.md;
Ferraro et al. 2015 Appendix, docs/theory/ferraro2015.md):

* ``hat(w) = [[0,-w3,w2],[w3,0,-w1],[-w2,w1,0]]`` so that ``hat(x) y = x × y`` and
  ``[hat x, hat y] = hat(x × y)``; ``vee`` is its inverse, ``vee(A) = (A[2,1], A[0,2], A[1,0])``.
* so(3)* ≅ R³ through the dot product; the dual of a linear map M on so(3) is Mᵀ.
* A retraction τ: so(3) → SO(3) is a local diffeomorphism with τ(0) = I and τ(w)τ(−w) = I.
  Its **right-trivialised** tangent dτ_w: R³ → R³ is defined by
  ``d/ds τ(w + s z)|_{s=0} = hat(dτ_w z) · τ(w)``; the left-trivialised tangent
  (``τ(w)⁻¹ d/ds τ(w + s z) = hat(dτ^L_w z)``) equals dτ_{−w}.
* ad_w = hat(w) (ad_w z = w × z);  Ad_R = R (Ad_R z = vee(R hat(z) Rᵀ) = R z);
  ad*_w p = p × w;  Ad*_R p = Rᵀ p (the duals through the dot product).

Every function is pure, jit- and vmap-able, float64, and **batched**: vectors have shape
(..., 3) and matrices (..., 3, 3), with any leading batch shape. The arithmetic is written
elementwise (no ``@``/LAPACK), which XLA fuses; see DESIGN.md, "Performance notes".
"""
from __future__ import annotations

import jax.numpy as jnp

_SMALL = 0.2  # |w| below which the series of the exp-map coefficients are used


# ---------------------------------------------------------------------------------------------
# small batched helpers
# ---------------------------------------------------------------------------------------------
def eye(like=None):
    """The 3×3 identity, broadcast to the batch shape of ``like`` (..., 3) if given."""
    I = jnp.eye(3, dtype=jnp.float64)
    if like is None:
        return I
    return jnp.broadcast_to(I, like.shape[:-1] + (3, 3))


def matvec(A, x):
    """A x for A (..., 3, 3), x (..., 3) -> (..., 3) (multiply-and-sum)."""
    return jnp.sum(A * x[..., None, :], axis=-1)


def matmul(A, B):
    """A B for A, B (..., 3, 3) -> (..., 3, 3) (multiply-and-sum)."""
    return jnp.sum(A[..., :, :, None] * B[..., None, :, :], axis=-2)


def transpose(A):
    """Aᵀ of (..., 3, 3)."""
    return jnp.swapaxes(A, -1, -2)


def cross(a, b):
    """a × b for (..., 3) vectors."""
    return jnp.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                      a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                      a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def outer(a, b):
    """a bᵀ for (..., 3) vectors -> (..., 3, 3)."""
    return a[..., :, None] * b[..., None, :]


def _sq(w):
    return jnp.sum(w * w, axis=-1)


# ---------------------------------------------------------------------------------------------
# hat / vee, ad, Ad
# ---------------------------------------------------------------------------------------------
def hat(w):
    """The skew matrix of w: (..., 3) -> (..., 3, 3), ``hat(w) y = w × y``."""
    w = jnp.asarray(w, jnp.float64)
    z = jnp.zeros_like(w[..., 0])
    w1, w2, w3 = w[..., 0], w[..., 1], w[..., 2]
    return jnp.stack([jnp.stack([z, -w3, w2], -1),
                      jnp.stack([w3, z, -w1], -1),
                      jnp.stack([-w2, w1, z], -1)], axis=-2)


def vee(A):
    """Inverse of :func:`hat`: (..., 3, 3) -> (..., 3), ``(A[2,1], A[0,2], A[1,0])``.

    Only the skew part of A matters if A is skew; for a general A this reads those three entries.
    """
    A = jnp.asarray(A, jnp.float64)
    return jnp.stack([A[..., 2, 1], A[..., 0, 2], A[..., 1, 0]], axis=-1)


def ad(w):
    """Matrix of ad_w on so(3) ≅ R³: ad_w z = [w, z] = w × z, i.e. hat(w). (..., 3) -> (..., 3, 3)."""
    return hat(w)


def ad_star(w, p):
    """Coadjoint action of the algebra, ad*_w p = p × w (so that <ad*_w p, z> = <p, w × z>).

    w, p: (..., 3) -> (..., 3).  Source: Jiménez–Scheurle 2015 §5.2 (42).
    """
    return cross(p, w)


def Ad(R):
    """Matrix of Ad_R on so(3) ≅ R³: Ad_R z = vee(R hat(z) Rᵀ) = R z, i.e. R itself. (..., 3, 3)."""
    return jnp.asarray(R, jnp.float64)


def Ad_star(R, p):
    """Coadjoint action Ad*_R p = Rᵀ p (dual of Ad_R).  R (..., 3, 3), p (..., 3) -> (..., 3)."""
    return matvec(transpose(R), p)


coadjoint = Ad_star


# ---------------------------------------------------------------------------------------------
# Cayley map
# ---------------------------------------------------------------------------------------------
def cayley(w):
    """Cayley retraction cay(w) = (I − ŵ/2)⁻¹(I + ŵ/2) = I + (ŵ + ŵ²/2)/(1 + |w|²/4) ∈ SO(3).

    w: (..., 3) -> (..., 3, 3).  Source: Jiménez–Scheurle 2015 §5.1; Ferraro et al. 2015 (Appendix).
    """
    w = jnp.asarray(w, jnp.float64)
    W = hat(w)
    W2 = outer(w, w) - _sq(w)[..., None, None] * eye(w)   # ŵ² = w wᵀ − |w|² I
    return eye(w) + (W + 0.5 * W2) / (1.0 + 0.25 * _sq(w))[..., None, None]


def cayley_inv(R):
    """Inverse Cayley map cay⁻¹(R) = 2 vee(R − Rᵀ)/(1 + tr R)  (rotation angle ≠ π).

    R: (..., 3, 3) -> (..., 3).  Source: Jiménez–Scheurle 2015 §5.1.
    """
    R = jnp.asarray(R, jnp.float64)
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    return 2.0 * vee(R - transpose(R)) / (1.0 + tr)[..., None]


def dcay(w):
    """Right-trivialised tangent of cay: dcay_w = (I + ŵ/2)/(1 + |w|²/4).  (..., 3) -> (..., 3, 3).

    ``d/ds cay(w + s z)|₀ = hat(dcay_w z) cay(w)``.  Source: Ferraro et al. 2015 (Appendix);
    Jiménez–Scheurle 2015 §5.1.
    """
    w = jnp.asarray(w, jnp.float64)
    return (eye(w) + 0.5 * hat(w)) / (1.0 + 0.25 * _sq(w))[..., None, None]


def dcay_inv(w):
    """Inverse of :func:`dcay`: dcay⁻¹_w = I − ŵ/2 + w wᵀ/4.  (..., 3) -> (..., 3, 3).

    Its transpose is dcay⁻¹_{−w}.  Source: Jiménez–Scheurle 2015 §5.1 and (57), with the (3,3) entry
    1 + ε²w3²/4, not the printed 0 (erratum E1, docs/theory/jimenez-scheurle2015.md#e1).
    """
    w = jnp.asarray(w, jnp.float64)
    return eye(w) - 0.5 * hat(w) + 0.25 * outer(w, w)


def dcay_left(w):
    """Left-trivialised tangent of cay, ``cay(w)⁻¹ d/ds cay(w + s z) = hat(dcay_left_w z)``; = dcay_{−w}."""
    return dcay(-jnp.asarray(w, jnp.float64))


def dcay_left_inv(w):
    """Inverse of :func:`dcay_left`; = dcay⁻¹_{−w}."""
    return dcay_inv(-jnp.asarray(w, jnp.float64))


# ---------------------------------------------------------------------------------------------
# exponential map
# ---------------------------------------------------------------------------------------------
def _exp_coeffs(w):
    """θ = |w| and s = sinθ/θ, a = (1 − cosθ)/θ², b = (θ − sinθ)/θ³, c = (1 − (θ/2)cot(θ/2))/θ².

    Series for small θ (no cancellation); safe at θ = 0 under differentiation.
    """
    th2 = _sq(w)
    small = th2 < _SMALL ** 2
    th2s = jnp.where(small, 1.0, th2)          # keep the non-series branch away from 0
    th = jnp.sqrt(th2s)
    half = 0.5 * th
    s_full = jnp.sin(th) / th
    a_full = 2.0 * (jnp.sin(half) / th) ** 2   # (1 − cos θ)/θ² without cancellation
    b_full = (th - jnp.sin(th)) / (th * th2s)
    c_full = (1.0 - half * jnp.cos(half) / jnp.sin(half)) / th2s
    t = jnp.where(small, th2, 0.0)
    s_ser = 1.0 - t / 6.0 + t * t / 120.0 - t ** 3 / 5040.0 + t ** 4 / 362880.0 - t ** 5 / 39916800.0
    a_ser = 0.5 - t / 24.0 + t * t / 720.0 - t ** 3 / 40320.0 + t ** 4 / 3628800.0 - t ** 5 / 479001600.0
    b_ser = 1.0 / 6.0 - t / 120.0 + t * t / 5040.0 - t ** 3 / 362880.0 + t ** 4 / 39916800.0
    c_ser = 1.0 / 12.0 + t / 720.0 + t * t / 30240.0 + t ** 3 / 1209600.0 + t ** 4 / 47900160.0
    pick = lambda ser, full: jnp.where(small, ser, full)  # noqa: E731
    return pick(s_ser, s_full), pick(a_ser, a_full), pick(b_ser, b_full), pick(c_ser, c_full)


def _hat2(w):
    return outer(w, w) - _sq(w)[..., None, None] * eye(w)


def exp(w):
    """Exponential map (Rodrigues): exp(ŵ) = I + (sinθ/θ) ŵ + ((1 − cosθ)/θ²) ŵ², θ = |w|.

    w: (..., 3) -> (..., 3, 3).
    """
    w = jnp.asarray(w, jnp.float64)
    s, a, _, _ = _exp_coeffs(w)
    return eye(w) + s[..., None, None] * hat(w) + a[..., None, None] * _hat2(w)


def log(R):
    """Logarithm: the w with |w| ≤ π and exp(ŵ) = R.  R: (..., 3, 3) -> (..., 3).

    θ = atan2(|vee(R − Rᵀ)|/2, (tr R − 1)/2); near θ = π the axis is taken from the symmetric
    part (R + Rᵀ)/2 = cosθ I + (1 − cosθ) n nᵀ, with its sign from vee(R − Rᵀ).
    """
    R = jnp.asarray(R, jnp.float64)
    v = 0.5 * vee(R - transpose(R))                      # sinθ · n
    sin_t = jnp.sqrt(_sq(v))
    cos_t = 0.5 * (R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2] - 1.0)
    th = jnp.arctan2(sin_t, cos_t)
    # regular branch: w = θ / sinθ · v
    small = sin_t < 1e-8
    factor = jnp.where(small, 1.0, th / jnp.where(small, 1.0, sin_t))   # θ/sinθ = 1 + O(θ²)
    w_reg = factor[..., None] * v
    # near-π branch
    S = 0.5 * (R + transpose(R)) - cos_t[..., None, None] * eye(v)
    diag = jnp.stack([S[..., 0, 0], S[..., 1, 1], S[..., 2, 2]], axis=-1)
    i = jnp.argmax(diag, axis=-1)
    i = i[..., None]
    col = jnp.where(i == 0, S[..., :, 0], jnp.where(i == 1, S[..., :, 1], S[..., :, 2]))
    col = jnp.where(jnp.sum(col * v, axis=-1, keepdims=True) < 0, -col, col)
    n = col / jnp.sqrt(jnp.maximum(_sq(col), 1e-300))[..., None]
    w_pi = th[..., None] * n
    near_pi = cos_t < -0.9
    return jnp.where(near_pi[..., None], w_pi, w_reg)


def dexp(w):
    """Right-trivialised tangent of exp: dexp_w = I + ((1 − cosθ)/θ²) ŵ + ((θ − sinθ)/θ³) ŵ²
    = Σ_j ad_w^j/(j+1)!.  (..., 3) -> (..., 3, 3).

    ``d/ds exp(w + s z)|₀ = hat(dexp_w z) exp(w)``.  Source: Ferraro et al. 2015 (Appendix);
    the closed form is ours (docs/theory/ferraro2015.md).
    """
    w = jnp.asarray(w, jnp.float64)
    _, a, b, _ = _exp_coeffs(w)
    return eye(w) + a[..., None, None] * hat(w) + b[..., None, None] * _hat2(w)


def dexp_inv(w):
    """Inverse of :func:`dexp`: dexp⁻¹_w = I − ŵ/2 + ((1 − (θ/2)cot(θ/2))/θ²) ŵ²
    = Σ_j B_j/j! ad_w^j (B₁ = −½).  Singular at θ = 2π.  (..., 3) -> (..., 3, 3).
    """
    w = jnp.asarray(w, jnp.float64)
    _, _, _, c = _exp_coeffs(w)
    return eye(w) - 0.5 * hat(w) + c[..., None, None] * _hat2(w)


def dexp_left(w):
    """Left-trivialised tangent of exp; = dexp_{−w}."""
    return dexp(-jnp.asarray(w, jnp.float64))


def dexp_left_inv(w):
    """Inverse of :func:`dexp_left`; = dexp⁻¹_{−w}."""
    return dexp_inv(-jnp.asarray(w, jnp.float64))


# ---------------------------------------------------------------------------------------------
# distances (Jiménez–Scheurle 2015 §5.3, (37)–(38); erratum E7, docs/theory/jimenez-scheurle2015.md#e7)
# ---------------------------------------------------------------------------------------------
def orthogonality_defect(R):
    """Self-distance |I − RᵀR|_F (0 exactly for orthogonal R).  (..., 3, 3) -> (...)."""
    R = jnp.asarray(R, jnp.float64)
    D = eye(R[..., 0]) - matmul(transpose(R), R)
    return jnp.sqrt(jnp.sum(D * D, axis=(-1, -2)))


def distance(R1, R2):
    """dist(R1, R2) = |I − R1ᵀR2|_F (37)–(38); equals |R1 − R2|_F for rotations (erratum E7,
    docs/theory/jimenez-scheurle2015.md#e7)."""
    R1 = jnp.asarray(R1, jnp.float64)
    D = eye(R1[..., 0]) - matmul(transpose(R1), R2)
    return jnp.sqrt(jnp.sum(D * D, axis=(-1, -2)))


def rotation_check(R0, tol: float = 1e-10):
    """Validation of a given orientation (NumPy, not traced): None if R0 (3, 3) is a rotation to
    ``tol`` (|I − R0ᵀR0|_F ≤ tol and det R0 > 0), else the message naming its distance from SO(3)
    and its determinant — shared by every system kind whose state holds an R0."""
    import numpy as np
    R = np.asarray(R0, dtype=float)
    defect = float(np.linalg.norm(np.eye(3) - R.T @ R))
    det = float(np.linalg.det(R))
    if defect <= tol and det > 0:
        return None
    return f"R0 is not a rotation: distance from SO(3) |I − R0ᵀR0|_F = {defect:.3g}, det R0 = {det:.6g}"

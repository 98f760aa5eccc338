"""The Suslov problem in the almost-Poisson ρ form of Celledoni et al. 2019 §4.3.

Celledoni et al. 2019 §4.3 (sign convention: docs/theory/celledoni2019.md#e15): a rigid body with body angular
velocity ω, Lagrangian l(ω) = ½ωᵀ𝕀ω and the constraint ω3 = 0 (a = e3). The distribution is
D = span{X1 = e1, X2 = e2}; the 𝕀-orthogonal complement is spanned by 𝕀⁻¹e3. With I_m the upper
2 × 2 block of 𝕀 (the paper assumes 𝕀12 = 0; here any symmetric positive definite 𝕀):

* ρ = (𝕀ω)_{1:2} = I_m u, u = (ω1, ω2) (ω3 = 0);  𝓗(ρ) = ½ ρᵀ I_m⁻¹ ρ;
* structure functions 𝒞_12 = g_D⁻¹ Xᵀ𝕀[X1, X2] = I_m⁻¹ (𝕀13, 𝕀23) (for 𝕀12 = 0: 𝕀13/𝕀11,
  𝕀23/𝕀22 as printed); s = 𝒞_12 · ρ = 𝕀13 ω1 + 𝕀23 ω2 = (𝕀ω)_3;
* Π(ρ) = [[0, −s], [s, 0]] (there is no q-block), so ρ̇1 = −s u2, ρ̇2 = s u1: the first two
  components of the body-frame Euler–Poincaré–Suslov equations d/dt(𝕀ω) = 𝕀ω × ω + λ e3
  (left-invariant convention; the other one flips the sign of 𝒞).

The DG methods (all three DGs coincide because 𝓗 is quadratic) are the implicit midpoint rule on
this form, energy-exact (Celledoni et al. 2019 §4.3). The state is x = ρ ∈ R² (``dl.integrate(form, method,
x0=rho0, ...)``); :func:`rho_of` and :func:`omega_of` convert from and to ω (3,).

Source: Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.3 (erratum E15,
docs/theory/celledoni2019.md#e15).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..errors import InputError
from ..systems import AlmostPoissonSystem

SOURCE = "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.3"
#: our example inertia (not in the paper; docs/theory/celledoni2019.md):
#: 𝕀11 = 2, 𝕀22 = 3, 𝕀13 = 0.5, 𝕀23 = 0.4 (𝕀33 = 1)
EXAMPLE_INERTIA = np.array([[2.0, 0.0, 0.5], [0.0, 3.0, 0.4], [0.5, 0.4, 1.0]])


def almost_poisson_form(inertia=EXAMPLE_INERTIA, name: str = "suslov/almost-poisson") -> AlmostPoissonSystem:
    """The almost-Poisson system (Π(ρ), 𝓗(ρ)) on ρ ∈ R² of the Suslov problem with a = e3.

    Parameters
    ----------
    inertia : (3, 3) symmetric positive definite inertia tensor 𝕀 (kg m²).

    Returns
    -------
    AlmostPoissonSystem with state x = ρ (2,) and no lift (there is no configuration block); use
    :func:`omega_of` / :func:`rho_of` to convert. It has no constraint residual (ω3 = 0 holds by
    construction). Extra attributes: ``structure`` = 𝒞_12 (2,), ``inertia`` (3, 3).

    Raises
    ------
    InputError for an inertia that is not a symmetric positive definite 3 × 3 matrix.
    """
    I = np.asarray(inertia, dtype=float)
    if I.shape != (3, 3) or not np.all(np.isfinite(I)):
        raise InputError(f"inertia must be a finite (3, 3) array; got shape {I.shape}")
    if np.max(np.abs(I - I.T)) > 1e-12 * max(1.0, np.max(np.abs(I))):
        raise InputError("inertia must be symmetric (use the symmetric equivalent, "
                         "Jiménez–Scheurle 2015 erratum E2, docs/theory/jimenez-scheurle2015.md#e2)")
    if np.linalg.eigvalsh(I)[0] <= 0:
        raise InputError("inertia must be positive definite")
    Im = I[:2, :2]
    Cs = np.linalg.solve(Im, I[:2, 2])              # 𝒞_12 = I_m⁻¹ (𝕀13, 𝕀23)
    Iminv = np.linalg.inv(Im)                        # 2 × 2 constant: a closed form, no solve per step
    Cj, Iinv = jnp.asarray(Cs), jnp.asarray(Iminv)

    def poisson_matrix(rho):
        s = Cj[0] * rho[0] + Cj[1] * rho[1]
        z = jnp.zeros_like(s)
        return jnp.stack([jnp.stack([z, -s]), jnp.stack([s, z])])

    def hamiltonian(rho):
        u = jnp.sum(Iinv * rho[None, :], axis=1)
        return 0.5 * jnp.sum(rho * u)

    form = AlmostPoissonSystem(poisson_matrix, hamiltonian, name)
    form.structure = Cs
    form.inertia = I
    return form


def rho_of(inertia, omega):
    """ρ = (𝕀ω)_{1:2} for ω with ω3 = 0.  (3,) -> (2,) (numpy)."""
    return (np.asarray(inertia, float) @ np.asarray(omega, float))[:2]


def omega_of(inertia, rho):
    """ω = (I_m⁻¹ρ, 0).  (..., 2) -> (..., 3) (numpy)."""
    I = np.asarray(inertia, float)
    u = np.linalg.solve(I[:2, :2], np.asarray(rho, float).T).T
    return np.concatenate([u, np.zeros(u.shape[:-1] + (1,))], axis=-1)

"""Euler's disk: a thin uniform disk rolling on a table with its centre at rest, and Moffatt's air layer.

The disk and its coordinates are those of :mod:`~dalembert.models.tilting_disk` (radius a, mass m,
𝕀 = (m a²/4)(1 − L_y L_yᵀ) + (m a²/2) L_y L_yᵀ; q = (ψ, ϑ, φ, x, y): yaw of the contact tangent Y_x,
lean ϑ of the disk from the vertical, spin φ about the axis L_y, the contact point (x, y)). Moffatt's
angles: α = π/2 − ϑ is the angle between the disk and the table (rad), Ω = ψ̇ the rate at which the
contact line (the tangent Y_x at the contact point P) turns about the vertical (rad/s).

**The relative equilibrium** (the default motion). With the centre C at rest the contact force is
m g e_z (no friction), so the angular momentum about C, ℒ = 𝕀ω, obeys dℒ/dt = (P − C) × m g e_z =
a m g e_z × L_z (P − C = −a L_z). In the steady motion ψ̇ = Ω, ϑ̇ = 0 and C at rest, the centre's
velocity a(ψ̇ sin ϑ + φ̇) Y_x (with ẋ = a φ̇ cos ψ, ẏ = a φ̇ sin ψ) vanishes: φ̇ = −Ω cos α. Then, with
e_z = cos α L_y + sin α L_z, ω = Ω e_z + φ̇ L_y = Ω sin α L_z: the disk turns about the diameter CP
(C and P are both at rest), ℒ = (m a²/4) Ω sin α L_z, and ℒ turns rigidly with the contact line,
dℒ/dt = Ω e_z × ℒ = (m a²/4) Ω² sin α e_z × L_z. Equal to the torque:

    Ω² sin α = 4 g / a          (Moffatt 2000, eq. (1); either sign of Ω),

and the energy E = ½ (m a²/4) Ω² sin²α + m g a sin α = (3/2) m g a sin α (Moffatt's eq. (2)). The
exact solution from ψ0 = φ0 = 0, the contact point at the origin: ψ = Ωt, ϑ = π/2 − α, φ = −Ω cos α t,
(x, y) = a cos α (−sin Ωt, cos Ωt − 1) (the centre at (0, −a cos α)).

**Moffatt's air layer** (parameter ``air_viscosity`` μ, Pa·s). H. K. Moffatt, "Euler's disk and its
finite-time singularity", Nature 404, 833–834 (2000): the air squeezed in the thin wedge between
the disk and the table dissipates energy at the rate Φ = π μ a² g / α² in the quasi-steady motion
(small α), the value that with E ≈ (3/2) m g a α gives his law α³ = (2π μ a / m)(t₀ − t) and spinning
time t₀ = α₀³ m / (2π μ a); with Ω² α = 4g/a it reads

    Φ = π μ a³ Ω² / (4 α).

We write it as the torque the squeeze pressure exerts: the pressure is odd about the contact
diameter, so its torque about C lies along that diameter, opposing the rotation about it,
τ = −κ (ω·L_z) L_z. Since ω·L_z = ψ̇ sin α (e_z·L_z = sin α, Y_x and L_y ⊥ L_z), its generalized force
has one component,

    f_ψ = −(π μ a³ / (4 α)) ψ̇,  f_ϑ = f_φ = f_x = f_y = 0,     power f·q̇ = −Φ

(κ = π μ a³/(4 α sin²α)). In the quasi-steady motion E decreases along the relative equilibria:
(3/2) m g a cos α α̇ = −π μ a² g/(α sin α), i.e. S(α) = ∫₀^α s sin s cos s ds = ¼ (sin 2α / 2 − α cos 2α)
falls linearly, S(α(t)) = (2π μ a / (3 m)) (t₀ − t); S ≈ α³/3 for small α, so α ∝ (t₀ − t)^{1/3} and
Ω ∝ α^{−1/2} ∝ (t₀ − t)^{−1/6} (:func:`quasi_steady_tilt`). The model holds while α changes slowly
over a turn of the contact line (Moffatt; Bildsten, Phys. Rev. E 66, 056309 (2002), for where the
thin-layer assumption fails) and while the fixed step resolves Ω ∝ α^{−1/2}. The Euler angles are
singular where the disk lies flat (α = 0).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .base import Model, ModelSpec, Parameter, positive, register
from . import tilting_disk

SOURCE = ("H. K. Moffatt, Euler's disk and its finite-time singularity, Nature 404, 833–834 (2000), "
          "eqs. (1)–(2) and the air-layer dissipation; the rolling disk: Neimark & Fufaev, Dynamics of "
          "Nonholonomic Systems, 1972, Ch. III")


def _tilt_check(x):
    return None if 0.0 < x < 0.5 * np.pi else "must lie in (0, π/2) rad (the angle between disk and table)"


def _non_negative(x):
    return None if x >= 0.0 else "must be ≥ 0 (0: no air layer, the conservative disk)"


def _params(p) -> dict:
    """The tilting disk's parameters {m, r, g} from this model's {m, a, g}."""
    return {"m": p["m"], "r": p["a"], "g": p["g"]}


def tilt(q):
    """α = π/2 − ϑ (rad), the angle between disk and table, of states q (…, 5)."""
    return 0.5 * np.pi - q[..., 1]


def precession_rate(v):
    """Ω = ψ̇ (rad/s), the turning rate of the contact line, of velocities v (…, 5)."""
    return v[..., 0]


def steady_rate(alpha, a, g):
    """Ω > 0 (rad/s) of the relative equilibrium with tilt α (rad): Ω² sin α = 4 g / a."""
    return np.sqrt(4.0 * g / (a * np.sin(alpha)))


def relative_equilibrium(p, alpha=None, sign: float = 1.0):
    """(q0, v0) (5,) of the steady motion with the centre at rest and tilt ``alpha`` (default
    p["alpha"]): ψ = φ = 0, ϑ = π/2 − α, the contact point at the origin, ψ̇ = ±Ω (``sign``),
    φ̇ = −ψ̇ cos α, (ẋ, ẏ) from the rolling constraint (module doc)."""
    alpha = p["alpha"] if alpha is None else float(alpha)
    Om = sign * steady_rate(alpha, p["a"], p["g"])
    q0 = np.array([0.0, 0.5 * np.pi - alpha, 0.0, 0.0, 0.0])
    system = tilting_disk._system(_params(p))
    return q0, tilting_disk.initial_velocity(system, q0, Om, 0.0, -Om * np.cos(alpha))


def air_layer_force(p):
    """Moffatt's air-layer force f(q, v, t) (5,) (N·m on ψ): f_ψ = −(π μ a³ / (4 α)) ψ̇, the rest 0
    (module doc); its power is −Φ = −π μ a³ ψ̇² / (4 α). Traceable."""
    c = np.pi * p["air_viscosity"] * p["a"] ** 3 / 4.0

    def force(q, v, t):
        alpha = 0.5 * jnp.pi - q[1]
        return jnp.zeros(5).at[0].set(-c * v[0] / alpha)
    return force


def dissipation(p, q, v):
    """Φ = π μ a³ Ω² / (4 α) (W) at states (…, 5): the power the air layer removes."""
    return np.pi * p["air_viscosity"] * p["a"] ** 3 * precession_rate(v) ** 2 / (4.0 * tilt(q))


def quasi_steady_tilt(p, alpha0, t):
    """α(t) (rad) of the quasi-steady (adiabatic) law from α(0) = alpha0: S(α) = S(α0) −
    (2π μ a / (3 m)) t with S(α) = ¼ (sin 2α / 2 − α cos 2α) (module doc), solved by bisection
    (S is increasing on (0, π/2)); NaN past the singularity t₀ = 3 m S(α0) / (2π μ a). t (N,)."""
    S = lambda x: 0.25 * (0.5 * np.sin(2.0 * x) - x * np.cos(2.0 * x))  # noqa: E731
    target = S(alpha0) - 2.0 * np.pi * p["air_viscosity"] * p["a"] / (3.0 * p["m"]) * np.asarray(t, float)
    lo, hi = np.zeros_like(target), np.full_like(target, 0.5 * np.pi)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        up = S(mid) < target
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return np.where(target > 0, 0.5 * (lo + hi), np.nan)


def singularity_time(p, alpha0):
    """t₀ = 3 m S(α0) / (2π μ a) (s) of the quasi-steady law (≈ α0³ m / (2π μ a), Moffatt)."""
    S = 0.25 * (0.5 * np.sin(2.0 * alpha0) - alpha0 * np.cos(2.0 * alpha0))
    return 3.0 * p["m"] * S / (2.0 * np.pi * p["air_viscosity"] * p["a"])


def _system(p):
    force = air_layer_force(p) if p.get("air_viscosity", 0.0) else None
    return tilting_disk._system(_params(p), force=force, name="eulers-disk")


def _exact(p, system):
    a, g = p["a"], p["g"]

    def exact_solution(t, q0, v0):
        """(q, v) (N, 5) at times t: the relative equilibrium through (q0, v0) in closed form when
        (q0, v0) is one (ϑ̇ = 0, the centre at rest, ψ̇² cos ϑ = 4g/a, to 1e-10 relative); any other
        state: the index-1 reference (DOP853, rtol = atol = 1e-13)."""
        t = np.asarray(t, float)
        q0, v0 = np.asarray(q0, float), np.asarray(v0, float)
        psi0, th, phi0 = q0[:3]
        Om = v0[0]
        ok = (abs(v0[1]) <= 1e-10 * abs(Om) and abs(v0[2] + Om * np.sin(th)) <= 1e-10 * abs(Om)
              and abs(Om * Om * np.cos(th) - 4.0 * g / a) <= 1e-10 * 4.0 * g / a)
        if not ok:
            from ..systems.index1_ode import reference_solution
            q, v, _ = reference_solution(system, q0, v0, t)
            return q, v
        rho = a * np.sin(th)                                  # radius of the contact point's circle
        c = q0[3:] + rho * np.array([np.sin(psi0), -np.cos(psi0)])     # the centre (at rest)
        psi = psi0 + Om * (t - t[0])
        phi = phi0 - Om * np.sin(th) * (t - t[0])
        x, y = c[0] - rho * np.sin(psi), c[1] + rho * np.cos(psi)
        q = np.stack([psi, np.full_like(t, th), phi, x, y], axis=1)
        v = np.stack([np.full_like(t, Om), 0.0 * t, np.full_like(t, -Om * np.sin(th)),
                      -rho * Om * np.cos(psi), -rho * Om * np.sin(psi)], axis=1)
        return q, v
    return exact_solution


def _round_step(h):
    """The largest of 1, 2, 5 × 10^k not above h (a step that divides round final times)."""
    e = 10.0 ** np.floor(np.log10(h))
    return float(max(c * e for c in (1.0, 2.0, 5.0) if c * e <= h))


def _build(p):
    system = _system(p)
    q0, v0 = relative_equilibrium(p)
    conservative = not p["air_viscosity"]
    Om = steady_rate(p["alpha"], p["a"], p["g"])
    return Model("eulers-disk", p, system, q0, v0, ("psi", "theta", "phi", "x", "y"), SOURCE,
                 path=(3, 4), exact_solution=_exact(p, system) if conservative else None,
                 invariants={"energy": system.energy} if conservative else {},
                 default_method="nh-rattle-4", default_options={"compensated_newton": True},
                 default_h=_round_step(0.05 / Om), default_t_final=10.0,
                 convergence_methods=("nh-rattle-sym", "nh-rattle-4"),
                 notes="The relative equilibrium Ω² sin α = 4g/a with the centre at rest (α = π/2 − θ the "
                       "angle between disk and table, Ω = dψ/dt); the exact solution is that motion "
                       "(other states: the DOP853 reference). air_viscosity > 0: Moffatt's air layer, "
                       "f_ψ = −π μ a³ ψ̇/(4α), toward the finite-time singularity; default h: 0.05/Ω rounded down to 1, 2 or 5 × 10^k.")


register(ModelSpec(
    "eulers-disk", "Euler's disk (a thin disk rolling with its centre at rest; Moffatt's air layer)",
    (Parameter("alpha", 0.3, "tilt: the angle between disk and table", "rad", _tilt_check),
     Parameter("a", 0.5, "radius", "m", positive), Parameter("m", 1.0, "mass", "kg", positive),
     Parameter("g", 9.81, "gravitational acceleration", "m/s²", positive),
     Parameter("air_viscosity", 0.0, "dynamic viscosity of the air layer (Moffatt); 0: conservative",
               "Pa·s", _non_negative)),
    _build, SOURCE, "The steady motion Ω² sin α = 4g/a of a thin rolling disk with its centre at rest "
    "(exact solution); with air_viscosity > 0, Moffatt's viscous air layer drives it to the finite-time "
    "singularity α ∝ (t₀ − t)^{1/3}, Ω ∝ (t₀ − t)^{−1/6}.", system=_system))

"""The snakeboard on SE(2) × T², coordinates q = (x, y, θ, ψ, φ).

Ferraro, Iglesias-Ponte, Martín de Diego, Nonlinearity 21 (2008) Example 2
(§5, Fig. 3). (x, y) is the board centre (the centre
of mass), θ the board angle, ψ the rotor angle, ±φ the wheel-axle angles relative to the board, r
the centre-to-axle distance. The paper's Lagrangian (the rotor term is ½J₀ψ̇², not
½J₀(θ̇ + ψ̇)²; note A12 of docs/theory/ferraro2008.md):

    L = ½m(ẋ² + ẏ²) + ½(J + 2J₁)θ̇² + ½J₀ψ̇² + J₁φ̇²,   metric 𝕀 = diag(m, m, J', J₀, 2J₁), J' = J + 2J₁,

constraints (no lateral sliding of either axle)

    ẋ sin(θ+φ) − ẏ cos(θ+φ) + rθ̇ cos φ = 0,     ẋ sin(θ−φ) − ẏ cos(θ−φ) − rθ̇ cos φ = 0.

With a = r cosθ cosφ, b = r sinθ cosφ, c = −sin φ: D = span{∂ψ, ∂φ, a∂x + b∂y + c∂θ}. The paper
prints the projector Q onto D⊥ (on vectors): :func:`projector_Q_printed`. The metric is constant
and V = 0, so every GNI of the library is the paper's explicit update Δq_k = (Id − 2Q(q_k))Δq_{k−1}.

No parameters, data or experiment are in the paper; the defaults are our own test values
(docs/theory/ferraro2008.md): m = 1, J = 0.5, J₀ = 0.3, J₁ = 0.1, r = 0.7; q0 = (0, 0, 0, 0, 0.3),
v0 = (a, b, c, 0, 0)(q0) + (0, 0, 0, 2, 0): the rotor spins, the wheel angle φ stays at 0.3. No exact
solution. The axle momentum 2J₁φ̇ is conserved, so φ̇0 ≠ 0 takes φ through ±π/2, where the two
wheel constraints are parallel (μ has rank 1): the index-1 reference ODE stops there and no method
is accurate across it (with φ̇0 = 0.5, at t ≈ 2.5). Default method ``nh-rattle-4``: over t = 200
(θ turns by −59 rad) it follows the reference to 2e-9, where ``nh-rattle`` at the same h is off by 76.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("Ferraro, Iglesias-Ponte, Martín de Diego, Nonlinearity 21 (2008), Example 2 "
          "(§5; parameters: our test values, docs/theory/ferraro2008.md)")


def metric(p):
    """The constant metric 𝕀 = diag(m, m, J + 2J₁, J₀, 2J₁), (5, 5)."""
    return np.diag([p["m"], p["m"], p["J"] + 2 * p["J1"], p["J0"], 2 * p["J1"]])


def constraint_matrix(p):
    """q -> μ(q), (2, 5)."""
    r = p["r"]

    def mu(q):
        th, ph = q[2], q[4]
        z = jnp.zeros_like(th)
        return jnp.stack([
            jnp.stack([jnp.sin(th + ph), -jnp.cos(th + ph), r * jnp.cos(ph), z, z]),
            jnp.stack([jnp.sin(th - ph), -jnp.cos(th - ph), -r * jnp.cos(ph), z, z])])
    return mu


def abc(p, q):
    """(a, b, c) = (r cosθ cosφ, r sinθ cosφ, −sin φ): the drive direction a∂x + b∂y + c∂θ ∈ D."""
    th, ph = q[2], q[4]
    return (p["r"] * np.cos(th) * np.cos(ph), p["r"] * np.sin(th) * np.cos(ph), -np.sin(ph))


def projector_Q_printed(p, q):
    """The paper's printed projector onto D⊥ acting on vectors (not symmetric), (5, 5)."""
    a, b, c = abc(p, q)
    m, Jp = p["m"], p["J"] + 2 * p["J1"]
    den = Jp * c * c + m * (a * a + b * b)
    Q = np.zeros((5, 5))
    Q[:3, :3] = [[Jp * c * c + m * b * b, -m * a * b, -Jp * a * c],
                 [-m * a * b, Jp * c * c + m * a * a, -Jp * b * c],
                 [-m * a * c, -m * b * c, m * (a * a + b * b)]]
    return Q / den


def turning_wheels_state(p) -> tuple:
    """(q0, v0) with the wheels turning, φ̇0 = 0.5: the data of our Theorem 2 experiment
    (``ferraro2008-theorem2-complement``), whose SE(2) momentum varies more. φ passes π/2 at
    t ≈ 2.54, where the wheel constraints are parallel; the explicit GNI update steps across it."""
    q0 = np.array([0.0, 0.0, 0.0, 0.0, 0.3])
    a, b, c = abc(p, q0)
    return q0, np.array([a, b, c, 0.0, 0.0]) + np.array([0.0, 0.0, 0.0, 2.0, 0.5])


def _build(p):
    system = NonholonomicSystem(mass_matrix=metric(p), constraint_matrix=constraint_matrix(p),
                                name="snakeboard")
    q0 = np.array([0.0, 0.0, 0.0, 0.0, 0.3])
    a, b, c = abc(p, q0)
    v0 = np.array([a, b, c, 0.0, 0.0]) + np.array([0.0, 0.0, 0.0, 2.0, 0.0])
    return Model("snakeboard", p, system, q0, v0, ("x", "y", "theta", "psi", "phi"), SOURCE,
                 invariants={"energy": system.energy,
                             "rotor momentum J0 ψ̇": lambda q, v: p["J0"] * v[3],
                             "axle momentum 2J1 φ̇": lambda q, v: 2 * p["J1"] * v[4]},
                 default_method="nh-rattle-4", default_h=0.05, default_t_final=200.0,
                 notes="Rotor kinetic energy ½J₀ψ̇² as in the paper (docs/theory/ferraro2008.md, note A12).")


register(ModelSpec(
    "snakeboard", "Snakeboard (SE(2) × T², Ferraro et al. 2008 Example 2)",
    (Parameter("m", 1.0, "total mass", "kg", positive),
     Parameter("J", 0.5, "board inertia (incl. axles about the centre)", "kg m²", positive),
     Parameter("J0", 0.3, "rotor inertia", "kg m²", positive),
     Parameter("J1", 0.1, "inertia of each wheel axle", "kg m²", positive),
     Parameter("r", 0.7, "centre-to-axle distance", "m", positive)),
    _build, SOURCE, "A board on two steerable axles with a rotor; two nonholonomic constraints; "
    "horizontal symmetries ∂ψ, ∂φ."))

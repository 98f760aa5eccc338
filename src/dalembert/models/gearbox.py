"""Continuous gearbox driven by an asymmetric pendulum (Modin–Verdier nonholonomically coupled
oscillators).

Q = R³, G = I, H = ½|p|² + V with V = ½(q1² + q2²) + cos q3 − ε sin 2q3 (ε = 1/5 in the paper),
constraint q̇1 + sin q3 q̇2 = 0, μ = (1, sin q3, 0).
The paper prints H = ½|p|² − V; with −V the (q1, q2) motion is repulsive and blows up, so we use
+V (``discrete-gradients-2019.md`` §7.4 and erratum 9.1).
Default initial state: the circulating one of the spec (§7.4, "Our reproduction"), H0 = 2.2709667.
Source: Celledoni et al. 2019 §4.4, Figure 4.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import NonholonomicSystem
from .base import Model, ModelSpec, Parameter, register

SOURCE = ("Modin–Verdier 2014; Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.4 with the "
          "H = T + V erratum (discrete-gradients-2019.md §7.4, §9.1)")
Q0 = np.array([0.4835418947237142, -0.8170087898739087, 0.08228764275297751])
P0 = np.array([0.07179002586923802, -0.8734131349760811, 0.9720667079170427])


def _build(p):
    eps = p["asymmetry"]

    def potential(q):
        return 0.5 * (q[0] ** 2 + q[1] ** 2) + jnp.cos(q[2]) - eps * jnp.sin(2.0 * q[2])

    def mu(q):
        return jnp.stack([jnp.ones_like(q[2]), jnp.sin(q[2]), jnp.zeros_like(q[2])])[None, :]

    system = NonholonomicSystem(mass_matrix=np.eye(3), potential=potential, constraint_matrix=mu,
                                name="gearbox")
    return Model("gearbox", p, system, Q0.copy(), P0.copy(), ("q1", "q2", "q3"), SOURCE,
                 invariants={"energy": system.energy}, default_h=0.1, default_t_final=1000.0)


register(ModelSpec(
    "gearbox", "Continuous gearbox driven by an asymmetric pendulum",
    (Parameter("asymmetry", 0.2, "ε in V = ½(q1²+q2²) + cos q3 − ε sin 2q3"),),
    _build, SOURCE, "Two oscillators coupled through a nonholonomic gear to a pendulum."))

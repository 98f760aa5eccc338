"""The Chaplygin sleigh in canonical coordinates q = (x1, x2, θ) with its θ-dependent metric.

L = ½[(J + m a²) θ̇² + m(ẋ1² + ẋ2² + 2 a θ̇(−ẋ1 sin θ + ẋ2 cos θ))], V = 0,
constraint −ẋ1 sin θ + ẋ2 cos θ = 0 (the blade does not slip sideways); m the mass, J the inertia
about the centre of mass, a the distance from the blade to the centre of mass
(Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.2; Ferraro, Iglesias, Martín de Diego 2008
Example 3).

Exact solution. With v = ẋ1 cos θ + ẋ2 sin θ, ω = θ̇ and K = J + m a²:
v̇ = a ω², ω̇ = −(m a/K) v ω (Ferraro et al. 2008, Example 3), whose solution is
v = A tanh(β(t + τ0)), ω = s B sech(β(t + τ0)), A = √(v0² + K ω0²/m), B = √(m/K) A,
β = m a A/K, s = sign ω0, τ0 = atanh(v0/A)/β, and θ = θ0 + s (B/β)[gd(β(t+τ0)) − gd(βτ0)]
(gd the Gudermannian). The position x = x0 + ∫ v (cos θ, sin θ) dt is computed by composite
20-point Gauss–Legendre quadrature on panels of width ≤ 0.05 (round-off accurate).

Default data: Figure 3 of Celledoni et al. 2019 — J = 8, a = m = 1, x = (−5, 0), θ = 0.1,
ρ1 = √K θ̇ = 0.001, ρ2 = √m v = −0.6: the sleigh starts next to its unstable equilibrium
(moving backwards) and turns round.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..systems import AlmostPoissonSystem, NonholonomicSystem
from .base import Model, ModelSpec, Parameter, positive, register

SOURCE = ("Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019 §4.2, (22)–(23); "
          "Ferraro–Iglesias–Martín de Diego 2008 Example 3")

_GL_X, _GL_W = np.polynomial.legendre.leggauss(20)


def _reduced(t, v0, w0, m, a, K):
    """v(t), ω(t), θ(t) − θ0 for arrays t."""
    if abs(w0) < 1e-300:
        return np.full_like(t, v0), np.zeros_like(t), np.zeros_like(t)
    A = np.sqrt(v0 ** 2 + K * w0 ** 2 / m)
    B = np.sqrt(m / K) * A
    beta = m * a * A / K
    s = np.sign(w0)
    tau0 = np.arctanh(v0 / A) / beta
    u = beta * (t + tau0)
    gd = lambda x: 2.0 * np.arctan(np.tanh(0.5 * x))  # noqa: E731
    return A * np.tanh(u), s * B / np.cosh(u), s * (B / beta) * (gd(u) - gd(beta * tau0))


def _exact(m, a, J):
    K = J + m * a * a

    def exact_solution(t, q0, v0):
        t = np.asarray(t, float)
        th0 = q0[2]
        vel0 = v0[0] * np.cos(th0) + v0[1] * np.sin(th0)
        w0 = v0[2]
        v, w, dth = _reduced(t, vel0, w0, m, a, K)
        th = th0 + dth
        # cumulative quadrature of v (cos θ, sin θ) over [t_{i-1}, t_i]
        x = np.zeros((t.size, 2))
        x[0] = q0[:2]
        for i in range(1, t.size):
            n_pan = max(1, int(np.ceil((t[i] - t[i - 1]) / 0.05)))
            edges = np.linspace(t[i - 1], t[i], n_pan + 1)
            mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * (edges[1:] - edges[:-1])
            tt = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
            ww = (half[:, None] * _GL_W[None, :]).ravel()
            vv, _, dd = _reduced(tt, vel0, w0, m, a, K)
            x[i] = x[i - 1] + np.array([np.sum(ww * vv * np.cos(th0 + dd)),
                                        np.sum(ww * vv * np.sin(th0 + dd))])
        q = np.column_stack([x, th])
        vel = np.column_stack([v * np.cos(th), v * np.sin(th), w])
        return q, vel
    return exact_solution


def reduced_state(params, q, v):
    """ζ = (x1, x2, θ, ρ1, ρ2) from (q, v): ρ = Xᵀ G v, i.e. ρ1 = √K θ̇ and
    ρ2 = √m (cos θ ẋ1 + sin θ ẋ2) on the constraint (K = J + m a²). q, v: (3,) -> (5,)."""
    m, a, J = params["m"], params["a"], params["J"]
    K = J + m * a * a
    c, s = jnp.cos(q[2]), jnp.sin(q[2])
    # X1 = K^{-1/2} ∂θ, X2 = m^{-1/2}(cos θ, sin θ, 0); (G v) computed from the metric below
    Gv = jnp.stack([m * v[0] - m * a * s * v[2], m * v[1] + m * a * c * v[2],
                    -m * a * s * v[0] + m * a * c * v[1] + K * v[2]])
    return jnp.concatenate([q, jnp.stack([Gv[2] / jnp.sqrt(K), (c * Gv[0] + s * Gv[1]) / jnp.sqrt(m)])])


def almost_poisson_form(params, system=None) -> AlmostPoissonSystem:
    """The hand-derived almost-Poisson form in adapted coordinates ζ = (x1, x2, θ, ρ1, ρ2)
    (Celledoni et al. 2019 §4.2, (22)–(23)).

    g-orthonormal basis X1 = K^{-1/2} ∂θ, X2 = m^{-1/2}(cos θ ∂x1 + sin θ ∂x2), K = J + m a²:
    𝓗 = ½(ρ1² + ρ2²); Π15 = cos θ/√m, Π25 = sin θ/√m, Π34 = 1/√K, Π45 = −𝒞 ρ1 with
    𝒞 = a √m / K, skew-completed; so ρ̇1 = −𝒞ρ1ρ2, ρ̇2 = 𝒞ρ1² (22).
    """
    m, a, J = params["m"], params["a"], params["J"]
    K = J + m * a * a
    C = a * jnp.sqrt(m) / K
    sm, sK = jnp.sqrt(m), jnp.sqrt(K)

    def poisson_matrix(x):
        c, s = jnp.cos(x[2]), jnp.sin(x[2])
        z = jnp.zeros_like(c)
        X = jnp.stack([jnp.stack([z, c / sm]), jnp.stack([z, s / sm]), jnp.stack([1.0 / sK + z, z])])
        B = jnp.stack([jnp.stack([z, -C * x[3]]), jnp.stack([C * x[3], z])])
        top = jnp.concatenate([jnp.zeros((3, 3)), X], axis=1)
        return jnp.concatenate([top, jnp.concatenate([-X.T, B], axis=1)], axis=0)

    def hamiltonian(x):
        return 0.5 * (x[3] ** 2 + x[4] ** 2)

    def lift(x):
        c, s = jnp.cos(x[2]), jnp.sin(x[2])
        return x[:3], jnp.stack([c * x[4] / sm, s * x[4] / sm, x[3] / sK])

    def constraint(x):
        q, v = lift(x)
        return (-jnp.sin(q[2]) * v[0] + jnp.cos(q[2]) * v[1])[None]

    return AlmostPoissonSystem(poisson_matrix, hamiltonian, "chaplygin-sleigh/almost-poisson",
                               constraint=constraint, lift=lift,
                               reduce=lambda q, v: reduced_state(params, q, v), nonholonomic=system,
                               n_config=3)


def _system(p) -> NonholonomicSystem:
    """The sleigh's system from parameters {m, a, J} (traceable in them)."""
    m, a, J = p["m"], p["a"], p["J"]
    K = J + m * a * a

    def mass_matrix(q):
        s, c = jnp.sin(q[2]), jnp.cos(q[2])
        return jnp.stack([jnp.stack([m + 0 * s, 0 * s, -m * a * s]),
                          jnp.stack([0 * s, m + 0 * s, m * a * c]),
                          jnp.stack([-m * a * s, m * a * c, K + 0 * s])])

    def mu(q):
        return jnp.stack([-jnp.sin(q[2]), jnp.cos(q[2]), jnp.zeros_like(q[2])])[None, :]

    return NonholonomicSystem(mass_matrix=mass_matrix, constraint_matrix=mu, name="chaplygin-sleigh")


def _build(p):
    m, a, J = p["m"], p["a"], p["J"]
    K = J + m * a * a
    system = _system(p)
    th0, v_init, w_init = 0.1, -0.6 / np.sqrt(m), 0.001 / np.sqrt(K)
    q0 = np.array([-5.0, 0.0, th0])
    v0 = np.array([v_init * np.cos(th0), v_init * np.sin(th0), w_init])
    # default method: nh-rattle-4, a one-step symmetric map on D* (no parasitic mode; the two-step
    # GNIs have one in the attracting regime of forward motion, e.g. v0 = (−0.5, 0, 0.3) with J = 1)
    return Model("chaplygin-sleigh", p, system, q0, v0, ("x1", "x2", "theta"), SOURCE,
                 exact_solution=_exact(m, a, J), invariants={"energy": system.energy},
                 default_method="nh-rattle-4", default_h=0.1, default_t_final=200.0,
                 almost_poisson=almost_poisson_form(p, system))


register(ModelSpec(
    "chaplygin-sleigh", "Chaplygin sleigh (canonical coordinates, θ-dependent metric)",
    (Parameter("m", 1.0, "mass", "kg", positive),
     Parameter("J", 8.0, "moment of inertia about the centre of mass", "kg m²", positive),
     Parameter("a", 1.0, "distance from the blade to the centre of mass", "m", positive)),
    _build, SOURCE, "A rigid body on a knife edge; exact (semi-analytic) solution.", system=_system))


# ---------------------------------------------------------------------------------------------
# Ferraro–Iglesias–Martín de Diego 2008, Example 3 (Figure 5)
# ---------------------------------------------------------------------------------------------
#: The paper's data, quoted exactly: "m = J = 1, a = .2" (J read as the inertia about the centre of
#: mass: the Lagrangian calls the sleigh's inertia I; docs/theory/ferraro2008.md), "q0 = (0,0,0),
#: q1 = (−.2395, −.0070, .0589)". The step size is not given; the iterates depend only on (q0, q1)
#: (the scheme of §4 is a map on Q × Q), so h = 1 (time in steps) is used.
FERRARO2008_PARAMS = {"m": 1.0, "J": 1.0, "a": 0.2}
FERRARO2008_Q0 = np.array([0.0, 0.0, 0.0])
FERRARO2008_Q1 = np.array([-0.2395, -0.0070, 0.0589])


def ferraro2008_example3(h: float = 1.0) -> dict:
    """The 2008 paper's Example 3 setting with its continuous initial velocity fitted.

    From q(0) = 0, find (V, W) = (v0, ω0)·h so that the exact solution at t = h has the paper's
    x and θ (the fit: V = −0.23997850, W = 0.05755261, and y(h) rounds to −0.0070).

    Returns
    -------
    dict with params, q0 (3,), q1 (3,) the printed q1, q1_exact (3,) the fitted solution at t = h,
    v0 (3,) the fitted initial velocity (V/h, 0, W/h), V, W, and exact_solution (t, q0, v0).
    """
    from scipy.optimize import fsolve

    p = FERRARO2008_PARAMS
    exact = _exact(p["m"], p["a"], p["J"])

    def resid(z):
        q, _ = exact(np.array([0.0, h]), FERRARO2008_Q0, np.array([z[0] / h, 0.0, z[1] / h]))
        return [q[1, 0] - FERRARO2008_Q1[0], q[1, 2] - FERRARO2008_Q1[2]]

    V, W = fsolve(resid, [FERRARO2008_Q1[0], FERRARO2008_Q1[2]], xtol=1e-12)
    v0 = np.array([V / h, 0.0, W / h])
    q, _ = exact(np.array([0.0, h]), FERRARO2008_Q0, v0)
    return {"params": dict(p), "q0": FERRARO2008_Q0.copy(), "q1": FERRARO2008_Q1.copy(),
            "q1_exact": q[1], "v0": v0, "V": float(V), "W": float(W), "h": h,
            "exact_solution": exact}

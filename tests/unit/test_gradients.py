"""Gradients through the integrators (issue 16): reverse mode of ``dl.solve`` against central
finite differences (forward mode against reverse mode), with respect to the initial state and a mass or inertia parameter,
for an explicit step, a GNI Newton step, a discrete-gradient step and an SO(3) step; checkpointed
reverse mode equals plain reverse mode.

The systems are built inside the differentiated function from their parameters (a factory),
as a user does. Finite differences: central, step 1e-5 (truncation and round-off ~1e-9 relative).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.models import suslov as suslov_model

TOL = 1e-6
EPS = 1e-5


def tied_skate(m):
    """A knife edge tied to the origin by an anisotropic spring, constant metric diag(m, m, J)
    with J = 0.4 m (not a model of the zoo)."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.stack([m, m, 0.4 * m])),
        potential=lambda q: 0.5 * q[0] ** 2 + 0.8 * q[1] ** 2 + 0.1 * jnp.cos(q[2]),
        constraint_matrix=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None],
        name="tied-skate")


def wobbly_skate(m):
    """A knife edge with a heading-dependent metric and a spring (implicit GNI steps)."""
    def G(q):
        c = 0.2 * jnp.sin(q[2])
        return jnp.stack([jnp.stack([m, c, 0.0 * c]), jnp.stack([c, m, 0.0 * c]),
                          jnp.stack([0.0 * c, 0.0 * c, 1.0 + 0.3 * jnp.cos(q[0]) ** 2])])
    return dl.NonholonomicSystem(
        mass_matrix=G, potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None],
        name="wobbly-skate")


Q0 = np.array([0.3, -0.2, 0.4])


def skate_v0(w):
    return jnp.stack([jnp.cos(0.4), jnp.sin(0.4), w])


def _check(f, x, directions):
    """jax.grad (reverse mode) of f at x against central differences along each of
    ``directions``; returns the largest relative difference. (Forward mode is checked against
    reverse mode below, by jax.jacfwd through explicit and Newton steps.)"""
    x = jnp.asarray(x, jnp.float64)
    g = np.asarray(jax.jit(jax.grad(f))(x))
    fj = jax.jit(f)
    worst = 0.0
    for d in directions:
        d = jnp.asarray(d, jnp.float64)
        fd = (float(fj(x + EPS * d)) - float(fj(x - EPS * d))) / (2 * EPS)
        rev = float(np.sum(g * np.asarray(d)))
        scale = max(abs(fd), 1e-3 * float(np.linalg.norm(g)), 1e-12)
        worst = max(worst, abs(rev - fd) / scale)
    return worst


#: directions in (q0 (3), heading rate w, mass m): two of q0, then w, then m
DIRECTIONS = (np.array([1.0, 0, 0, 0, 0]), np.array([0, 0.6, -0.8, 0, 0]), np.array([0, 0, 0, 1.0, 0]),
              np.array([0, 0, 0, 0, 1.0]))
X0 = np.array([*Q0, 0.7, 1.3])


@pytest.mark.parametrize("method, make", [("nh-rattle", tied_skate),
                                          pytest.param("gni-midpoint", wobbly_skate, marks=pytest.mark.full)])
def test_gradient_matches_finite_differences(method, make):
    """An explicit step (constant metric) and a GNI Newton step (q-dependent metric), with
    respect to q0, the initial heading rate and the mass, over t = 6 (the heading turns by about
    a radian)."""
    def final(x):
        out = dl.solve(make(x[4]), method, (x[:3], skate_v0(x[3])), 0.02, 300, save_every=30)
        return jnp.sum(jnp.sin(jnp.arange(3.0) + 1.0) * out["q"][-1]) + 0.1 * out["v"][-1, 2]
    assert _check(final, X0, DIRECTIONS) <= TOL


def test_discrete_gradient_method_matches_finite_differences():
    """dg-gonzalez on the Chaplygin sleigh's almost-Poisson form (Newton on ζ = (x, θ, ρ),
    differentiated by the implicit function theorem), with respect to ζ0 and the inertia J."""
    from dalembert.models.chaplygin_sleigh import almost_poisson_form
    z0 = np.array([-5.0, 0.0, 0.1, 0.5, -0.6])

    def final(x):
        system = almost_poisson_form({"m": 1.0, "a": 1.0, "J": x[5]})
        out = dl.solve(system, "dg-gonzalez", (x[:5],), 0.05, 200, save_every=50)
        return out["x"][-1, 0] + 0.5 * out["x"][-1, 1] + out["x"][-1, 3]
    dirs = [np.eye(6)[i] for i in (0, 2, 3, 4, 5)]
    assert _check(final, np.array([*z0, 8.0]), dirs) <= TOL


@pytest.mark.parametrize("method", ["lie-gni-mv", "eps-midpoint"])
def test_so3_gradient_matches_finite_differences(method):
    """The Suslov body: derivatives with respect to ω0 and a change s B of the inertia tensor."""
    ms = dl.models.get("suslov")
    R0 = jnp.asarray(ms.initial_state["R0"])
    I0 = jnp.asarray(suslov_model.INERTIA)
    B = jnp.array([[0.3, 0.1, 0.0], [0.1, -0.2, 0.05], [0.0, 0.05, 0.4]])   # a symmetric direction

    def final(x):
        system = dl.EulerPoincareSuslovSystem(I0 + x[3] * B, suslov_model.A, name="suslov-param")
        out = dl.solve(system, method, (R0, x[:3]), 0.01, 400, save_every=40)
        return out["omega"][-1, 0] + 0.3 * out["omega"][-1, 1] + out["R"][-1, 0, 1]

    x0 = np.array([*ms.initial_state["omega0"], 0.0])
    assert _check(final, x0, [np.array([0.6, -0.8, 0.0, 0.0]), np.array([0, 0, 0, 1.0])]) <= TOL


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_checkpointed_reverse_mode_equals_plain_and_jacfwd_agrees():
    """Checkpointing changes what reverse mode stores, not the result: the Jacobian with segments
    of 7 steps, of 50 steps (groups of nodes) and none agree to round-off, with save_every = 3
    and a run length that no segment divides; jax.jacfwd gives the same Jacobian."""
    def final(v0, checkpoint):
        out = dl.solve(tied_skate(1.2), "nh-rattle", (jnp.asarray(Q0), v0), 0.01, 600, save_every=3,
                       checkpoint=checkpoint)
        return out["q"][-1]
    v0 = skate_v0(0.7)
    J_plain = np.asarray(jax.jit(jax.jacrev(lambda v: final(v, None)))(v0))
    for ck in (7, 50):
        J = np.asarray(jax.jit(jax.jacrev(lambda v: final(v, ck)))(v0))
        np.testing.assert_allclose(J, J_plain, rtol=0, atol=1e-12 * np.max(np.abs(J_plain)))
    J_fwd = np.asarray(jax.jit(jax.jacfwd(lambda v: final(v, 7)))(v0))
    np.testing.assert_allclose(J_fwd, J_plain, rtol=0, atol=1e-10 * np.max(np.abs(J_plain)))


def test_jacfwd_of_an_implicit_step():
    """Forward mode through Newton solves (jax.jacfwd vmaps the JVP over directions)."""
    def final(v0):
        return dl.solve(wobbly_skate(1.2), "gni-midpoint", (jnp.asarray(Q0), v0), 0.02, 50)["q"][-1]
    v0 = skate_v0(0.7)
    np.testing.assert_allclose(np.asarray(jax.jit(jax.jacfwd(final))(v0)), np.asarray(jax.jit(jax.jacrev(final))(v0)),
                               rtol=0, atol=1e-11)


def test_checkpoint_option_is_validated():
    with pytest.raises(dl.InputError, match="checkpoint"):
        dl.solve(tied_skate(1.0), "nh-rattle", (jnp.asarray(Q0), skate_v0(0.7)), 0.01, 10, checkpoint=0)
    with pytest.raises(dl.InputError, match="checkpoint"):
        dl.solve(tied_skate(1.0), "nh-rattle", (jnp.asarray(Q0), skate_v0(0.7)), 0.01, 10, checkpoint="sqrt")


def test_model_factory_is_traceable_and_equals_the_model():
    make = dl.models.factory("chaplygin-sleigh")
    model = dl.models.get("chaplygin-sleigh", J=5.0)
    q = jnp.array([0.3, -1.0, 2.2])
    np.testing.assert_allclose(np.asarray(make({"J": 5.0}).mass_matrix(q)),
                               np.asarray(model.system.mass_matrix(q)), rtol=0, atol=0)
    g = jax.grad(lambda J: jnp.sum(make({"J": J}).mass_matrix(q)))(5.0)
    assert float(g) == pytest.approx(1.0)
    with pytest.raises(dl.UnknownNameError, match="no parameter"):
        make({"mass": 1.0})
    with pytest.raises(dl.InputError, match="traceable factory"):
        dl.models.factory("snakeboard")

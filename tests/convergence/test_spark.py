"""SPARK Lobatto IIIA–IIIB with s = 3, 4 stages (issue 15): fitted orders 4 and 6 against exact or
reference solutions (constant and q-dependent metric, linear and affine constraints), the node
constraint to round-off on a long run of a system that is not in the zoo, and the generic s-stage
construction with s = 2 equal to the hand-written ``spark-lobatto2`` (two independent
formulations)."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import convergence
from dalembert.methods.spark import _spark, lobatto_iiia, lobatto_iiib


@pytest.mark.parametrize("model, hs, T, expected", [
    ("vertical-rolling-disk", [0.8, 0.4, 0.2, 0.1], 8.0, {"spark-lobatto3": 4, "spark-lobatto4": 6}),
    ("p2-affine", [0.4, 0.2, 0.1, 0.05], 4.0, {"spark-lobatto3": 4, "spark-lobatto4": 6}),
    ("chaplygin-sleigh", [1.6, 0.8, 0.4, 0.2], 16.0, {"spark-lobatto3": 4}),      # G(q)
])
def test_spark_orders(model, hs, T, expected):
    res = convergence(dl.models.get(model), list(expected), hs, t_final=T)
    for name, order in expected.items():
        assert order - 0.2 <= res.orders_q[name] <= order + 0.4, (name, res.errors_q[name])


def test_lobatto_coefficients_satisfy_their_simplifying_conditions():
    for s in (2, 3, 4, 5):
        a, b, c = lobatto_iiia(s)
        ahat = lobatto_iiib(s)
        k = np.arange(1, s + 1)
        # C(s): Σ_j a_ij c_j^{k−1} = c_i^k / k;  B(2s−2): Σ b_i c_i^{k−1} = 1/k
        for kk in range(1, s + 1):
            np.testing.assert_allclose(a @ c ** (kk - 1), c ** kk / kk, atol=1e-14)
        for kk in range(1, 2 * s - 1):
            assert abs(b @ c ** (kk - 1) - 1.0 / kk) < 1e-14
        np.testing.assert_allclose(b[:, None] * ahat + (b[:, None] * a).T, np.outer(b, b), atol=1e-15)
        assert np.all(ahat[:, -1] == 0.0) and np.allclose(ahat[:, 0], b[0])
        del k


def test_two_stages_equal_spark_lobatto2():
    g = dl.models.get("gearbox")
    kw = dict(h=0.05, t_final=20.0, save_every=3, progress=False, **g.initial_state)
    a = dl.integrate(g.system, _spark(2), **kw)
    b = dl.integrate(g.system, "spark-lobatto2", **kw)
    np.testing.assert_allclose(a.q, b.q, atol=1e-11)
    np.testing.assert_allclose(a.v, b.v, atol=1e-11)


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_spark_keeps_the_constraint_on_a_user_system():
    A = jnp.array([[2.0, 0.3, 0.0], [0.3, 1.5, 0.2], [0.0, 0.2, 1.0]])
    system = dl.NonholonomicSystem(
        mass_matrix=lambda q: A + jnp.diag(0.2 * jnp.cos(q)),
        potential=lambda q: jnp.sum(1.0 - jnp.cos(q)),
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.2]]),
        constraint_rhs=lambda q: jnp.array([0.1 * jnp.cos(q[0])]), name="user")
    q0 = jnp.array([0.2, -0.1, 0.4])
    v0 = system.project_velocity(q0, jnp.array([0.6, 0.3, 0.9]))
    for name in ("spark-lobatto3", "spark-lobatto4"):
        tr = dl.integrate(system, name, q0=q0, v0=v0, h=0.05, t_final=100.0, save_every=7, progress=False)
        assert tr.max_constraint_residual <= 1e-12
        assert np.isfinite(tr.q).all() and np.ptp(np.asarray(tr.q)[:, 2]) > 0.5   # it turned


def test_spark_on_a_skate_whose_heading_turns_for_hundreds_of_radians():
    """A skate on an incline with a spring (not in the zoo): the heading turns by > 200 rad over
    t = 300; the Newton test must not ask the impulses for more than the rounding of the stage
    points allows (it stalled at t ≈ 122 with a plain relative test). Two initial states on the
    same system object, save_every = 7."""
    skate = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.3])),
        potential=lambda q: 0.4 * q[0] + 0.1 * (q[0] ** 2 + q[1] ** 2) + 0.1 * (1 - jnp.cos(q[2])),
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="skate")
    for q0, v0 in ((jnp.array([0.0, 0.0, 0.3]), jnp.array([1.0, 0.0, 1.2])),
                   (jnp.array([2.0, -1.0, 4.0]), jnp.array([0.3, 0.5, -0.8]))):
        v0 = skate.project_velocity(q0, v0)
        tr = dl.integrate(skate, "spark-lobatto3", q0=q0, v0=v0, h=0.05, t_final=300.0, save_every=7,
                          progress=False)
        assert np.ptp(np.asarray(tr.q)[:, 2]) > 200.0
        assert tr.max_constraint_residual <= 1e-12
        assert tr.max_relative_energy_error <= 1e-6

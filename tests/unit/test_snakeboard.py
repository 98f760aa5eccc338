"""The snakeboard (Ferraro–Iglesias–Martín de Diego 2008 Example 2; spec gni-2008-momentum-energy.md
§4): the printed projector (T1), the explicit update and energy (T10), the SE(2) momentum equation
(T11), horizontal symmetries (T12), time reversibility (T25); the projector closed forms of
Examples 1 and 3 (T1, T13)."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.experiments.ferraro2008 import run_from_two_nodes
from dalembert.models.snakeboard import abc, projector_Q_printed

RNG = np.random.default_rng(5)
MDL = dl.models.get("snakeboard")
P = MDL.params
H = 0.05
N = 4000


@pytest.fixture(scope="module")
def nodes():
    q0 = MDL.q0
    q1 = q0 + H * MDL.v0          # the spec's test start: q1 = q0 + h v0
    q, ok = run_from_two_nodes(MDL.system, "nh-rattle", q0, q1, H, N)
    assert ok
    return q


def test_projector_equals_the_printed_matrix_T1():
    Qf = jax.jit(MDL.system.projector_Q)
    for _ in range(10):
        q = RNG.normal(size=5)
        q[4] = RNG.uniform(-1.2, 1.2)
        Q = np.asarray(Qf(jnp.asarray(q)))
        np.testing.assert_allclose(Q, projector_Q_printed(P, q), atol=1e-13)
        # the printed matrix acts on vectors: it is not symmetric, and M⁻¹Q*M = Q with Q* = Qᵀ
        assert np.max(np.abs(Q - Q.T)) > 1e-3
        M = np.diag([P["m"], P["m"], P["J"] + 2 * P["J1"], P["J0"], 2 * P["J1"]])
        np.testing.assert_allclose(np.linalg.solve(M, Q.T @ M), Q, atol=1e-13)


def test_projector_closed_forms_of_examples_1_and_3_T1_T13():
    part = dl.models.get("nonholonomic-particle").system
    sleigh_p = {"m": 1.0, "J": 1.0, "a": 0.2}
    sleigh = dl.models.get("chaplygin-sleigh", **sleigh_p).system
    kappa = sleigh_p["a"] * sleigh_p["m"] / (sleigh_p["J"] + sleigh_p["m"] * sleigh_p["a"] ** 2)
    Qp, Qs = jax.jit(part.projector_Q), jax.jit(sleigh.projector_Q)
    for _ in range(5):
        y, th = RNG.normal(), RNG.uniform(-np.pi, np.pi)
        ref = np.array([[y * y, 0, -y], [0, 0, 0], [-y, 0, 1]]) / (1 + y * y)
        np.testing.assert_allclose(np.asarray(Qp(jnp.array([0.3, y, -1.0]))), ref, atol=1e-13)
        s, c = np.sin(th), np.cos(th)
        Qstar = np.array([[s * s, -s * c, kappa * s], [-s * c, c * c, -kappa * c], [0, 0, 0]])
        np.testing.assert_allclose(np.asarray(Qs(jnp.array([1.0, -2.0, th]))).T, Qstar, atol=1e-13)


def test_explicit_update_equals_newton_path_and_printed_closed_form_T10(nodes):
    q0, q1 = nodes[0], nodes[1]
    qn, ok = run_from_two_nodes(MDL.system, "gni-midpoint", q0, q1, H, 200)
    assert ok
    assert np.max(np.abs(qn - nodes[:201])) < 1e-11
    # Δq_k = (Id − 2Q(q_k)) Δq_{k−1} with the paper's printed Q, in NumPy
    q = [q0, q1]
    for _ in range(199):
        q.append(q[-1] + (np.eye(5) - 2 * projector_Q_printed(P, q[-1])) @ (q[-1] - q[-2]))
    assert np.max(np.abs(np.array(q) - nodes[:201])) < 1e-11


def test_energy_constant_T10(nodes):
    dq = np.diff(nodes, axis=0) / H
    M = np.diag([P["m"], P["m"], P["J"] + 2 * P["J1"], P["J0"], 2 * P["J1"]])
    E = 0.5 * np.einsum("ki,ij,kj->k", dq, M, dq)
    assert np.ptp(E) / E[0] < 1e-11


def test_se2_momentum_equation_T11(nodes):
    m, Jp = P["m"], P["J"] + 2 * P["J1"]
    a, b, c = abc(P, nodes.T)
    dq = np.diff(nodes, axis=0)
    k = np.arange(1, N)
    # J(q_{k−1}, q_k) = [m a_k Δx_{k−1} + m b_k Δy_{k−1} + J' c_k Δθ_{k−1}] / h²
    J = (m * a[1:] * dq[:, 0] + m * b[1:] * dq[:, 1] + Jp * c[1:] * dq[:, 2]) / H ** 2
    lhs = J[k] - J[k - 1]
    rhs = (m * (a[k + 1] - a[k]) * dq[k, 0] + m * (b[k + 1] - b[k]) * dq[k, 1]
           + Jp * (c[k + 1] - c[k]) * dq[k, 2]) / H ** 2
    assert np.max(np.abs(J)) > 1.0          # a non-trivial momentum
    assert np.max(np.abs(lhs - rhs)) < 1e-11


def test_horizontal_symmetries_T12(nodes):
    dq = np.diff(nodes, axis=0)
    assert np.max(np.abs(dq[:, 3] - dq[0, 3])) < 1e-12
    assert np.max(np.abs(dq[:, 4] - dq[0, 4])) < 1e-12
    # the node constraint holds for the centred difference (average momentum, T5)
    mu = jax.jit(jax.vmap(MDL.system.constraint_matrix))(jnp.asarray(nodes[1:-1]))
    centred = np.einsum("kij,kj->ki", np.asarray(mu), nodes[2:] - nodes[:-2]) / (2 * H)
    assert np.max(np.abs(centred)) < 1e-12


def test_time_reversibility_T25(nodes):
    K = 500
    back, ok = run_from_two_nodes(MDL.system, "nh-rattle", nodes[K], nodes[K - 1], H, K - 1)
    assert ok
    assert np.max(np.abs(back[::-1] - nodes[:K + 1][1:])) < 1e-11


def test_default_run_through_integrate_keeps_energy_and_constraints():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = dl.integrate(MDL.system, "nh-rattle", q0=MDL.q0, v0=MDL.v0, h=H, t_final=50.0)
    assert np.max(np.abs(tr.constraint_residual)) < 1e-12
    # the node energy uses the averaged momentum P*p⁺ (not the exactly conserved H(p⁻)): bounded, O(h²)
    assert tr.max_relative_energy_error < 1e-3
    # the one-sided energy ½Δqᵀ𝕀Δq/h² of the same run is exact (T10)
    dq = np.diff(tr.q, axis=0) / H
    E = 0.5 * np.einsum("ki,ij,kj->k", dq, MDL.system.mass_matrix(jnp.zeros(5)), dq)
    assert np.ptp(E) / E[0] < 1e-11

"""Theorem 2 (discrete nonholonomic momentum equation) of Ferraro–Iglesias–Martín de Diego 2008
(spec gni-2008-momentum-energy.md §3, §4): T8 on the nonholonomic particle (Example 1) and T22 on
the snakeboard with a non-orthogonal complement (the GNI's ``complement`` option).

The momentum maps are written out from the spec's closed forms (L_d = h·L scaling, so
J = <D2 L_d(q_{k−1}, q_k), ξ̃_Q(q_k)> = <M Δq_{k−1}, ξ̃_Q(q_k)>/h), independently of the scheme.
"""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError
from dalembert.experiments.ferraro2008 import SETUPS, _particle_run
from dalembert.models.snakeboard import abc, turning_wheels_state


@pytest.mark.parametrize("setup", ["A", "B"])
def test_particle_theorem2_and_corollary3_T8(setup):
    """ξ̃1 = (1, 0, y): J1_k = [Δx_{k−1} + y_k Δz_{k−1}]/h and J1_{k+1} − J1_k = (y_{k+1} − y_k)Δz_k/h;
    ξ̃2 = (0, 1, 0) (horizontal symmetry): J2_k = Δy_{k−1}/h is constant (Cor 3)."""
    q0, v0, h, T, _ = SETUPS[setup]
    n = int(round(T / h))
    q, ok = _particle_run("gni-midpoint", q0, v0, h, n)
    assert ok
    x, y, z = q.T
    dx, dy, dz = np.diff(x), np.diff(y), np.diff(z)
    J1 = (dx + y[1:] * dz) / h                       # J1[k−1] = J(q_{k−1}, q_k), k = 1..n
    lhs = J1[1:] - J1[:-1]
    rhs = (y[2:] - y[1:-1]) * dz[1:] / h
    scale = np.max(np.abs(J1))
    assert scale > 0.5 and np.max(np.abs(rhs)) > 1e-6 * scale      # a non-trivial balance
    assert np.max(np.abs(lhs - rhs)) <= 1e-12 * scale
    J2 = dy / h
    assert np.max(np.abs(J2 - J2[0])) <= 1e-12 * max(1.0, abs(J2[0]))


# --- T22: snakeboard, non-orthogonal complement --------------------------------------------------
SNAKE = dl.models.get("snakeboard")
P = SNAKE.params
Q0, V0 = turning_wheels_state(P)
M = np.diag([P["m"], P["m"], P["J"] + 2 * P["J1"], P["J0"], 2 * P["J1"]])
H = 0.05
N = 200
Z_RANDOM = np.random.default_rng(22).normal(size=(5, 2))


def _snake_run(complement, n=N):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = dl.integrate(SNAKE.system, "nh-rattle", q0=Q0, v0=V0, h=H, t_final=n * H,
                          complement=complement)
    return tr


def _theorem2_residual(q):
    """Relative residual of the SE(2) momentum equation (spec §4, Example 2) over k = 1..N−1."""
    m, Jp = P["m"], P["J"] + 2 * P["J1"]
    a, b, c = abc(P, q.T)
    dq = np.diff(q, axis=0)
    J = (m * a[1:] * dq[:, 0] + m * b[1:] * dq[:, 1] + Jp * c[1:] * dq[:, 2]) / H
    k = np.arange(1, q.shape[0] - 1)
    lhs = J[k] - J[k - 1]
    rhs = (m * (a[k + 1] - a[k]) * dq[k, 0] + m * (b[k + 1] - b[k]) * dq[k, 1]
           + Jp * (c[k + 1] - c[k]) * dq[k, 2]) / H
    return np.abs(lhs - rhs) / np.maximum(np.abs(J[k]), np.abs(J[k - 1])), J


def test_orthogonal_complement_given_explicitly_equals_the_default():
    """Z = M⁻¹μᵀ (the metric-orthogonal complement) through the option reproduces the default run."""
    mu = SNAKE.system.constraint_matrix
    Minv = jnp.asarray(np.linalg.inv(M))
    a = _snake_run(None, 100)
    b = _snake_run(lambda q: Minv @ mu(q).T, 100)
    assert np.max(np.abs(a.q - b.q)) <= 1e-12 * np.max(np.abs(a.q))
    assert np.max(np.abs(a.v - b.v)) <= 1e-12 * np.max(np.abs(a.v))


def test_theorem2_with_a_non_orthogonal_complement_T22():
    Zj = jnp.asarray(Z_RANDOM)
    tr = _snake_run(lambda q: Zj)
    q = np.asarray(tr.q)
    assert np.all(np.isfinite(q))
    res, J = _theorem2_residual(q)
    assert np.max(np.abs(J)) > 1.0
    assert np.max(res) <= 1e-12
    # energy is not kept: E_k = ½Δq_kᵀMΔq_k/h² (= H(p⁻_k), exact with the orthogonal complement)
    dq = np.diff(q, axis=0) / H
    E = 0.5 * np.einsum("ki,ij,kj->k", dq, M, dq)
    assert np.max(E) / E[0] > 10.0
    # control: the default (orthogonal) complement keeps that energy and satisfies Theorem 2 too
    q_ref = np.asarray(_snake_run(None).q)
    dq = np.diff(q_ref, axis=0) / H
    E = 0.5 * np.einsum("ki,ij,kj->k", dq, M, dq)
    assert np.ptp(E) / E[0] <= 1e-12
    assert np.max(_theorem2_residual(q_ref)[0]) <= 1e-12


def test_complement_bad_input():
    with pytest.raises(InputError, match="singular"):
        _snake_run(lambda q: jnp.zeros((5, 2)), 2)
    with pytest.raises(InputError, match="shape"):
        _snake_run(lambda q: jnp.zeros((5, 1)), 2)

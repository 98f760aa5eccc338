"""The Euler–Poincaré–Suslov integrators on matrix Lie groups other than SO(3) (issue 17 §2):
the Chaplygin sleigh as an EPS system on SE(2) against the canonical model's exact solution, and
the generalized Suslov problem on SO(4) against the reference of the same system written as a
ReducedSystem (an independent formulation of the equations: ∇_R l and ad* there, the EPS
projector here)."""
import os

import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.errors import InputError

M, A_OFF, J = 1.0, 0.5, 1.0
SLEIGH_G = np.array([[M, 0.0, 0.0], [0.0, M, M * A_OFF], [0.0, M * A_OFF, J + M * A_OFF ** 2]])


def _se2(x, y, th):
    return np.array([[np.cos(th), -np.sin(th), x], [np.sin(th), np.cos(th), y], [0.0, 0.0, 1.0]])


def test_chaplygin_sleigh_as_eps_on_se2():
    """eps-midpoint (midpoint reconstruction) on SE(2): order 2 in the contact point and heading
    against the exact solution of ``chaplygin-sleigh``; energy exact; constraint to round-off; g_k in
    SE(2); save_every ≠ 1. dreps-rk4 gives the same path to its order."""
    sleigh = dl.EulerPoincareSuslovSystem(SLEIGH_G, [0.0, 1.0, 0.0], group=dl.lie.SE(2), name="sleigh-eps-se2")
    model = dl.models.get("chaplygin-sleigh", m=M, a=A_OFF, J=J)
    th0, v, w = 0.3, 0.8, 1.5
    q0 = np.array([0.2, -0.1, th0])
    v0 = np.array([v * np.cos(th0), v * np.sin(th0), w])
    state = dict(R0=_se2(*q0), omega0=np.array([v, 0.0, w]))
    hs, errors = [0.05, 0.025, 0.0125], []
    for h in hs:
        tr = dl.integrate(sleigh, "eps-midpoint", h=h, t_final=10.0, save_every=int(round(0.5 / h)),
                          reconstruction="midpoint", progress=False, **state)
        q, _ = model.exact_solution(tr.t, q0, v0)
        heading = np.unwrap(np.arctan2(tr.R[:, 1, 0], tr.R[:, 0, 0]))
        errors.append(max(np.max(np.abs(tr.R[:, :2, 2] - q[:, :2])), np.max(np.abs(heading - q[:, 2]))))
        assert tr.max_constraint_residual < 1e-14
        assert np.max(np.abs(tr.energy - tr.energy[0])) < 1e-13
        assert np.max(tr.extra["orthogonality_defect"]) < 1e-12
    assert abs(fitted_order(hs, errors) - 2.0) < 0.15, errors
    rk = dl.integrate(sleigh, "dreps-rk4", h=0.0125, t_final=10.0, save_every=40, reconstruction="midpoint",
                      progress=False, **state)
    assert np.max(np.abs(rk.R[:, :2, 2] - tr.R[:, :2, 2])) < 3 * errors[-1]
    with pytest.raises(InputError, match="SO\\(3\\)"):
        dl.integrate(sleigh, "lie-gni-mv", h=0.1, t_final=0.2, progress=False, **state)


def test_generalized_suslov_on_so4_orders_and_invariants():
    """The generalized Suslov problem on SO(4) (⟨e_1, ω⟩ = 0): the ω orders of dreps-rk4 (4),
    eps-midpoint, and with DALEMBERT_FULL_CONFORMANCE=1 eps-variational and groupoid-gni (the
    Lie-group GNI on SO(4) ⇉ {e}, Cayley l_d) (2; measured 1.99–2.01) at T = 2 against the reference of the ReducedSystem form;
    eps-midpoint keeps the energy exactly and the constraint to round-off over t = 100
    (save_every 9), g_k in SO(4)."""
    inertia = np.diag([1.0, 1.3, 1.7, 2.2, 2.9, 3.4]) + 0.05 * (np.ones((6, 6)) - np.eye(6))
    a = np.eye(6)[:1]
    body = dl.EulerPoincareSuslovSystem(inertia, a, group=dl.lie.SO(4), name="suslov-so4-eps")
    reduced = dl.ReducedSystem(inertia, a, group=dl.lie.SO(4), name="suslov-so4")
    w0 = np.array([0.0, 0.7, -0.4, 0.5, 0.3, -0.6])
    R0 = np.asarray(dl.lie.SO(4).exp(np.array([0.2, -0.1, 0.3, 0.1, 0.0, 0.25])))
    T = 2.0
    ref = reduced.reference_solution(np.zeros(0), R0, np.zeros(0), w0, t=np.array([0.0, T]))["xi"][-1]
    methods = [("dreps-rk4", 4), ("eps-midpoint", 2)]
    if os.environ.get("DALEMBERT_FULL_CONFORMANCE", "").strip() == "1":   # 20 s more of compiling
        methods += [("eps-variational", 2), ("groupoid-gni", 2)]
    for method, order in methods:
        hs = [0.1, 0.05, 0.025]
        errs = [np.max(np.abs(dl.integrate(body, method, R0=R0, omega0=w0, h=h, t_final=T, save_every=10,
                                           progress=False).omega[-1] - ref)) for h in hs]
        assert abs(fitted_order(hs, errs) - order) < 0.2, (method, errs)
    tr = dl.integrate(body, "eps-midpoint", R0=R0, omega0=w0, h=0.02, t_final=100.0, save_every=9,
                      progress=False)
    assert np.max(np.abs(tr.energy - tr.energy[0])) < 1e-12 * tr.energy[0]
    assert tr.max_constraint_residual < 1e-14
    assert np.max(tr.extra["orthogonality_defect"]) < 1e-11

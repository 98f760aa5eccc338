"""Orders of the rolling-ball integrators against the exact or the §4.1 reference solution.

Spec: shared/papers/gni-2015-new-developments.md §5.1 (R13), §2.11 (R20), §5.3 (R17). The exact
solution and the reference ODE are the model's NumPy/SciPy functions, independent of the
integrators (and checked against each other and against the classical equations in
tests/unit/test_rolling_ball.py). Step counts stay ≤ 1024 per run so that each method compiles
once per system.
"""
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order as _fit
from dalembert.models import rolling_ball as rb


def _slopes(hs, errs):
    hs, errs = np.asarray(hs), np.asarray(errs)
    return np.log(errs[:-1] / errs[1:]) / np.log(hs[:-1] / hs[1:])


def test_R13_homogeneous_ball_reduced_gni_two_point_startup():
    """Fig 1 data, reduced-gni (right trivialisation, Cayley), the paper's two-point start-up
    (x1 = x0 + hẋ0, ω0 = ω(0)): max position error over [0, 10] is 4.0e-2 ± 10 % at h = 0.1 and
    the slope is 2.0 ± 0.1 (spec §5.1 table: 4.01e-2, 1.00e-2, 2.51e-3, 6.26e-4)."""
    m = dl.models.get("rolling-ball")
    st = dict(m.initial_state, xi0=m.initial_state["R0"] @ m.initial_state["xi0"])
    hs = [0.1, 0.05, 0.025, 0.0125]
    errs = []
    for h in hs:
        tr = dl.integrate(m.forms["reduced"], "reduced-gni", h=h, t_final=10.0, startup="two-point", **st)
        ex = m.exact_solution(tr.t)
        errs.append(np.linalg.norm(tr.x - ex["x"], axis=1).max())
        assert np.abs(tr.constraint_residual).max() <= 1e-12
    assert errs[0] == pytest.approx(4.0e-2, rel=0.1)
    assert abs(_fit(hs, errs) - 2.0) <= 0.1
    assert np.all(np.abs(_slopes(hs, errs) - 2.0) <= 0.1)


@pytest.mark.parametrize("case", ["theta1", "theta0"])
def test_R20_lie_gni_is_second_order_for_the_inhomogeneous_sphere(case):
    """Lie-group GNI (spec §2.11) against the §4.1 reference, Fig 3-left ball (I = (1, 0.5, 0.7),
    m = 2) on the turning table (Θ = 1) and on a fixed table (Θ = 0, Fig 4 reconstruction):
    position and ω errors at T = 5 have slope 2 (± 0.15)."""
    p, st = rb.fig3_initial_state() if case == "theta1" else rb.fig4_initial_state()
    m = dl.models.get("rolling-ball", **p)
    T = 5.0
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], np.array([0.0, T]))
    hs = [0.04, 0.02, 0.01, 0.005]
    ex, ew = [], []
    for h in hs:
        tr = dl.integrate(m.system, "lie-gni", h=h, t_final=T, **st)
        assert tr.t[-1] == pytest.approx(T)
        ex.append(np.linalg.norm(tr.x[-1] - ref["x"][-1]))
        ew.append(np.linalg.norm(tr.omega[-1] - ref["omega"][-1]))
    assert abs(_fit(hs, ex) - 2.0) <= 0.15
    assert abs(_fit(hs, ew) - 2.0) <= 0.15
    assert np.all(np.abs(_slopes(hs[1:], ex[1:]) - 2.0) <= 0.1)


def test_R17_lite_exp_chart_gni_is_first_order():
    """gni-exp-chart on the Fig 3-left data (ω3(0) = 0) at T = 10 (several chart re-centrings):
    the error halves with h (spec R17: 9.7e-2 → 1.2e-2 for h = 0.02 → 0.0025 with the paper's
    start-up; slope 1)."""
    p, st = rb.fig3_initial_state()
    m = dl.models.get("rolling-ball", **p)
    T = 10.0
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], np.array([0.0, T]))
    hs = [0.04, 0.02, 0.01]
    errs = []
    for h in hs:
        tr = dl.integrate(m.system, "gni-exp-chart", h=h, t_final=T, **st)
        errs.append(np.linalg.norm(tr.x[-1] - ref["x"][-1]))
        rho = np.linalg.norm(tr.chart_q[:, 2:], axis=1)
        assert rho.max() <= np.pi + 0.5 + 1e-12          # the chart is re-centred...
        assert np.sum(np.diff(rho) < -1.0) >= 1           # ... and it happened during the run
    assert np.all(np.abs(_slopes(hs, errs) - 1.0) <= 0.1)
    assert 0.02 <= errs[1] <= 0.15

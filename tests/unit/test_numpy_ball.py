"""The NumPy baselines of the issue-5 benchmark integrate the same schemes as the compiled
methods (the benchmark's ratios are only meaningful if they do)."""
import numpy as np
import pytest

import dalembert as dl
from dalembert.bench import numpy_ball as nb
from dalembert.models import rolling_ball as rb


@pytest.mark.parametrize("method,loop", [("lie-gni", nb.lie_gni), ("gni-exp-chart", nb.exp_chart)])
def test_numpy_loop_equals_compiled_scheme(method, loop):
    p, st = rb.fig3_initial_state("left")
    I = [p["I1"], p["I2"], p["I3"]]
    h, n = 0.01, 400
    res = loop(I, p["m"], p["r"], p["theta"], st["x0"], st["R0"], st["xdot0"], st["xi0"], h, n)
    tr = dl.integrate(rb.ball_system(p), method, h=h, t_final=n * h, startup="legendre", **st)
    assert np.abs(tr.x - res[0][:, :2]).max() <= 1e-11


def test_numpy_exp_chart_recentres_like_the_compiled_scheme():
    # fast spin: |ρ| passes π + 0.5 within the run, so the chart is re-centred at least once
    p, st = rb.fig3_initial_state("left")
    st = dict(st, xi0=st["xi0"] + st["R0"].T @ np.array([0.0, 0.0, 3.0]))   # spin about the vertical: keeps (41)
    I = [p["I1"], p["I2"], p["I3"]]
    h, n = 0.01, 300
    q, _, _ = nb.exp_chart(I, p["m"], p["r"], p["theta"], st["x0"], st["R0"], st["xdot0"], st["xi0"], h, n)
    assert np.any(np.diff(np.linalg.norm(q[:, 2:], axis=1)) < -1.0), "no re-centring happened"
    tr = dl.integrate(rb.ball_system(p), "gni-exp-chart", h=h, t_final=n * h, startup="legendre", **st)
    assert np.abs(tr.chart_q - q).max() <= 1e-10


def test_a_step_size_too_large_for_newton_stops_with_the_step_and_keeps_the_nodes():
    """Issue 5 §6: a step for which the Cayley/Newton solve fails raises ConvergenceError naming
    the step, with the nodes computed before it."""
    from dalembert.errors import ConvergenceError
    p, st = rb.fig3_initial_state("left")
    st = dict(st, xi0=st["xi0"] + st["R0"].T @ np.array([0.0, 0.0, 40.0]))   # fast vertical spin
    with pytest.raises(ConvergenceError) as exc:
        dl.integrate(rb.ball_system(p), "lie-gni", h=1.0, t_final=50.0, max_iter=3, **st)
    e = exc.value
    assert "step" in str(e)
    tr = e.trajectory
    assert tr is not None and 1 <= len(tr.t) < 51
    assert np.all(np.isfinite(tr.x)) and tr.orthogonality_defect.max() < 1e-12


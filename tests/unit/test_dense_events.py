"""t0, save_at (dense output) and events on a system of our own, against SciPy's solve_ivp on the
same system's index-1 ODE (DOP853, rtol = atol = 1e-13, its own event location)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dalembert as dl
from dalembert.errors import InputError


def _skate():
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="my-skate")


Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])


def x_falls_through_zero(t, q, v):
    return q[0]


x_falls_through_zero.direction = -1


def y_reaches_minus_1p5(t, q, v):
    return q[1] + 1.5


y_reaches_minus_1p5.terminal = True


@pytest.fixture(scope="module")
def scipy_run():
    """solve_ivp on the index-1 ODE with the same events (its own root finder)."""
    system = _skate()
    acc = jax.jit(system.acceleration)

    def rhs(t, y):
        return np.concatenate([y[3:], np.asarray(acc(jnp.asarray(y[:3]), jnp.asarray(y[3:])))])

    def ev_x(t, y):
        return y[0]
    ev_x.direction = -1

    def ev_y(t, y):
        return y[1] + 1.5
    ev_y.terminal = True
    return solve_ivp(rhs, (0.0, 10.0), np.concatenate([Q0, V0]), method="DOP853", rtol=1e-13, atol=1e-13,
                     events=[ev_x, ev_y], dense_output=True)


def test_event_times_and_save_at_against_solve_ivp(scipy_run):
    """rk8-projected at h = 0.02: event times within 1e-10 of solve_ivp's (measured 4e-16 … 2e-15
    between our methods); the terminal event ends the run there; save_at states within 1e-10 of
    solve_ivp's dense output (measured 3.4e-13); the first falling crossing of x is found and the
    rising ones are not (direction)."""
    tr = dl.integrate(_skate(), "rk8-projected", q0=Q0, v0=V0, h=0.02, t_final=10.0,
                      events=[x_falls_through_zero, y_reaches_minus_1p5], progress=False)
    (ex, ey) = tr.events
    assert len(ex["t"]) == len(scipy_run.t_events[0]) and len(ey["t"]) == 1
    assert np.max(np.abs(np.array(ex["t"]) - scipy_run.t_events[0])) < 1e-10
    assert abs(ey["t"][0] - scipy_run.t_events[1][0]) < 1e-10
    assert tr.t[-1] == ey["t"][0] and tr.metadata["terminated_at"] == ey["t"][0]
    assert abs(tr.q[-1][1] + 1.5) < 1e-10
    ts = np.linspace(0.5, 4.4, 9)
    dense = dl.integrate(_skate(), "rk8-projected", q0=Q0, v0=V0, h=0.02, t_final=10.0, save_at=ts, progress=False)
    assert np.array_equal(dense.t, ts)
    ref = scipy_run.sol(ts).T
    assert np.max(np.abs(dense.q - ref[:, :3])) < 1e-10 and np.max(np.abs(dense.v - ref[:, 3:])) < 1e-9


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_dense_output_keeps_the_methods_order():
    """save_at between the nodes (t = 1.0037, 1.9913): the interpolated state's error against the
    reference converges at the method's order (nh-rattle-sym: 2 ± 0.15; spark-lobatto4: 6 ± 0.5)."""
    system = _skate()
    ts = np.array([1.0037, 1.9913])
    ref = system.reference_solution(Q0, V0, t=np.concatenate([[0.0], ts]))
    for method, order, hs in (("nh-rattle-sym", 2, (0.04, 0.02, 0.01)), ("spark-lobatto4", 6, (0.2, 0.1, 0.05))):
        errs = [np.max(np.abs(dl.integrate(system, method, q0=Q0, v0=V0, h=h, t_final=2.0, save_at=ts,
                                           progress=False).q - np.asarray(ref["q"])[1:])) for h in hs]
        assert abs(np.polyfit(np.log(hs), np.log(errs), 1)[0] - order) <= (0.15 if order == 2 else 0.5), errs


def test_t0_shifts_the_clock_only_for_an_autonomous_system():
    """t0 = 5: the run goes from 5 to t_final; the states equal those of the run from 0 over the
    same duration bit for bit (no explicit time); t_final ≤ t0 and a non-finite t0 are refused."""
    system = _skate()
    a = dl.integrate(system, "nh-rattle-sym", q0=Q0, v0=V0, h=0.01, t_final=2.0, progress=False)
    b = dl.integrate(system, "nh-rattle-sym", q0=Q0, v0=V0, h=0.01, t0=5.0, t_final=7.0, save_every=3,
                     progress=False)
    assert b.t[0] == 5.0 and b.t[-1] == 7.0 and b.metadata["t0"] == 5.0
    assert np.array_equal(b.q, a.q[np.append(np.arange(0, 201, 3), 200)])
    for kw, match in (({"t0": 3.0, "t_final": 2.0}, "must be after t0"), ({"t0": float("nan"), "t_final": 2.0},
                                                                          "t0 must be finite")):
        with pytest.raises(InputError, match=match):
            dl.integrate(system, "nh-rattle-sym", q0=Q0, v0=V0, h=0.01, progress=False, **kw)


@pytest.mark.parametrize("kw,match", [({"save_at": [3.0, 1.0]}, "strictly increasing"),
                                      ({"save_at": [1.0, 12.0]}, r"within \[t0, t_final\]"),
                                      ({"events": [3]}, "must be a callable"),
                                      ({"save_at": [1.0], "stream": "run.h5"}, "drop stream=")])
def test_bad_save_at_and_events_are_one_line_errors(kw, match):
    with pytest.raises(InputError, match=match) as err:
        dl.integrate(_skate(), "nh-rattle-sym", q0=Q0, v0=V0, h=0.01, t_final=10.0, progress=False, **kw)
    assert "\n" not in str(err.value)


def test_a_terminal_event_stops_the_steps_and_changes_no_result(monkeypatch):
    """y reaches −1.5 at t ≈ 4.51, a tenth of t_final = 45 (nh-rattle-sym, h = 0.01, 4500 steps).
    As a terminal event the run stops stepping soon after it (before: all 4500 steps were taken,
    then cut at the event): at most 2 × 256 steps (the pieces the run is driven in) were taken;
    its event time, event state, last state and nodes before the event equal those of the same
    event function found non-terminally on the whole run (bit for bit for the time and the
    nodes, 1e-15 for the interpolated states); the whole run took every step (the control)."""
    def y_low(t, q, v):
        return q[1] + 1.5

    def y_low_terminal(t, q, v):
        return q[1] + 1.5
    y_low_terminal.terminal = True
    from dalembert.engine import loop
    done, real = [], loop.run_chunks

    def counted(*args, **kwargs):            # the nodes (= steps here) the compiled calls made
        r = real(*args, **kwargs)
        done.append(r.nodes_done)
        return r
    monkeypatch.setattr(loop, "run_chunks", counted)
    kw = dict(q0=Q0, v0=V0, h=0.01, t_final=45.0, progress=False)
    whole = dl.integrate(_skate(), "nh-rattle-sym", events=[y_low], **kw)
    cut = dl.integrate(_skate(), "nh-rattle-sym", events=[y_low_terminal], **kw)
    assert done[0] == 4500 and done[1] <= 512
    assert whole.metadata["steps_taken"] == 4500 and cut.metadata["steps_taken"] == done[1]
    t_event = whole.events[0]["t"][0]
    assert 4.0 < t_event < 5.0 and cut.events[0]["t"] == [t_event] and cut.t[-1] == t_event
    assert t_event / 0.01 <= cut.metadata["steps_taken"] <= 512
    n = cut.t.size - 1                     # the nodes before the event
    assert np.array_equal(cut.t[:n], whole.t[:n]) and np.array_equal(cut.q[:n], whole.q[:n])
    assert np.array_equal(cut.v[:n], whole.v[:n])
    for k in ("q", "v"):
        at_event = np.asarray(whole.events[0][k][0])
        assert np.array_equal(np.asarray(cut.events[0][k][0]), at_event), k
        assert np.max(np.abs(getattr(cut, k)[-1] - at_event)) <= 1e-15 * max(1.0, np.max(np.abs(at_event))), k

"""Explicit time in the potential V(q, t) and in the affine right-hand side ν(q, t) of a
NonholonomicSystem, on systems of our own with a hand-written reference (the index-1 ODE written
out for the knife edge, integrated by SciPy's DOP853 at rtol = atol = 1e-12 — it does not call the
system's multiplier or acceleration):

* ``WELL``: a knife edge (skate) on the plane in a moving harmonic well V = ½k|x − c(t)|²,
  c(t) = A (cos ωt, sin ωt), linear constraint −sin θ ẋ + cos θ ẏ = 0;
* ``BELT``: the knife edge on a belt that moves along x with the given speed u(t) = U sin Ωt:
  the blade does not slip relative to the belt, −sin θ (ẋ − u(t)) + cos θ ẏ = 0, i.e.
  ν(q, t) = −sin θ u(t), in a fixed well V = ½(x² + y²).

Energy is not conserved on either; the balance E_k − E_0 − W_k with W the integral of
λᵀν + ∂V/∂t (dalembert.engine.forcing) must converge at the method's order.
"""
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dalembert as dl
from dalembert.errors import InputError

M, J = 1.0, 0.3
K, A, OMEGA = 2.0, 0.5, 1.3            # the moving well
U, BIG_OMEGA = 0.7, 2.0                # the belt's speed law
T0, T = 0.7, 2.0


def _centre(t, xp=jnp):
    return xp.array([A * xp.cos(OMEGA * t), A * xp.sin(OMEGA * t)])


def _mu(q):
    return jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])


WELL = dl.NonholonomicSystem(np.diag([M, M, J]), lambda q, t: 0.5 * K * jnp.sum((q[:2] - _centre(t)) ** 2), _mu,
                             name="skate-in-moving-well")
BELT = dl.NonholonomicSystem(np.diag([M, M, J]), lambda q: 0.5 * (q[0] ** 2 + q[1] ** 2), _mu,
                             lambda q, t: jnp.array([-jnp.sin(q[2]) * U * jnp.sin(BIG_OMEGA * t)]),
                             name="skate-on-belt")
SYSTEMS = {"well": WELL, "belt": BELT}


def _belt_speed(t):
    return U * np.sin(BIG_OMEGA * t), U * BIG_OMEGA * np.cos(BIG_OMEGA * t)


def _rhs(name):
    """The index-1 ODE of the knife edge, by hand: m ẍ = −V_x − s λ, m ÿ = −V_y + c λ, J θ̈ = 0, with
    λ = m[θ̇(c(ẋ − u) + s ẏ) − s u̇] − s V_x + c V_y from d/dt(−s ẋ + c ẏ) = d/dt(−s u)."""
    def f(t, y):
        x, yy, th, vx, vy, w = y
        s, c = np.sin(th), np.cos(th)
        if name == "well":
            cx, cy = _centre(t, np)
            Vx, Vy, u, du = K * (x - cx), K * (yy - cy), 0.0, 0.0
        else:
            Vx, Vy = x, yy
            u, du = _belt_speed(t)
        lam = M * (w * (c * (vx - u) + s * vy) - s * du) - s * Vx + c * Vy
        return [vx, vy, w, (-Vx - s * lam) / M, (-Vy + c * lam) / M, 0.0]
    return f


def initial_state(name, theta=0.4, speed=1.0, spin=0.8, t0=T0):
    """A consistent (q0, v0) at t0: velocity along the blade, plus the belt's speed on the belt."""
    q0 = np.array([0.3, -0.2, theta])
    v0 = np.array([speed * np.cos(theta), speed * np.sin(theta), spin])
    if name == "belt":
        v0[0] += _belt_speed(t0)[0]
    return q0, v0


def exact(name, q0, v0, t0=T0, t1=T0 + T):
    sol = solve_ivp(_rhs(name), (t0, t1), np.concatenate([q0, v0]), method="DOP853", rtol=1e-12, atol=1e-12)
    assert sol.success
    return sol.y[:3, -1]


@pytest.fixture(scope="module")
def reference():
    return {name: exact(name, *initial_state(name)) for name in SYSTEMS}


def _order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


#: (method, declared order, step sizes); measured (well / belt), solution and balance residual:
#: nh-rattle-sym 2.000 / 2.000 and 2.000 / 2.000, nh-rattle-4 4.000 / 4.000 and 4.000 / 4.000,
#: spark-lobatto3 3.998 / 4.000 and 4.000 / 4.000, dla-midpoint 2.000 / 2.000 and 2.000 / 2.000
CASES = [("nh-rattle-sym", 2, (0.04, 0.02)), ("nh-rattle-4", 4, (0.08, 0.04)),
         ("spark-lobatto3", 4, (0.08, 0.04)), ("dla-midpoint", 2, (0.04, 0.02))]
#: quick: one case of each method family but SPARK (its first call is the costliest); the rest in
#: the full suite
QUICK = {("well", "nh-rattle-sym"), ("belt", "nh-rattle-4"), ("belt", "dla-midpoint")}


@pytest.mark.parametrize("name,method,order,hs", [
    pytest.param(s, m, p, hs, marks=[] if (s, m) in QUICK else [pytest.mark.full])
    for s in SYSTEMS for m, p, hs in CASES])
def test_fitted_order_and_converging_energy_balance(reference, name, method, order, hs):
    """From t0 = 0.7 (a clock off by any node offset shows as order 1): the error of q at
    t0 + 2 against the hand-written DOP853 reference, and max |E_k − E_0 − W_k|, both converge at
    the declared order (±0.15); the constraint μ(q_k)v_k = ν(q_k, t_k) at round-off at the nodes
    (measured ≤ 2e-16); the energy itself changes by far more than the residual (the negative
    control: without the supply W the balance would not close)."""
    q0, v0 = initial_state(name)
    errs, res = [], []
    for h in hs:
        tr = dl.integrate(SYSTEMS[name], method, q0=q0, v0=v0, h=h, t0=T0, t_final=T0 + T, progress=False)
        assert tr.t[0] == T0 and abs(tr.t[-1] - (T0 + T)) < 1e-12
        errs.append(np.max(np.abs(tr.q[-1] - reference[name])))
        res.append(np.max(np.abs(tr.energy_balance_residual)))
        if method != "dla-midpoint":          # DLA keeps the discrete constraint, not the node one
            assert tr.max_constraint_residual <= 1e-13
        assert np.max(np.abs(tr.energy - tr.energy[0])) > 100 * res[-1]
    assert abs(_order(hs, errs) - order) <= 0.15, errs
    assert abs(_order(hs, res) - order) <= 0.15, res


def test_two_initial_states_on_one_system_and_a_save_stride():
    """One system object, two initial states, save_every = 5: the strided run is the full run's
    every fifth node (bit for bit, and its work too); the second state against its own reference
    (nh-rattle-4 at h = 0.02: error measured 6e-9)."""
    system = BELT
    kw = dict(h=0.02, t0=T0, t_final=T0 + T, progress=False)
    q0, v0 = initial_state("belt")
    every = dl.integrate(system, "nh-rattle-4", q0=q0, v0=v0, **kw)
    strided = dl.integrate(system, "nh-rattle-4", q0=q0, v0=v0, save_every=5, **kw)
    assert np.array_equal(strided.q, every.q[::5]) and np.array_equal(strided.work, every.work[::5])
    assert np.array_equal(strided.energy, every.energy[::5])
    q1, v1 = initial_state("belt", theta=2.0, speed=-0.4, spin=-1.3)
    other = dl.integrate(system, "nh-rattle-4", q0=q1, v0=v1, **kw)
    assert np.max(np.abs(other.q[-1] - exact("belt", q1, v1))) < 1e-7


def test_an_ensemble_starts_at_t0():
    """dl.ensemble(t0=...) runs its members from t0 to t_final on the clock: each member equals
    its dl.integrate run (nodes and times), the ensemble's own clock and duration start at t0 (the
    ensemble ignored t0 before: it ran from 0, with 1.7 between its nodes and integrate's)."""
    q0, v0 = initial_state("belt")
    q1, v1 = initial_state("belt", theta=2.0, speed=-0.4, spin=-1.3)
    kw = dict(h=0.02, t_final=T0 + 1.0, progress=False)
    ens = dl.ensemble(BELT, "nh-rattle-sym", q0=np.stack([q0, q1]), v0=np.stack([v0, v1]), t0=T0, **kw)
    for i, (q, v) in enumerate([(q0, v0), (q1, v1)]):
        tr = dl.integrate(BELT, "nh-rattle-sym", q0=q, v0=v, t0=T0, **kw)
        assert ens.t.shape == tr.t.shape and np.allclose(ens.t, tr.t, rtol=0, atol=1e-13) and ens.t[0] == T0
        assert np.max(np.abs(ens.q[i] - tr.q)) < 1e-12


def test_one_program_serves_every_t0(compile_counter):
    """t0 is an argument of the start program, not a constant in it: a second run from another
    t0 on the same system object compiles nothing (before: t0 was part of the program key, and
    each t0 compiled the start and chunk programs again), and equals bit for bit a run from that
    t0 on a fresh system object; both against the DOP853 reference (nh-rattle-sym at h = 0.04,
    error measured ≤ 1e-3), and the two t0 give different motions (the negative control)."""
    compiles = compile_counter

    def fresh():
        return dl.NonholonomicSystem(np.diag([M, M, J]), lambda q, t: 0.5 * K * jnp.sum((q[:2] - _centre(t)) ** 2),
                                     _mu, name="skate-in-moving-well")
    q0, v0 = initial_state("well")
    kw = dict(q0=q0, v0=v0, h=0.04, progress=False)
    system = fresh()
    first = dl.integrate(system, "nh-rattle-sym", t0=T0, t_final=T0 + T, **kw)
    assert compiles[0] >= 2                    # start and chunk (the counter counts)
    compiles[0] = 0
    second = dl.integrate(system, "nh-rattle-sym", t0=1.9, t_final=1.9 + T, **kw)
    assert compiles[0] == 0
    alone = dl.integrate(fresh(), "nh-rattle-sym", t0=1.9, t_final=1.9 + T, **kw)
    for k in ("q", "v", "energy", "work"):
        assert np.array_equal(getattr(second, k), getattr(alone, k)), k
    assert np.max(np.abs(first.q[-1] - exact("well", q0, v0, T0, T0 + T))) < 1e-3
    assert np.max(np.abs(second.q[-1] - exact("well", q0, v0, 1.9, 1.9 + T))) < 1e-3
    assert np.max(np.abs(first.q[-1] - second.q[-1])) > 0.1


def test_the_initial_state_is_checked_at_t0():
    """ν(q, t) at t0: a v0 consistent at t0 = 0.7 is refused at t0 = 0 (the belt's speed differs),
    and project=True moves it onto the constraint at t0 (v0 given at t = 0 projected at t0 = 0.7)."""
    q0, v0 = initial_state("belt")
    with pytest.raises(dl.errors.ConstraintViolationError):
        dl.integrate(BELT, "nh-rattle-4", q0=q0, v0=v0, h=0.1, t_final=1.0, progress=False)
    q0, v0 = initial_state("belt", t0=0.0)
    with pytest.warns(UserWarning):
        tr = dl.integrate(BELT, "nh-rattle-4", q0=q0, v0=v0, h=0.1, t0=T0, t_final=T0 + 1.0, project=True,
                          progress=False)
    assert tr.max_constraint_residual <= 1e-13


@pytest.mark.parametrize("name", ["well", "belt"])
def test_the_index1_acceleration_reads_the_clock(name):
    """The system's index-1 acceleration (∂ν/∂t in ν̇, V at the clock's time) against the
    hand-written one at three times (measured ≤ 4e-16); at the wrong time it differs (negative
    control)."""
    import jax

    from dalembert import clock
    system = SYSTEMS[name]
    acc = jax.jit(lambda q, v, t: _at(t, system.acceleration, q, v))
    q0, v0 = initial_state(name)
    for t in (0.0, T0, 2.3):
        expected = np.asarray(_rhs(name)(t, np.concatenate([q0, v0]))[3:])
        assert np.max(np.abs(np.asarray(acc(q0, v0, t)) - expected)) < 1e-13
    assert np.max(np.abs(np.asarray(acc(q0, v0, 0.0)) - np.asarray(_rhs(name)(1.0, np.concatenate([q0, v0]))[3:]))) > 1e-3
    with clock.at(T0, 0):                      # supply S = λᵀν + ∂V/∂t, by hand at (q0, v0, t0)
        S = float(system.supply(jnp.asarray(q0), jnp.asarray(v0)))
    x, y, th, vx, vy, w = np.concatenate([q0, v0])
    if name == "well":
        cx, cy = _centre(T0, np)
        dc = OMEGA * np.array([-cy, cx])
        expected = -K * ((x - cx) * dc[0] + (y - cy) * dc[1])
    else:
        s, c = np.sin(th), np.cos(th)
        u, du = _belt_speed(T0)
        lam = M * (w * (c * (vx - u) + s * vy) - s * du) - s * x + c * y
        expected = lam * (-s * u)
    assert abs(S - expected) < 1e-13 * max(1.0, abs(expected)), (S, expected)


def _at(t, f, *args):
    from dalembert import clock
    with clock.at(t, 0):
        return f(*args)


def test_solve_agrees_with_integrate_and_the_summary_reports_the_balance(tmp_path):
    """dl.solve with t0 gives integrate's nodes, times and work; the run summary (the CLI's
    table and summary.json) shows the energy balance and the supplied work, not the energy error."""
    from dalembert.cli import _print_summary, _summary
    from dalembert.models import Model
    q0, v0 = initial_state("well")
    tr = dl.integrate(WELL, "nh-rattle-sym", q0=q0, v0=v0, h=0.04, t0=T0, t_final=T0 + 0.8, progress=False)
    out = dl.solve(WELL, "nh-rattle-sym", (q0, v0), 0.04, 20, t0=T0)
    assert np.array_equal(tr.q, np.asarray(out["q"])) and np.array_equal(tr.work, np.asarray(out["work"]))
    assert np.allclose(np.asarray(out["t"]), tr.t, rtol=0, atol=1e-13) and out["t"][0] == T0   # the clock of the nodes
    mdl = Model(name="well", params={}, system=WELL, q0=q0, v0=v0, coordinates=("x", "y", "θ"), source="test")
    s = _summary(tr, mdl, 0.0, [])
    assert s["max_energy_balance_residual"] < 1e-3 and s["work"] == float(tr.work[-1]) != 0.0
    _print_summary(s, tmp_path)


def _system(potential=None, rhs=None):
    return dl.NonholonomicSystem(np.diag([M, M, J]), potential, _mu, rhs, name="bad")


@pytest.mark.parametrize("make,method,match", [
    (lambda: _system(lambda q, t: jnp.array([q[0], t])), "nh-rattle-sym", r"potential\(q0\) returned shape"),
    (lambda: _system(lambda q, t: q[0] / (t - T0)), "nh-rattle-sym", "non-finite"),
    (lambda: _system(None, lambda q, t: jnp.array([t, t])), "nh-rattle-sym", r"constraint_rhs\(q0\) returned shape"),
    (lambda: _system(None, lambda q, t: jnp.array([jnp.log(T0 - t)])), "nh-rattle-sym", "non-finite"),
    (lambda: WELL, "dg-gonzalez", "does not accept systems with explicit time"),
    (lambda: WELL, "gonzalez-r", "does not accept systems with explicit time"),
])
def test_bad_input_is_a_one_line_error(make, method, match):
    """Wrong shape or non-finite at (q0, t0) (t0 = 0.7: V and ν are evaluated there); a method that
    cannot take explicit time refuses before tracing, naming those that can."""
    q0, v0 = initial_state("well")
    with pytest.raises(InputError, match=match) as err:
        dl.integrate(make(), method, q0=q0, v0=v0, h=0.1, t0=T0, t_final=T0 + 1.0, progress=False)
    assert "\n" not in str(err.value)
    if "explicit time" in match:
        assert "nh-rattle-sym" in str(err.value) and "dg-gonzalez," not in str(err.value)


def test_the_step_checks_read_the_node_time():
    """V = ½|x|² log t is singular at t = 0 only: a run from t0 = 1.5 must not see it (the engine's
    finiteness check of each step evaluates V at the node's time, not at 0)."""
    system = dl.NonholonomicSystem(np.diag([M, M, J]), lambda q, t: 0.5 * jnp.sum(q[:2] ** 2) * jnp.log(t), _mu,
                                   name="log-well")
    q0, v0 = initial_state("well")
    tr = dl.integrate(system, "nh-rattle-sym", q0=q0, v0=v0, h=0.05, t0=1.5, t_final=2.5, progress=False)
    assert len(tr) == 21 and np.all(np.isfinite(tr.energy)) and tr.max_energy_balance_residual < 1e-3


def test_the_automatic_reduction_refuses_explicit_time():
    with pytest.raises(InputError, match="V\\(q, t\\) is not supported") as err:
        dl.almost_poisson(WELL, initial_state("well")[0])
    assert "\n" not in str(err.value)


def _accepting(name):
    from dalembert.methods.kinds import methods_for
    return [m for m in methods_for(SYSTEMS[name], initial_state(name)) if m != "reference"]


@pytest.mark.full
@pytest.mark.parametrize("name", ["well", "belt"])
def test_every_method_that_accepts_explicit_time_converges_at_its_order(reference, name):
    """Every registered method that accepts the system (its declared features): the fitted order
    of q (declared ± 0.15; order 8 ± 0.9, where round-off and the asymptotic range meet: measured
    7.66–8.81) and of the balance residual (min(order, 4) ± 0.15: the work's quadrature is of order 2
    or 4; measured 0.99–4.13). The 'reference' method agrees with the hand-written reference."""
    from dalembert.methods.base import registry
    q0, v0 = initial_state(name)
    methods = _accepting(name)
    assert "nh-rattle-sym" in methods and not any(m.startswith("dg-") for m in methods)
    for method in methods:
        p = registry()[method].traits.order
        hs = {1: (0.01, 0.005), 2: (0.04, 0.02), 4: (0.08, 0.04), 6: (0.2, 0.1), 8: (0.4, 0.2)}[p]
        errs, res = [], []
        for h in hs:
            tr = dl.integrate(SYSTEMS[name], method, q0=q0, v0=v0, h=h, t0=T0, t_final=T0 + T, progress=False)
            errs.append(np.max(np.abs(tr.q[-1] - reference[name])))
            res.append(np.max(np.abs(tr.energy_balance_residual)))
        assert abs(_order(hs, errs) - p) <= (0.9 if p == 8 else 0.15), (method, errs)
        assert abs(_order(hs, res) - min(p, 4)) <= 0.15, (method, res)
    ref = dl.integrate(SYSTEMS[name], "reference", q0=q0, v0=v0, h=T / 4, t0=T0, t_final=T0 + T, progress=False)
    assert np.max(np.abs(ref.q[-1] - reference[name])) < 1e-9


CLI_SOURCE = '''
import jax.numpy as jnp
import numpy as np
import dalembert as dl

def make_system(U=0.7):
    mu = lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])
    return dl.NonholonomicSystem(np.diag([1.0, 1.0, 0.3]), lambda q, t: 0.5 * (q[0] ** 2 + q[1] ** 2) + 0.1 * t * q[0],
                                 mu, lambda q, t: jnp.array([-jnp.sin(q[2]) * U * jnp.sin(2.0 * t)]), name="belt")
'''


@pytest.mark.full
def test_the_command_line_runs_a_time_dependent_model(tmp_path, capsys):
    """`dalembert run FILE:make_system` on a belt with V(q, t): the summary shows the energy balance
    and the supplied work (not an energy invariant)."""
    import json

    from dalembert.cli import main
    (tmp_path / "belt.py").write_text(CLI_SOURCE)
    with pytest.raises(SystemExit) as exc:
        main(["run", f"{tmp_path / 'belt.py'}:make_system", "--init", "q0=0.3,-0.2,0.4", "--init",
              "v0=0.921,0.389,0.8", "--project", "--h", "0.05", "--t-final", "2", "--out", str(tmp_path / "out")])
    assert exc.value.code == 0, capsys.readouterr().err
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert not s["energy_is_invariant"] and s["max_energy_balance_residual"] < 1e-3 and s["work"] != 0.0
    assert "energy balance" in capsys.readouterr().out

"""Torques on the Lie-group kinds (EulerPoincareSuslovSystem / LieNonholonomicSystem(force=τ)): a
Suslov body (non-diagonal inertia, ⟨ω, a⟩ = 0) with a damping torque −σω, a time-dependent driving
torque and an attitude-dependent one, against the forced Euler–Poincaré–Suslov ODE written out here
by hand with its multiplier and integrated by SciPy DOP853 at rtol 1e-12; the energy balance with
the work; controls; the bad inputs and the refusals."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dalembert as dl
from dalembert.errors import InputError
from dalembert.systems.euler_poincare_suslov import EulerPoincareSuslovSystem, LeftInvariantSystem
from dalembert.systems.lie_nonholonomic import LieNonholonomicSystem

I = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
A = np.array([0.2, -0.1, 1.0])
SIGMA = 0.3
T0, T = 0.5, 2.0
R0 = np.eye(3)
W0 = np.array([1.0, 0.5, -0.15])                                 # A·ω0 = 0
CHI = np.array([0.0, 0.3, 0.2])                                  # an offset centre of mass (body)


def _drive(t):
    return np.array([0.4 * np.cos(2.0 * t), 0.2 * np.sin(t), 0.1])


def _torque_np(R, w, t):
    """−σω + d(t) + χ × (Rᵀe3): damping, a drive in time and a gravity-like torque of the attitude."""
    return -SIGMA * w + _drive(t) + np.cross(CHI, R[2])


def _torque(R, w, t):
    d = jnp.array([0.4 * jnp.cos(2.0 * t), 0.2 * jnp.sin(t), 0.1])
    return -SIGMA * w + d + jnp.cross(jnp.asarray(CHI), R[2])


def _damping(R, w, t):
    return -SIGMA * w


def _hand_reference(w0, torque=_torque_np, t0=T0, t=T, R_init=R0):
    """(R, ω) at t0 + t of 𝕀ω̇ = 𝕀ω × ω + τ + aλ, a·ω = 0, Ṙ = R ω̂, with
    λ = −a·𝕀⁻¹(𝕀ω × ω + τ) / (a·𝕀⁻¹a): DOP853 at rtol = atol = 1e-12."""
    Iinv = np.linalg.inv(I)

    def rhs(s, y):
        R, w = y[:9].reshape(3, 3), y[9:]
        f = np.cross(I @ w, w) + torque(R, w, s)
        lam = -(A @ Iinv @ f) / (A @ Iinv @ A)
        what = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
        return np.concatenate([(R @ what).ravel(), Iinv @ (f + lam * A)])

    sol = solve_ivp(rhs, (t0, t0 + t), np.concatenate([R_init.ravel(), w0]), method="DOP853",
                    rtol=1e-12, atol=1e-12)
    return sol.y[:9, -1].reshape(3, 3), sol.y[9:, -1]


EPS = EulerPoincareSuslovSystem(I, A, "forced suslov", force=_torque)
LIE = LieNonholonomicSystem(I, A, "forced suslov", force=_torque)


@pytest.fixture(scope="module")
def reference():
    return _hand_reference(W0)


def _order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


def _system(method):
    return LIE if method.startswith("lie-gni") else EPS


#: measured (error of R and ω at t0 + 2 against the hand-written reference / balance residual):
#: dreps-euler 1.001 / 1.002, dreps-rk4 3.990 / 4.013, eps-midpoint 1.998 / 1.997, eps-midpoint-4
#: 3.999 / 3.998, eps-midpoint-6 6.008 / 4.005, lie-gni-mv-sym 2.003 / 1.997, lie-gni-mv-4 4.003 / 4.001,
#: lie-gni-mv-6 6.028 / 4.004, lie-gni-mv 2.002 / 2.002, lie-gni-cayley 1.992 / 1.992
CASES = [("eps-midpoint", 2, (0.1, 0.05, 0.025)), ("lie-gni-mv-sym", 2, (0.1, 0.05, 0.025)),
         ("dreps-rk4", 4, (0.1, 0.05, 0.025)), ("lie-gni-mv-4", 4, (0.1, 0.05, 0.025)),
         ("dreps-euler", 1, (0.02, 0.01, 0.005)), ("eps-midpoint-4", 4, (0.1, 0.05, 0.025)),
         ("eps-midpoint-6", 6, (0.2, 0.1, 0.05)), ("lie-gni-mv-6", 6, (0.2, 0.1, 0.05)),
         ("lie-gni-mv", 2, (0.1, 0.05, 0.025)), ("lie-gni-cayley", 2, (0.1, 0.05, 0.025))]
FULL_ONLY = {"dreps-euler", "eps-midpoint-4", "eps-midpoint-6", "lie-gni-mv-sym", "lie-gni-mv-6", "lie-gni-mv",
             "lie-gni-cayley"}


def test_every_method_that_accepts_a_torque_is_tested():
    """The methods that take the forced Suslov body are exactly the ones below (the registry, not a
    list by hand, decides: a new method that accepts torques must be added to CASES)."""
    accepting = set(dl.methods.accepting(EPS, (R0, W0))) | set(dl.methods.accepting(LIE, (R0, W0)))
    assert accepting == {m for m, _, _ in CASES} | {"reference"}


@pytest.mark.parametrize("method,order,hs", [
    pytest.param(m, p, hs, marks=[pytest.mark.full] if m in FULL_ONLY else []) for m, p, hs in CASES])
def test_fitted_order_of_every_forced_method(reference, method, order, hs):
    """max |R − R_ref|, |ω − ω_ref| at t0 + 2 (t0 = 0.5: a clock off by a step offset or a torque
    at the wrong attitude shows as order 1); the constraint at round-off; the balance residual
    E_k − E_0 − W_k converging at min(order, 4) (the work's Hermite rule is of order 4)."""
    errs, balance = [], []
    for h in hs:
        tr = dl.integrate(_system(method), method, R0=R0, omega0=W0, h=h, t0=T0, t_final=T0 + T, progress=False)
        errs.append(max(np.max(np.abs(tr.R[-1] - reference[0])), np.max(np.abs(tr.omega[-1] - reference[1]))))
        balance.append(np.max(np.abs(tr.energy_balance_residual)))
        assert tr.max_constraint_residual <= 1e-13 and tr.t[0] == T0
    assert abs(_order(hs, errs) - order) <= 0.15 * max(order, 2) / 2 + (0.3 if order == 6 else 0.0), errs
    assert abs(_order(hs, balance) - min(order, 4)) <= 0.15, balance


def test_reference_method_agrees_with_the_hand_written_ode(reference):
    """dl's own ``reference`` (the LieNonholonomicSystem view of the EPS system, the torque on the
    clock) against the ODE written out here: 1e-9 (measured 3e-13)."""
    tr = dl.integrate(EPS, "reference", R0=R0, omega0=W0, h=T / 4, t0=T0, t_final=T0 + T, progress=False)
    assert np.max(np.abs(tr.omega[-1] - reference[1])) < 1e-9 and np.max(np.abs(tr.R[-1] - reference[0])) < 1e-9


def test_negative_controls_a_wrong_clock_or_no_torque_disagree(reference):
    """The comparison is not vacuous: the same run from t0 = 0 (the drive shifted in time) and the
    hand-written ODE without the torque both miss the reference by far more than the error of the
    order test's finest step (measured: 6e-5 for eps-midpoint at h = 0.025; 4e-2 shifted, 0.35
    without the torque)."""
    tr = dl.integrate(EPS, "eps-midpoint", R0=R0, omega0=W0, h=0.025, t0=T0, t_final=T0 + T, progress=False)
    good = np.max(np.abs(tr.omega[-1] - reference[1]))
    shifted = dl.integrate(EPS, "eps-midpoint", R0=R0, omega0=W0, h=0.025, t_final=T, progress=False)
    free = _hand_reference(W0, torque=lambda R, w, t: np.zeros(3))
    assert np.max(np.abs(shifted.omega[-1] - reference[1])) > 100 * good
    assert np.max(np.abs(free[1] - reference[1])) > 100 * good


def test_two_initial_states_on_one_system_and_a_save_stride(reference):
    """One system object, two initial states (one with an attitude away from the identity) and a
    save stride of 7: the strided nodes (and work) are those of the full run; both states meet
    the hand-written reference (lie-gni-mv-4, h = 0.02: measured 9e-10 and 3e-9)."""
    kw = dict(h=0.02, t0=T0, t_final=T0 + T, progress=False)
    every = dl.integrate(LIE, "lie-gni-mv-4", R0=R0, omega0=W0, **kw)
    strided = dl.integrate(LIE, "lie-gni-mv-4", R0=R0, omega0=W0, save_every=7, **kw)
    assert np.array_equal(strided.omega[:-1], every.omega[::7]) and np.array_equal(strided.R[-1], every.R[-1])
    assert np.array_equal(strided.work[:-1], every.work[::7]) and strided.work.shape == strided.t.shape
    assert np.max(np.abs(every.omega[-1] - reference[1])) < 1e-7
    c, s = np.cos(0.7), np.sin(0.7)
    R1 = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    w1 = np.array([-0.6, 1.2, 0.24])                                    # A·w1 = 0
    other = dl.integrate(LIE, "lie-gni-mv-4", R0=R1, omega0=w1, **kw)
    ref1 = _hand_reference(w1, R_init=R1)
    assert np.max(np.abs(other.omega[-1] - ref1[1])) < 1e-7 and np.max(np.abs(other.R[-1] - ref1[0])) < 1e-7
    assert np.max(np.abs(ref1[1] - reference[1])) > 0.1


def test_pure_damping_decays_the_energy_at_every_step():
    """τ = −σω: eps-midpoint's step gives E_{k+1} − E_k = ω̄·(f_d⁻ + f_d⁺) = −σh|ω̄|² ≤ 0 (module doc
    of methods.eps), so the energy decreases at every step (over 2000 steps), the work is
    non-increasing, and E_k − E_0 − W_k is small against the energy lost (measured 1.6e-6 of 1.317 J;
    the largest energy step −5e-6 J)."""
    system = EulerPoincareSuslovSystem(I, A, "damped suslov", force=_damping)
    tr = dl.integrate(system, "eps-midpoint", R0=R0, omega0=W0, h=0.01, t_final=20.0, progress=False)
    assert np.all(np.diff(tr.energy) < 0.0) and np.all(np.diff(tr.work) <= 0.0)
    lost = tr.energy[0] - tr.energy[-1]
    assert lost > 0.9 * tr.energy[0] and np.max(np.abs(tr.energy_balance_residual)) < 1e-4 * lost


def _controlled(R, w, t, u):
    return jnp.array([u[0], u[1], 0.0]) - SIGMA * w


CONTROLLED = LieNonholonomicSystem(I, A, "steered suslov", force=_controlled)
CONTROLLED_EPS = EulerPoincareSuslovSystem(I, A, "steered suslov", force=_controlled)


def test_controls_in_integrate():
    """A controlled torque τ = (u0, u1, 0) − σω (dreps-rk4, explicit: cheap to compile): zero
    controls give the damped motion, and U moves it by more than 1e-2 (the negative control)."""
    N, h = 40, 0.05
    U = np.stack([np.sin(np.arange(N) * h), np.cos(np.arange(N) * h)], axis=1)
    kw = dict(R0=R0, omega0=W0, h=h, t_final=N * h, progress=False)
    tr = dl.integrate(CONTROLLED_EPS, "dreps-rk4", controls=U, **kw)
    zero = dl.integrate(CONTROLLED_EPS, "dreps-rk4", controls=np.zeros((N, 2)), **kw)
    damped = dl.integrate(EulerPoincareSuslovSystem(I, A, force=_damping), "dreps-rk4", **kw)
    assert np.max(np.abs(zero.omega - damped.omega)) < 1e-14 and np.max(np.abs(tr.omega - zero.omega)) > 1e-2


@pytest.mark.full
def test_gradient_with_respect_to_the_controls_against_central_differences():
    """dl.solve(controls=U) equals dl.integrate(controls=U) (lie-gni-mv-sym); jax.grad of a loss of
    R_N through dl.solve with a traced (N, 2) control array, against central differences (ε = 1e-6):
    ≤ 1e-6 relative."""
    N, h = 40, 0.05
    U = np.stack([np.sin(np.arange(N) * h), np.cos(np.arange(N) * h)], axis=1)
    tr = dl.integrate(CONTROLLED, "lie-gni-mv-sym", R0=R0, omega0=W0, h=h, t_final=N * h, controls=U, progress=False)
    out = dl.solve(CONTROLLED, "lie-gni-mv-sym", (R0, W0), h, N, controls=U)
    assert np.max(np.abs(tr.omega - np.asarray(out["omega"]))) < 1e-13     # two compiled programs

    def loss(U):
        return jnp.sum(dl.solve(CONTROLLED, "lie-gni-mv-sym", (R0, W0), h, N, controls=U)["R"][-1][:, 0] ** 2)

    Uj = jnp.asarray(U)
    G = jax.jit(jax.grad(loss))(Uj)
    f = jax.jit(loss)
    for i, j in ((0, 0), (23, 1)):
        E = jnp.zeros_like(Uj).at[i, j].set(1e-6)
        fd = (f(Uj + E) - f(Uj - E)) / 2e-6
        assert abs(float(G[i, j]) - float(fd)) <= 1e-6 * max(abs(float(fd)), 1e-3), (i, j, G[i, j], fd)


@pytest.mark.parametrize("make,method,kw,match", [
    (lambda: EulerPoincareSuslovSystem(I, A, force=lambda R, w, t: jnp.zeros(2)), "eps-midpoint", {}, "returned shape"),
    (lambda: LieNonholonomicSystem(I, A, force=lambda R, w, t: jnp.full(3, jnp.inf)), "lie-gni-mv-sym", {},
     "is not finite"),
    (lambda: CONTROLLED, "lie-gni-mv-sym", {}, "takes a control but none is given"),
    (lambda: CONTROLLED, "lie-gni-mv-sym", {"controls": np.zeros((3, 2))}, "controls has 3 rows"),
    (lambda: EPS, "eps-variational", {}, "does not accept systems with non-conservative forces"),
    (lambda: LIE, "groupoid-dla", {}, "does not accept systems with non-conservative forces"),
    (lambda: EPS, "groupoid-gni", {}, "does not accept systems with non-conservative forces"),
])
def test_bad_torques_and_refusals_are_one_line_errors(make, method, kw, match):
    """Wrong shape, non-finite, missing or misshapen controls: one-line InputError at the initial
    state; a method that takes no torque refuses before tracing, naming those that do."""
    with pytest.raises(InputError, match=match) as err:
        dl.integrate(make(), method, R0=R0, omega0=W0, h=0.1, t_final=1.0, progress=False, **kw)
    assert "\n" not in str(err.value)
    if "accept" in match:
        assert ("eps-midpoint" if make() is EPS else "lie-gni-mv-sym") in str(err.value)


def test_a_force_that_is_not_callable_and_the_left_invariant_form_refuse_in_one_line():
    with pytest.raises(InputError, match="must be a callable") as err:
        LieNonholonomicSystem(I, A, force=np.zeros(3))
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="NonholonomicSystem") as err:
        LeftInvariantSystem(lambda w: 0.5 * w @ (jnp.asarray(I) @ w), A, force=_damping)
    assert "\n" not in str(err.value)

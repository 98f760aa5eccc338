"""Non-conservative forces, controls and explicit time (NonholonomicSystem(force=...)): the forced
discrete Lagrange–d'Alembert methods on systems of our own — a damped skate (viscous friction on
every coordinate) and a driven one (a force that depends on time) — against the index-1 ODE's
DOP853 reference with the same force; the energy balance with the work; gradients with respect to
the controls against central differences; the bad inputs."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError

T, T0 = 2.0, 0.5
Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])


def _damped(q, v, t):
    return -jnp.array([0.3, 0.3, 0.1]) * v


def _driven(q, v, t):
    return jnp.array([0.5 * jnp.cos(2.0 * t), 0.0, 0.3 * jnp.sin(t)])


def skate(force, **kw):
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate", force=force,
        **kw)


SYSTEMS = {"damped": skate(_damped), "driven": skate(_driven)}


@pytest.fixture(scope="module")
def reference():
    out = {}
    for name, system in SYSTEMS.items():
        tr = dl.integrate(system, "reference", q0=Q0, v0=V0, h=T / 4, t0=T0, t_final=T0 + T, progress=False)
        out[name] = tr.q[-1]
    return out


def _order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


#: measured (damped / driven): nh-rattle-sym 2.000 / 2.003, nh-rattle-4 4.004 / 4.004, nh-rattle
#: 2.001 / 2.004, gni-midpoint 2.000 / 2.002, gni-euler-a 0.976 / 0.985, dla-midpoint 2.000,
#: spark-lobatto3 4.001, gni-euler-ab 2.001 / 2.001, gni-midpoint-sym 2.000 / 2.003
CASES = [("nh-rattle-sym", 2, (0.1, 0.05, 0.025)), ("nh-rattle-4", 4, (0.1, 0.05, 0.025)),
         ("nh-rattle", 2, (0.1, 0.05, 0.025)), ("gni-midpoint", 2, (0.1, 0.05, 0.025)),
         ("gni-euler-a", 1, (0.02, 0.01, 0.005)), ("dla-midpoint", 2, (0.1, 0.05, 0.025)),
         ("spark-lobatto3", 4, (0.2, 0.1, 0.05)), ("rk8-projected", 8, (0.5, 0.25, 0.125))]
FULL_ONLY = {("driven", "gni-midpoint"), ("driven", "gni-euler-a"), ("damped", "rk8-projected"),
             ("driven", "spark-lobatto3")}


@pytest.mark.parametrize("force,method,order,hs", [
    pytest.param(f, m, p, hs, marks=[pytest.mark.full] if (f, m) in FULL_ONLY else [])
    for f in SYSTEMS for m, p, hs in CASES])
def test_fitted_order_of_every_forced_method(reference, force, method, order, hs):
    """Against the DOP853 reference with the same force, from t0 = 0.5 (the driven force depends
    on t: a clock off by any step offset shows as order 1); the constraint at round-off."""
    errs = []
    for h in hs:
        tr = dl.integrate(SYSTEMS[force], method, q0=Q0, v0=V0, h=h, t0=T0, t_final=T0 + T, progress=False)
        errs.append(np.max(np.abs(tr.q[-1] - reference[force])))
        assert tr.max_constraint_residual <= 1e-13 and tr.t[0] == T0
    assert abs(_order(hs, errs) - order) <= 0.15 * max(order, 2) / 2 + (0.6 if order == 8 else 0.0), errs


def test_energy_balance_converges_and_the_work_is_what_the_damping_removes():
    """nh-rattle-sym on the damped skate: the balance residual max |E_k − E_0 − W_k| converges at
    order 2 (measured 2.00); the work is negative and non-increasing (viscous friction only takes
    energy); E_k − E_0 itself is of the size of W (the negative control: a balance without W is
    not small)."""
    res = []
    for h in (0.1, 0.05, 0.025):
        tr = dl.integrate(SYSTEMS["damped"], "nh-rattle-sym", q0=Q0, v0=V0, h=h, t_final=4.0, progress=False)
        res.append(np.max(np.abs(tr.energy_balance_residual)))
        assert np.all(np.diff(tr.work) <= 1e-15) and tr.work[-1] < 0
        assert np.max(np.abs(tr.energy - tr.energy[0])) > 100 * res[-1]
    assert abs(_order((0.1, 0.05, 0.025), res) - 2) <= 0.15, res


@pytest.mark.parametrize("force", ["damped", "driven"])
def test_energy_balance_of_a_fourth_order_method_converges_at_order_four(force):
    """nh-rattle-4: the work is summed by the Hermite rule on the power (fourth order), so the
    balance residual converges at 4 (measured 4.00 damped, 4.03 driven); with the trapezoidal
    work it would stall at 2."""
    hs, res = (0.2, 0.1, 0.05), []
    for h in hs:
        tr = dl.integrate(SYSTEMS[force], "nh-rattle-4", q0=Q0, v0=V0, h=h, t0=T0, t_final=T0 + 4.0, progress=False)
        res.append(np.max(np.abs(tr.energy_balance_residual)))
    assert abs(_order(hs, res) - 4) <= 0.3, res


def test_explicit_kick_with_a_force_independent_of_v_equals_the_newton_path():
    """The driven force does not depend on v: nh-rattle-sym keeps its explicit kick with ∇V − f;
    the same method with fast_path=False (Newton on the whole step) agrees to the Newton
    tolerance (two independent formulations of the same map; measured 2e-15)."""
    kw = dict(q0=Q0, v0=V0, h=0.05, t0=T0, t_final=T0 + T, progress=False)
    fast = dl.integrate(SYSTEMS["driven"], "nh-rattle-sym", **kw)
    slow = dl.integrate(SYSTEMS["driven"], "nh-rattle-sym", fast_path=False, **kw)
    assert np.max(np.abs(fast.q - slow.q)) < 1e-12


def test_two_initial_states_on_one_system_and_a_save_stride(reference):
    system = SYSTEMS["damped"]
    kw = dict(h=0.02, t0=T0, t_final=T0 + T, progress=False)
    every = dl.integrate(system, "nh-rattle-4", q0=Q0, v0=V0, **kw)
    strided = dl.integrate(system, "nh-rattle-4", q0=Q0, v0=V0, save_every=7, **kw)
    assert np.array_equal(strided.q[:-1], every.q[::7]) and np.array_equal(strided.q[-1], every.q[-1])
    assert np.array_equal(strided.work[:-1], every.work[::7])
    q1 = np.array([-1.0, 0.5, 2.0])
    v1 = np.array([0.4 * np.cos(2.0), 0.4 * np.sin(2.0), -1.3])
    other = dl.integrate(system, "nh-rattle-4", q0=q1, v0=v1, **kw)
    ref = dl.integrate(system, "reference", q0=q1, v0=v1, h=T / 4, t0=T0, t_final=T0 + T, progress=False)
    assert np.max(np.abs(other.q[-1] - ref.q[-1])) < 1e-7
    assert np.max(np.abs(every.q[-1] - reference["damped"])) < 1e-7


def _car(q, v, t, u):
    """A knife edge driven by a forward force u0 along the blade and a steering torque u1."""
    return jnp.array([u[0] * jnp.cos(q[2]), u[0] * jnp.sin(q[2]), u[1]])


CAR = dl.NonholonomicSystem(mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])),
                            constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]),
                            name="car", force=_car)


@pytest.mark.parametrize("method", ["nh-rattle-sym", "spark-lobatto3"])
def test_gradient_with_respect_to_the_controls_against_central_differences(method):
    """jax.grad through dl.solve with a traced (N, 2) control array, against central differences
    (ε = 1e-6) in three entries: ≤ 1e-6 relative (measured ≤ 4e-10)."""
    N, h = 100, 0.02
    zero = np.zeros(3)
    target = jnp.array([0.5, 0.2, 0.3])

    def loss(U):
        return jnp.sum((dl.solve(CAR, method, (zero, zero), h, N, controls=U)["q"][-1] - target) ** 2)

    U = 0.3 * jnp.ones((N, 2)) + 0.01 * jnp.arange(2 * N).reshape(N, 2) / N
    G = jax.jit(jax.grad(loss))(U)
    f = jax.jit(loss)
    for i, j in ((0, 0), (37, 1), (99, 0)):
        E = jnp.zeros_like(U).at[i, j].set(1e-6)
        fd = (f(U + E) - f(U - E)) / 2e-6
        assert abs(float(G[i, j]) - float(fd)) <= 1e-6 * max(abs(float(fd)), 1e-3), (i, j, G[i, j], fd)


def test_controls_in_integrate_equal_the_same_controls_in_solve():
    N, h = 50, 0.02
    U = np.stack([np.sin(np.arange(N) * h), np.cos(np.arange(N) * h)], axis=1)
    tr = dl.integrate(CAR, "nh-rattle-sym", q0=np.zeros(3), v0=np.zeros(3), h=h, t_final=N * h, controls=U,
                      progress=False)
    out = dl.solve(CAR, "nh-rattle-sym", (np.zeros(3), np.zeros(3)), h, N, controls=U)
    assert np.array_equal(tr.q, np.asarray(out["q"]))
    zero = dl.integrate(CAR, "nh-rattle-sym", q0=np.zeros(3), v0=np.zeros(3), h=h, t_final=N * h,
                        controls=np.zeros((N, 2)), progress=False)
    assert np.max(np.abs(zero.q)) == 0.0 and np.max(np.abs(tr.q)) > 1e-2      # negative control


@pytest.mark.parametrize("make,kw,match", [
    (lambda: skate(lambda q, v, t: jnp.zeros(2)), {}, "returned shape"),
    (lambda: skate(lambda q, v, t: jnp.full(3, jnp.nan)), {}, "is not finite"),
    (lambda: CAR, {"controls": np.zeros((7, 2))}, "controls has 7 rows"),
    (lambda: CAR, {}, "takes a control but none is given"),
    (lambda: SYSTEMS["damped"], {"controls": np.zeros((10, 2))}, "takes none"),
    (lambda: SYSTEMS["damped"], {"method": "gonzalez-r"}, "does not accept systems with non-conservative forces"),
])
def test_bad_forces_and_controls_are_one_line_errors(make, kw, match):
    kw = dict(kw)
    method = kw.pop("method", "nh-rattle-sym")
    with pytest.raises(InputError, match=match) as err:
        dl.integrate(make(), method, q0=Q0, v0=V0, h=0.1, t_final=1.0, progress=False, **kw)
    assert "\n" not in str(err.value)
    if method == "gonzalez-r":
        assert "nh-rattle-sym" in str(err.value)


def test_the_left_invariant_form_refuses_a_force_in_one_line():
    """A kind without forces yet (the user's reduced Lagrangian l(ω)) refuses ``force=`` in one line
    naming the generalized-coordinate form (not Python's TypeError for an unknown keyword); the
    Lie-group kinds with the metric 𝕀 take torques (tests/unit/test_lie_forces.py)."""
    import numpy as np
    from dalembert.systems.euler_poincare_suslov import LeftInvariantSystem
    f = lambda q, v, t: -v  # noqa: E731
    with pytest.raises(dl.InputError, match="NonholonomicSystem") as e:
        LeftInvariantSystem(lambda w: 0.5 * jnp.sum(w * w) + 0.1 * jnp.sum(w ** 4), np.array([0.0, 0.0, 1.0]),
                            force=f)
    assert "\n" not in str(e.value)

"""Configuration (holonomic) constraints beside the rolling ones: NonholonomicSystem(...,
holonomic_constraints=φ). Checked on systems of our own against independent formulations: a skate
whose heading is the unit vector (c, s) with c² + s² = 1 (against the skate in (x, y, θ), a system
without configuration constraints, and its DOP853 reference), the same skate in polar coordinates
(r, ψ) with a q-dependent metric; orders, |φ| at every node, long runs, two initial states, a save
stride, and the bad inputs."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.declarations import Feature
from dalembert.errors import ConstraintViolationError, InputError, SystemDefinitionError

INERTIA = 0.2
T = 2.0


def _V_xy(x, y):
    return 0.5 * x ** 2 + 0.3 * y ** 2     # an anisotropic spring: bounded motion


def skate_theta():
    """The reference formulation: q = (x, y, θ), no configuration constraint."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA])), potential=lambda q: _V_xy(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate-theta")


def skate_unit():
    """q = (x, y, c, s): the heading as a unit vector, φ = c² + s² − 1 (constant metric)."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA, INERTIA])), potential=lambda q: _V_xy(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]), name="skate-unit")


def skate_polar():
    """q = (r, ψ, c, s): position in polar coordinates (metric diag(1, r², I, I), q-dependent)."""
    def V(q):
        r, psi = q[0], q[1]
        return _V_xy(r * jnp.cos(psi), r * jnp.sin(psi))

    def mu(q):
        r, psi, c, s = q
        return jnp.array([[c * jnp.sin(psi) - s * jnp.cos(psi), r * (s * jnp.sin(psi) + c * jnp.cos(psi)), 0.0, 0.0]])

    return dl.NonholonomicSystem(
        mass_matrix=lambda q: jnp.diag(jnp.array([1.0, q[0] ** 2, INERTIA, INERTIA])), potential=V,
        constraint_matrix=mu, holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]),
        name="skate-polar")


def state_theta(x=2.0, y=1.0, th=0.3, u=1.0, w=0.8):
    return np.array([x, y, th]), np.array([u * np.cos(th), u * np.sin(th), w])


def state_unit(x=2.0, y=1.0, th=0.3, u=1.0, w=0.8):
    c, s = np.cos(th), np.sin(th)
    return np.array([x, y, c, s]), np.array([u * c, u * s, -w * s, w * c])


def state_polar(x=2.0, y=1.0, th=0.3, u=1.0, w=0.8):
    r, psi = np.hypot(x, y), np.arctan2(y, x)
    xd, yd = u * np.cos(th), u * np.sin(th)
    rd = (x * xd + y * yd) / r
    psid = (x * yd - y * xd) / r ** 2
    return np.array([r, psi, np.cos(th), np.sin(th)]), np.array([rd, psid, -w * np.sin(th), w * np.cos(th)])


@pytest.fixture(scope="module")
def reference():
    """(x, y, cos θ, sin θ) at t = T from the θ-formulation's DOP853 reference."""
    def at(**kw):
        q0, v0 = state_theta(**kw)
        tr = dl.integrate(skate_theta(), "reference", q0=q0, v0=v0, h=T / 4, t_final=T, progress=False)
        x, y, th = tr.q[-1]
        return np.array([x, y, np.cos(th), np.sin(th)])
    return at


def _unit_from_polar(q):
    r, psi, c, s = q
    return np.array([r * np.cos(psi), r * np.sin(psi), c, s])


def _order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


_ORDER_CASES = [
    ("nh-rattle-sym", 2, (0.1, 0.05, 0.025)),
    ("gni-midpoint-sym", 2, (0.1, 0.05, 0.025)),
    ("nh-rattle-4", 4, (0.2, 0.1, 0.05)),
    ("rk8-projected", 8, (0.5, 0.25, 0.125)),
    ("dla-midpoint", 2, (0.1, 0.05, 0.025)),
    ("dla-left", 1, (0.02, 0.01, 0.005)),
    ("gonzalez-f", 2, (0.1, 0.05, 0.025)),
    ("nh-rattle", 2, (0.1, 0.05, 0.025)),
    ("gni-euler-a", 1, (0.02, 0.01, 0.005)),
    ("gni-euler-ab", 2, (0.1, 0.05, 0.025)),
    ("gni-midpoint", 2, (0.1, 0.05, 0.025)),
    ("spark-lobatto2", 2, (0.2, 0.1, 0.05)),
    ("spark-lobatto3", 4, (0.2, 0.1, 0.05)),
    ("spark-lobatto4", 6, (0.2, 0.1, 0.05)),
    ("gonzalez-f+projection", 2, (0.1, 0.05, 0.025)),
]
#: the polar form (q-dependent metric) of these in the full suite only: the same step code as the
#: unit form (their configuration-constraint path is the general one), 5–20 s of compile each
_POLAR_FULL_ONLY = ("gni-midpoint-sym", "nh-rattle-4", "rk8-projected", "dla-left", "gni-euler-a", "gni-euler-ab",
                    "gni-midpoint", "spark-lobatto4", "gonzalez-f+projection")
#: spark-lobatto2 with configuration constraints is the general SPARK with s = 2, for a constant
#: metric only (its declared features): no polar form
_UNIT_ONLY = ("spark-lobatto2",)


@pytest.mark.parametrize("method,order,hs,form", [
    pytest.param(m, p, hs, form, marks=[pytest.mark.full] if form == "polar" and m in _POLAR_FULL_ONLY else [])
    for form in ("unit", "polar") for m, p, hs in _ORDER_CASES if not (form == "polar" and m in _UNIT_ONLY)])
def test_order_against_the_formulation_without_configuration_constraints(reference, method, order, hs, form):
    """Fitted order within ±0.15·p/2 of the declared one against the θ-skate's reference; φ at
    round-off at every node, the velocity constraints (Φ v and μ v) too. Measured (unit / polar):
    nh-rattle 2.001 / 2.000, gni-euler-a 0.996 / 0.996, gni-euler-ab 2.001 / 2.001, gni-midpoint
    2.000 / 2.000, spark-lobatto2 2.007, spark-lobatto3 4.007 / 4.004, spark-lobatto4 6.002 / 5.962,
    gonzalez-f with node_projection 2.07 / 2.04 (both constraints at the nodes, energy 1.6e-15)."""
    system, (q0, v0) = (skate_unit(), state_unit()) if form == "unit" else (skate_polar(), state_polar())
    target = reference()
    errs = []
    method, _, projection = method.partition("+")
    options = {"node_projection": True} if projection else {}
    for h in hs:
        tr = dl.integrate(system, method, q0=q0, v0=v0, h=h, t_final=T, progress=False, **options)
        q = tr.q[-1] if form == "unit" else _unit_from_polar(tr.q[-1])
        errs.append(np.max(np.abs(q - target)))
        assert tr.holonomic_residual.shape == (len(tr.t), 1)
        assert tr.max_holonomic_residual <= 1e-14                    # measured ≤ 4.5e-16
        assert tr.constraint_residual.shape == (len(tr.t), 2)        # Φ v row, then μ v
        if method != "gonzalez-f" or projection:                     # its Φv, μv hold at the midpoint
            assert tr.max_constraint_residual <= 1e-13               # measured ≤ 1.5e-14
        if method == "gonzalez-f":
            assert tr.max_relative_energy_error <= 1e-14             # measured ≤ 1.6e-15
    assert abs(_order(hs, errs) - order) <= 0.15 * max(order, 2) / 2 + (0.6 if order == 8 else 0.0), errs


def test_long_run_energy_bounded_and_constraints_at_round_off():
    """10⁵ steps of nh-rattle-sym (t = 1000): φ and the velocity constraints at round-off at every
    node; the energy error bounded (no drift: the second half's maximum is not above the first's
    by more than a quarter)."""
    q0, v0 = state_unit()
    tr = dl.integrate(skate_unit(), "nh-rattle-sym", q0=q0, v0=v0, h=0.01, t_final=1000.0, save_every=10,
                      progress=False)
    assert tr.max_holonomic_residual <= 1e-14 and tr.max_constraint_residual <= 1e-13   # 2.2e-16, 2.3e-14
    e = np.abs(tr.energy - tr.energy[0]) / abs(tr.energy[0])
    half = len(e) // 2
    assert e.max() < 1e-4 and e[half:].max() <= 1.25 * e[:half].max()          # 1.9e-5 in both halves


def test_two_initial_states_on_one_system_and_a_save_stride(reference):
    """One system object, two initial states (the second off the first's orbit), each equal to the
    θ-formulation's reference to the method's accuracy; save_every = 4 keeps every 4th node of the
    save_every = 1 run bit for bit."""
    system = skate_unit()
    for kw in ({}, {"x": -1.0, "y": 0.5, "th": 2.0, "u": 0.4, "w": -1.3}):
        q0, v0 = state_unit(**kw)
        every = dl.integrate(system, "nh-rattle-sym", q0=q0, v0=v0, h=0.01, t_final=T, progress=False)
        strided = dl.integrate(system, "nh-rattle-sym", q0=q0, v0=v0, h=0.01, t_final=T, save_every=4,
                               progress=False)
        assert np.array_equal(strided.q, every.q[::4]) and np.array_equal(strided.t, every.t[::4])
        assert np.max(np.abs(every.q[-1] - reference(**kw))) < 2e-4       # measured 6.6e-5, 6.3e-5


def test_methods_that_do_not_take_configuration_constraints_are_refused_before_tracing():
    q0, v0 = state_unit()
    system = skate_unit()
    assert Feature.HOLONOMIC_CONSTRAINTS in system.features(q0, v0)
    fits = dl.methods.accepting(system, (q0, v0))
    assert {"nh-rattle-sym", "gni-midpoint-sym", "nh-rattle-4", "rk8-projected", "reference", "dla-midpoint",
            "dla-left", "gonzalez-f", "nh-rattle", "gni-euler-a", "gni-euler-b", "gni-euler-ab", "gni-midpoint",
            "spark-lobatto2", "spark-lobatto3", "spark-lobatto4"} <= set(fits)
    with pytest.raises(InputError, match="does not accept systems with configuration constraints") as err:
        dl.integrate(system, "dg-gonzalez", q0=q0, v0=v0, h=0.1, t_final=1.0, progress=False)
    assert "nh-rattle-sym" in str(err.value) and "\n" not in str(err.value)


def test_reference_reports_its_drift_on_phi():
    q0, v0 = state_unit()
    tr = dl.integrate(skate_unit(), "reference", q0=q0, v0=v0, h=0.1, t_final=T, progress=False)
    assert 0.0 < tr.max_holonomic_residual < 1e-11                   # the index-1 form drifts (2.5e-14)


# --- initial states and bad input -------------------------------------------------------------------

def test_q0_off_phi_is_refused_with_its_residual_or_projected():
    q0, v0 = state_unit()
    system = skate_unit()
    with pytest.raises(ConstraintViolationError, match=r"\|φ\(q0\)\| = 2\.010e-02.*project=True"):
        dl.integrate(system, "nh-rattle-sym", q0=1.01 * q0, v0=v0, h=0.1, t_final=1.0, progress=False)
    tr = dl.integrate(system, "nh-rattle-sym", q0=1.01 * q0, v0=v0, h=0.1, t_final=1.0, project=True,
                      progress=False)
    assert abs(tr.q[0, 2] ** 2 + tr.q[0, 3] ** 2 - 1.0) <= 1e-15 and tr.max_holonomic_residual <= 1e-15
    assert np.allclose(tr.q[0, :2], 1.01 * q0[:2], atol=0, rtol=0)    # only the constrained coordinates moved


def test_a_projection_that_changes_the_given_velocity_warns():
    q0, _ = state_unit()
    system = skate_unit()
    with pytest.warns(UserWarning, match=r"project=True changed v0 by \d+%"):
        dl.integrate(system, "nh-rattle-sym", q0=q0, v0=np.array([0.0, 1.0, 0.0, 0.0]), h=0.1, t_final=0.2,
                     project=True, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # a tiny correction does not warn
        q0, v0 = state_unit()
        dl.integrate(system, "nh-rattle-sym", q0=q0, v0=v0 + 1e-9, h=0.1, t_final=0.2, project=True,
                     progress=False)


@pytest.mark.parametrize("phi,match", [
    (lambda q: jnp.array([[q[2] ** 2 + q[3] ** 2 - 1.0]]), "holonomic_constraints.*shape"),
    (lambda q: jnp.array([jnp.log(q[2] - 5.0)]), "holonomic_constraints.*non-finite"),
    (lambda q: jnp.array([q[1] * q[2] - q[0] * q[3]]), "dependent"),
])
def test_bad_configuration_constraints_are_one_line_errors(phi, match):
    """φ of the wrong shape, non-finite at q0, and φ whose Φ repeats μ (here, φ = c y − s x has
    Φ = (−s, c, y, −x): at q0 = (0, 0, c, s) it is μ's row), each a one-line SystemDefinitionError."""
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.eye(4), constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=phi)
    q0 = np.array([0.0, 0.0, 1.0, 0.0])
    with pytest.raises(SystemDefinitionError, match=match) as err:
        system.check(q0, np.array([1.0, 0.0, 0.0, 0.0]))
    assert "\n" not in str(err.value)


def test_a_jacobian_without_constraints_is_refused():
    with pytest.raises(InputError, match="holonomic_jacobian is given without holonomic_constraints"):
        dl.NonholonomicSystem(mass_matrix=jnp.eye(3), constraint_matrix=lambda q: jnp.ones((1, 3)),
                              holonomic_jacobian=lambda q: jnp.ones((1, 3)))


def test_a_given_jacobian_is_used_and_equals_the_autodiff_one():
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA, INERTIA])), potential=lambda q: _V_xy(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]),
        holonomic_jacobian=lambda q: jnp.array([[0.0, 0.0, 2.0 * q[2], 2.0 * q[3]]]))
    q0, v0 = state_unit()
    a = dl.integrate(system, "nh-rattle-sym", q0=q0, v0=v0, h=0.05, t_final=1.0, progress=False)
    b = dl.integrate(skate_unit(), "nh-rattle-sym", q0=q0, v0=v0, h=0.05, t_final=1.0, progress=False)
    assert np.max(np.abs(a.q - b.q)) <= 1e-14


def test_energy_conserving_mixed_method_long_run():
    """gonzalez-f with configuration constraints (impulse along the discrete gradient Φ̄, φ(q') = 0):
    over 2·10⁴ steps on the polar skate (q-dependent metric) the energy error stays at round-off
    (a random walk of the steps' round-off: 1.5e-12 after 10⁵ steps) and φ at every node; with
    node_projection=True the velocity rows hold at every node too (without it they do not: the
    negative control), the energy still at round-off (3.7e-12 after 10⁵ steps on the unit skate)."""
    q0, v0 = state_polar()
    tr = dl.integrate(skate_polar(), "gonzalez-f", q0=q0, v0=v0, h=0.01, t_final=200.0, save_every=8,
                      progress=False)
    assert tr.max_relative_energy_error <= 1e-12 and tr.max_holonomic_residual <= 1e-15   # 1.1e-13, 2.2e-16
    assert tr.max_constraint_residual > 1e-8            # Φv, μv at the midpoint only: O(h²) at the nodes
    proj = dl.integrate(skate_polar(), "gonzalez-f", q0=q0, v0=v0, h=0.01, t_final=200.0, save_every=8,
                        progress=False, node_projection=True)
    assert proj.max_relative_energy_error <= 1e-12 and proj.max_holonomic_residual <= 1e-15
    assert proj.max_constraint_residual <= 1e-14       # both constraints at every node (measured 4e-16)


def test_a_reduced_system_refuses_configuration_constraints_naming_the_coordinate_form():
    """ReducedSystem (Rⁿ × G) takes no configuration constraints: one line naming the
    NonholonomicSystem form and methods that take it."""
    with pytest.raises(InputError, match="NonholonomicSystem") as err:
        dl.ReducedSystem(metric=lambda x: jnp.eye(5), constraint_matrix=lambda x, R: jnp.zeros((2, 5)),
                         shape_dim=2, holonomic_constraints=lambda x, R: jnp.array([x[0]]))
    assert "\n" not in str(err.value)


def test_the_two_step_gni_keeps_the_velocity_rows_at_the_node_and_phi_long_run():
    """nh-rattle (two-step, SHAKE for φ), 10⁵ steps: φ and (Φv; μv) at round-off at every node,
    energy bounded (the second half's maximum within 1.25× the first's); a negative control: the
    same skate with the configuration constraint left out drifts off c² + s² = 1 under nh-rattle
    (its heading vector is then two free coordinates under the rolling constraint)."""
    q0, v0 = state_unit()
    tr = dl.integrate(skate_unit(), "nh-rattle", q0=q0, v0=v0, h=0.01, t_final=1000.0, save_every=10,
                      progress=False)
    assert tr.max_holonomic_residual <= 1e-14 and tr.max_constraint_residual <= 1e-13   # 3.3e-16, 3.5e-16
    e = np.abs(tr.energy - tr.energy[0]) / abs(tr.energy[0])
    half = len(e) // 2
    assert e.max() < 2e-4 and e[half:].max() <= 1.25 * e[:half].max()          # 4.1e-5 in both halves
    free = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA, INERTIA])), potential=lambda q: _V_xy(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]), name="skate-unit-free")
    tf = dl.integrate(free, "nh-rattle", q0=q0, v0=v0, h=0.01, t_final=10.0, progress=False)
    assert np.max(np.abs(tf.q[:, 2] ** 2 + tf.q[:, 3] ** 2 - 1.0)) > 1e-3        # measured 64


def test_project_dependent_keeps_the_independent_coordinates_and_speeds():
    """project="dependent": the given x, y, c and the given ẋ (independent) are kept bit for bit;
    s and ẏ, ċ, ṡ are solved from φ = 0 and (Φ; μ)v = 0 — the result is the θ-state with the
    same x, y, θ and u; with project=True the kinetic-metric projection moves the given ones
    instead (negative control)."""
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA, INERTIA])), potential=lambda q: _V_xy(q[0], q[1]),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]),
        independent_coordinates=[0, 1, 2], independent_speeds=[0, 3])
    q_true, v_true = state_unit(th=0.3, u=1.0, w=0.8)
    q_given = q_true.copy()
    q_given[3] += 0.05                              # s off the circle
    v_given = v_true.copy()
    v_given[1:3] += 0.1                             # ẏ, ċ off the constraints
    tr = dl.integrate(system, "nh-rattle-sym", q0=q_given, v0=v_given, h=0.01, t_final=0.02,
                      project="dependent", progress=False)
    assert np.array_equal(tr.q[0][:3], q_given[:3]) and tr.v[0][0] == v_given[0] and tr.v[0][3] == v_given[3]
    assert np.max(np.abs(tr.q[0] - q_true)) < 1e-14 and np.max(np.abs(tr.v[0] - v_true)) < 1e-14
    with pytest.warns(UserWarning, match="changed v0"):
        moved = dl.integrate(system, "nh-rattle-sym", q0=q_given, v0=v_given, h=0.01, t_final=0.02,
                             project=True, progress=False)
    assert np.max(np.abs(moved.q[0][:3] - q_given[:3])) > 1e-3


@pytest.mark.parametrize("kw,match", [
    ({}, "needs the system's independent_coordinates"),
    ({"independent_coordinates": [0, 1], "independent_speeds": [0, 3]}, "must hold 3 distinct indices"),
    ({"independent_coordinates": [0, 1, 3], "independent_speeds": [2, 3]}, "are not determined by the others"),
])
def test_project_dependent_bad_choices_are_one_line_errors(kw, match):
    """Missing indices, a wrong count, and a choice whose dependent columns are singular (keeping
    the speeds ċ, ṡ leaves ẋ, ẏ to the rows (Φ; μ), and Φ's columns for them are zero)."""
    system = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, INERTIA, INERTIA])),
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]), **kw)
    q0, v0 = state_unit()
    v0 = v0 + 0.1
    with pytest.raises(InputError, match=match) as err:
        system.check(q0, v0, project="dependent")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("method", ["nh-rattle-sym", "nh-rattle", "gni-euler-a", "dla-left"])
def test_small_steps_do_not_stall_the_newton_solve(method):
    """h = 2e-4 (10³ steps): the impulses' round-off floor grows as 1/h; tested against an absolute
    tolerance these stalled at step 0 ("the Newton tolerance is not reachable"); now they run, with
    φ at round-off and the velocity rows at the impulses' floor (measured: 6.5e-13 for
    nh-rattle-sym, whose node constraint is one of its Newton equations; ≤ 3e-16 for the
    reflection methods, where it is exact)."""
    q0, v0 = state_unit()
    tr = dl.integrate(skate_unit(), method, q0=q0, v0=v0, h=2e-4, t_final=0.2, save_every=100, progress=False)
    assert tr.t[-1] == 0.2 and tr.max_holonomic_residual <= 1e-14
    if method != "dla-left":
        assert tr.max_constraint_residual <= 2e-12


def test_gonzalez_f_newton_matrix_kept_across_steps():
    """gonzalez-f with ``jacobian_reuse=8`` (the Newton matrix of an earlier step is tried first,
    for at most 8 iterations, and formed afresh at the predictor when that does not converge)
    solves for the same roots as with a matrix per step: the nodes agree to round-off over 100
    steps of the polar skate (configuration constraint, q-dependent metric, node projection), with
    energy, φ and the velocity rows at round-off. The matrix is kept on most steps, and on none
    when h changes from step to step (the negative control: it was formed with another h)."""
    system = skate_polar()
    q0, v0 = (jnp.asarray(x) for x in state_polar())
    build = dl.methods.get("gonzalez-f").build
    plain = build(system, q0, node_projection=True)
    reuse = build(system, q0, node_projection=True, jacobian_reuse=8)
    step_plain, step_reuse = jax.jit(plain.step), jax.jit(reuse.step)

    @jax.jit
    def observe(s):
        v = system.factor_metric(s.q).solve(s.p)
        return (system.hamiltonian(s.q, s.p), jnp.max(jnp.abs(system.holonomic(s.q))),
                jnp.max(jnp.abs(system.constraint_matrix(s.q) @ v)))

    def run(hs):
        a, b = plain.init(q0, v0, hs[0]), reuse.init(q0, v0, hs[0])
        kept, dz, dE, phi, rows = 0, 0.0, 0.0, 0.0, 0.0
        E0 = float(system.hamiltonian(b.q, b.p))
        for h in hs:
            a, ia = step_plain(a, h)
            b2, ib = step_reuse(b, h)
            assert bool(ia.converged) and bool(ib.converged)
            kept += int(bool(b.keep) and bool(jnp.all(b2.J == b.J)))
            b = b2
            dz = max(dz, float(np.max(np.abs(np.concatenate([a.q - b.q, a.p - b.p])))))
            E, f, c = (float(x) for x in observe(b))
            dE, phi, rows = max(dE, abs(E - E0) / E0), max(phi, f), max(rows, c)
        return kept, dz, dE, phi, rows
    kept, dz, dE, phi, rows = run([0.02] * 100)
    assert kept >= 30                                   # measured 39 of 100
    assert dz <= 1e-13 and dE <= 1e-14                  # measured 3.8e-15, 3.3e-15
    assert phi <= 1e-15 and rows <= 1e-14               # measured 2.2e-16, 3.3e-16
    assert run([0.02, 0.021] * 10)[0] == 0


@pytest.mark.full
def test_gonzalez_f_kept_matrix_under_vmap_and_reverse_mode():
    """With ``jacobian_reuse`` the step stays vmap-able and reverse-differentiable (the two
    attempts are a scan): an ensemble of two states and d q_x(T)/d(scale of v0) over 50 steps
    equal those with a matrix per step (measured 7.6e-15 and 9e-15 relative)."""
    system = skate_polar()
    q0, v0 = (jnp.asarray(x) for x in state_polar())
    build = dl.methods.get("gonzalez-f").build
    schemes = [build(system, q0, node_projection=True, **kw)
               for kw in ({}, {"jacobian_reuse": 6, "newton_estimate": True})]

    def run(sch, q, v):
        return jax.lax.fori_loop(0, 50, lambda i, s: sch.step(s, 0.02)[0], sch.init(q, v, 0.02)).q
    Q0, V0 = jnp.stack([q0, q0 * jnp.array([1.01, 1, 1, 1])]), jnp.stack([v0, v0])
    a, b = (jax.jit(jax.vmap(lambda q, v, s=s: run(s, q, v)))(Q0, V0) for s in schemes)
    assert float(jnp.max(jnp.abs(a - b))) <= 1e-13
    g = [float(jax.grad(lambda x, s=s: run(s, q0, v0 * x)[0])(1.0)) for s in schemes]
    assert abs(g[0] - g[1]) <= 1e-12 * abs(g[0]) and abs(g[0]) > 0.1


def test_nh_rattle_sym_newton_matrix_kept_across_steps():
    """nh-rattle-sym with ``jacobian_reuse=12`` (simplified Newton, the matrix of an earlier step
    tried first) solves for the same roots as full Newton: over 100 steps of the polar skate
    (configuration constraint, q-dependent metric) the nodes agree to the Newton tolerance (the
    kept matrix contracts slowly here, θ up to ~1/2, and the solve stops at the stall slack of the
    componentwise test: the nodes differ by up to ~1e-11 after 100 steps, the node constraint 5e-13), with φ
    at round-off. The matrix is kept on most steps, and on none when h never repeats (the negative
    control: each was formed with another h); with two step sizes in turn (as in the stages of a
    triple jump) the state keeps one matrix for each. (k = 6 keeps none on this model: the kept
    matrix needs 7–11 iterations, a fresh one 4.)"""
    system = skate_polar()
    q0, v0 = (jnp.asarray(x) for x in state_polar())
    build = dl.methods.get("nh-rattle-sym").build
    plain, reuse = build(system, q0), build(system, q0, jacobian_reuse=12)
    step_plain, step_reuse = jax.jit(plain.step), jax.jit(reuse.step)

    @jax.jit
    def residuals(s):
        v = system.factor_metric(s.q).solve(s.p)
        return jnp.max(jnp.abs(system.holonomic(s.q))), jnp.max(jnp.abs(system.constraint_matrix(s.q) @ v))

    def run(hs):
        a, b = plain.init(q0, v0, hs[0]), reuse.init(q0, v0, hs[0])
        kept, dz, phi, rows = 0, 0.0, 0.0, 0.0
        for h in hs:
            a, ia = step_plain(a, h)
            b2, ib = step_reuse(b, h)
            assert bool(ia.converged) and bool(ib.converged)
            kept += int(bool(jnp.any(b.keep & (b.h == h))) and bool(jnp.all(b2.J == b.J)))
            b = b2
            dz = max(dz, float(np.max(np.abs(np.concatenate([a.q - b.q, a.p - b.p, a.lam - b.lam])))))
            f, c = (float(x) for x in residuals(b))
            phi, rows = max(phi, f), max(rows, c)
        return kept, dz, phi, rows
    kept, dz, phi, rows = run([0.02] * 100)
    assert kept >= 60                                   # measured 87 of 100
    assert dz <= 1e-10                                  # measured 2.5e-11 (q, p and λ)
    assert phi <= 1e-15 and rows <= 5e-12               # measured 2.2e-16, 5.0e-13
    assert run([0.02 + 1e-4 * i for i in range(20)])[0] == 0
    assert run([0.02, 0.021] * 10)[0] >= 12             # one matrix per step size; measured 14 of 20


@pytest.mark.parametrize("method", ["gonzalez-f", "nh-rattle-sym"])
def test_bad_jacobian_reuse_is_a_one_line_error(method):
    with pytest.raises(InputError, match="jacobian_reuse must be an int") as err:
        dl.methods.get(method).build(skate_polar(), jnp.asarray(state_polar()[0]), jacobian_reuse=-1)
    assert "\n" not in str(err.value)

"""The automatic almost-Poisson reduction on a global basis or an atlas of charts (issue: the
automatic reduction on a global atlas), and Newton failures that say why.

Oracles: the closed-form motion of a free skate (a system of ours, not in the model zoo), the
hand-derived forms of the models, forward-mode autodiff of the basis (for the closed-form
bracket), the Lagrange–d'Alembert acceleration (index-1 form) and fresh system objects.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert import _cache
from dalembert.solvers import newton_module as nm
from test_protocol import knife_edge as spring_skate   # the spring-tied skate, a system of ours


def free_skate(inertia=0.3):
    """A knife edge on a plane, q = (x, y, φ), the blade along (cos φ, sin φ): μ = (sin φ, −cos φ, 0)."""
    return dl.NonholonomicSystem(
        mass_matrix=np.diag([1.0, 1.0, inertia]),
        constraint_matrix=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None, :],
        name="free-skate")


def skate_state(phi0, u, w, x0=(0.2, -0.1)):
    return np.array([x0[0], x0[1], phi0]), np.array([u * np.cos(phi0), u * np.sin(phi0), w])


def skate_exact(t, q0, u, w):
    """The free skate turns at the constant rate w with the constant speed u along the blade."""
    phi = q0[2] + w * t
    return np.column_stack([q0[0] + u / w * (np.sin(phi) - np.sin(q0[2])),
                            q0[1] - u / w * (np.cos(phi) - np.cos(q0[2])), phi])


def test_frames_chosen_by_the_constraint_rows():
    disk, quartic, sleigh = (dl.models.get(n) for n in ("vertical-rolling-disk", "chaotic-quartic",
                                                         "chaplygin-sleigh"))
    assert not dl.almost_poisson(disk.system, disk.q0).atlas          # columns x1, x2 are constant
    assert not dl.almost_poisson(quartic.system, quartic.q0).atlas    # column x is constant
    assert dl.almost_poisson(sleigh.system, sleigh.q0).atlas
    assert dl.almost_poisson(disk.system, disk.q0, frame="atlas").atlas
    with pytest.raises(dl.InputError, match="frame='columns'"):
        dl.almost_poisson(sleigh.system, sleigh.q0, frame="columns")
    with pytest.raises(dl.InputError, match="not in ker"):
        dl.almost_poisson(sleigh.system, sleigh.q0, basis=lambda q: jnp.eye(3)[:, :2])


@pytest.mark.parametrize("frame", ["atlas", "auto"])
def test_reduced_vector_field_is_the_lda_flow_in_any_chart(frame):
    """Π∇𝓗 = dζ/dt along the Lagrange–d'Alembert flow, in charts anchored away from the state."""
    disk = dl.models.get("vertical-rolling-disk")
    for system, q0 in ((disk.system, disk.q0), (spring_skate(), np.array([0.3, -0.2, 0.1]))):
        ap = dl.almost_poisson(system, q0, frame=frame)

        @jax.jit
        def check(q, v, a):                                 # in the chart anchored at a
            chart = ap.in_chart(a)
            z = chart.reduce(q, v)
            zdot = jax.jvp(chart.reduce, (q, v), (v, system.acceleration(q, v)))[1]
            return (chart.vector_field(z), zdot, chart.hamiltonian(z) - system.energy(q, v),
                    chart.lift(z)[1])

        rng = np.random.default_rng(5)
        for _ in range(3):
            q = jnp.asarray(q0 + 0.4 * rng.standard_normal(q0.size))
            v = system.project_velocity(q, jnp.asarray(rng.standard_normal(q0.size)))
            field, zdot, dE, v_lift = check(q, v, ap.anchor_at(q + 0.3))   # a chart anchored elsewhere
            np.testing.assert_allclose(field, zdot, rtol=0,
                                       atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(zdot)))))
            assert abs(float(dE)) <= 1e-14
            np.testing.assert_allclose(v_lift, v, rtol=0, atol=1e-14)


def coin_with_varying_inertia(R=0.5):
    """A rolling coin, q = (x, y, θ, φ), whose rolling inertia depends on the heading φ: q-dependent
    G, constant x, y columns of μ (a system of ours, not in the model zoo)."""
    return dl.NonholonomicSystem(
        mass_matrix=lambda q: jnp.diag(jnp.stack([1.0 + 0 * q[0], 1.0 + 0 * q[0],
                                                  0.5 + 0.2 * jnp.sin(q[3]) ** 2, 0.25 + 0 * q[0]])),
        constraint_matrix=lambda q: jnp.array([[1.0, 0.0, -R * jnp.cos(q[3]), 0.0],
                                               [0.0, 1.0, -R * jnp.sin(q[3]), 0.0]]),
        potential=lambda q: 0.1 * (1.0 - jnp.cos(q[3])), name="coin-varying-inertia")


def test_solved_columns_of_a_q_dependent_metric_are_g_orthonormalised():
    """The global solved-columns basis of a q-dependent metric is used G-orthonormalised
    (𝓗 = ½ρᵀρ + V): the reduced vector field is the Lagrange–d'Alembert flow, and dg-gonzalez
    keeps the energy to round-off and follows the index-1 reference solution at order 2."""
    system = coin_with_varying_inertia()
    q0 = np.array([0.1, -0.2, 0.3, 0.4])
    ap = dl.almost_poisson(system, q0)
    assert not ap.atlas and ap.frame.g_orthonormal
    v0 = np.asarray(system.project_velocity(jnp.asarray(q0), jnp.array([0.0, 0.0, 1.2, 0.9])))

    @jax.jit
    def check(q, v):
        z = ap.reduce(q, v)
        zdot = jax.jvp(ap.reduce, (q, v), (v, system.acceleration(q, v)))[1]
        return ap.vector_field(z), zdot, ap.hamiltonian(z) - system.energy(q, v), z[4:]
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = jnp.asarray(q0 + 0.5 * rng.standard_normal(4))
        v = system.project_velocity(q, jnp.asarray(rng.standard_normal(4)))
        field, zdot, dE, rho = check(q, v)
        np.testing.assert_allclose(field, zdot, rtol=0, atol=1e-12 * max(1.0, float(jnp.max(jnp.abs(zdot)))))
        assert abs(float(dE)) <= 1e-14
        assert abs(float(jnp.sum(rho * rho)) - 2 * float(system.kinetic_energy(q, v))) <= 1e-13  # ρ = G-orthonormal
    x0 = np.asarray(ap.reduce(jnp.asarray(q0), jnp.asarray(v0)))
    ref = dl.integrate(system, "reference", q0=q0, v0=v0, h=0.5, t_final=10.0, progress=False)
    errs = []
    for h in (0.1, 0.05, 0.025):
        tr = dl.integrate(ap, "dg-gonzalez", x0=x0, h=h, t_final=10.0, save_every=int(round(0.5 / h)),
                          progress=False)
        assert tr.max_relative_energy_error <= 1e-12
        assert np.max(np.abs(tr.constraint_residual)) <= 1e-12
        errs.append(np.max(np.abs(tr.q[:, :4] - ref.q)))
    assert 1.8 <= fitted_order([0.1, 0.05, 0.025], errs) <= 2.2, errs


FREE_SKATE = free_skate()     # shared by the tests below: one compiled single-run program


def test_forced_chart_switches_keep_energy_and_constraint_and_happen_every_45_degrees():
    """A skate turning at 3 rad/s: the chart is left when the blade has turned 45° from its
    anchor (conditioning cos² < 1/2), so the switches come every π/4 of heading."""
    u, w, h = 1.1, 3.0, 0.01
    q0, v0 = skate_state(0.3, u, w)
    tr = dl.integrate(FREE_SKATE, "dg-gonzalez", q0=q0, v0=v0, h=h, t_final=6.0, save_every=3)
    md = tr.metadata
    assert md["chart_switches"] >= 20 and md["chart_switch_times_complete"]
    times = np.asarray(md["chart_switch_times"])
    assert len(times) == md["chart_switches"] and np.all(np.diff(times) > 0)
    turned = w * np.diff(np.concatenate([[0.0], times]))
    assert np.all(turned >= np.pi / 4 - 1e-9) and np.all(turned <= np.pi / 4 + w * h + 1e-9)
    assert tr.max_relative_energy_error <= 1e-12
    assert np.max(np.abs(tr.constraint_residual)) <= 1e-12
    # an O(h²) error after 18 rad of heading (the order is fitted in the next test)
    assert np.max(np.abs(tr.q - skate_exact(tr.t, q0, u, w))) <= 1e-2


def test_chart_switches_do_not_break_second_order():
    """Fitted order of the final error against the closed-form motion, with switches in every run."""
    u, w = 0.8, 2.0
    q0, v0 = skate_state(1.0, u, w)
    errs, hs = [], [0.04, 0.02, 0.01]
    sys_ = free_skate()
    for h in hs:
        tr = dl.integrate(sys_, "dg-avf", q0=q0, v0=v0, h=h, t_final=4.0)
        assert tr.metadata["chart_switches"] >= 8
        errs.append(np.max(np.abs(tr.q[-1] - skate_exact(tr.t[-1:], q0, u, w)[0])))
    slope = fitted_order(hs, errs)
    assert abs(slope - 2.0) <= 0.15, (errs, slope)


def test_anchor_is_state_not_program():
    """One compiled program serves every initial state and chart of a system object: runs from
    several headings (4.3 rad: where a chart baked at the first run's anchor failed at step 4)
    give what fresh objects give, bit for bit, and add no program."""
    sys_a = spring_skate()
    h, T = 0.05, 3.0
    states = [skate_state(phi, 0.9, 1.7) for phi in (0.1, 2.0, 4.3, -2.5)]
    dl.integrate(sys_a, "dg-gonzalez", q0=states[0][0], v0=states[0][1], h=h, t_final=T)
    n_programs = len(_cache.for_object(sys_a))
    for q0, v0 in states[1:]:
        again = dl.integrate(sys_a, "dg-gonzalez", q0=q0, v0=v0, h=h, t_final=T)
        fresh = dl.integrate(spring_skate(), "dg-gonzalez", q0=q0, v0=v0, h=h, t_final=T)
        np.testing.assert_array_equal(again.q, fresh.q)
        np.testing.assert_allclose(again.v, fresh.v, rtol=0, atol=1e-14)
        assert again.metadata["compile_time_s"] < 0.5
    assert len(_cache.for_object(sys_a)) == n_programs


def test_ensemble_members_each_carry_their_chart():
    sys_ = FREE_SKATE
    states = [skate_state(phi, 1.0, w) for phi, w in ((0.1, 2.0), (3.0, -1.5), (4.3, 2.5))]
    q0s, v0s = np.stack([s[0] for s in states]), np.stack([s[1] for s in states])
    ens = dl.ensemble(sys_, "dg-gonzalez", q0=q0s, v0=v0s, h=0.02, t_final=4.0)
    for i, (q0, v0) in enumerate(states):
        one = dl.integrate(sys_, "dg-gonzalez", q0=q0, v0=v0, h=0.02, t_final=4.0)
        np.testing.assert_allclose(ens.q[i], one.q, rtol=0, atol=1e-12)
    assert min(ens.metadata["chart_switches"]) >= 5


@pytest.mark.parametrize("name", ["vertical-rolling-disk", "chaotic-quartic"])
def test_solved_columns_frame_gives_the_hand_derived_trajectory(name):
    """The disk's and the quartic's solved-columns bases are the hand-derived ones up to order
    and sign, under which (14) with the Gonzalez DG is invariant: the same trajectory to round-off."""
    m = dl.models.get(name)
    h, T = m.default_h, 40 * m.default_h
    auto = dl.integrate(m.system, "dg-gonzalez", h=h, t_final=T, **m.initial_state)
    ap = m.almost_poisson
    hand = dl.integrate(ap, "dg-gonzalez", x0=np.asarray(ap.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0))),
                        h=h, t_final=T)
    scale = max(1.0, np.max(np.abs(hand.q)))
    np.testing.assert_allclose(auto.q, hand.q, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(auto.energy, hand.energy, rtol=1e-13)


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_sleigh_atlas_agrees_with_the_hand_form_and_a_given_basis_to_round_off():
    """Along the whole Figure-3 motion (the sleigh turns round, the atlas switches charts): the
    atlas frame is G-orthonormal like the hand form's (§4.2), and on the sleigh the two differ by a
    constant rotation of ρ in each chart, under which (14) is covariant: the automatic trajectory
    is the hand-derived one to round-off (it differs by O(h²) for a non-orthonormal frame). The
    reduction on the hand form's own basis (a global basis given by the user) reproduces it too."""
    spin = dl.models.get("chaplygin-sleigh", a=0.03)     # spinning: 3 turns in t = 20
    q0, v0 = np.array([0.0, 0.0, 0.1]), np.array([0.01 * np.cos(0.1), 0.01 * np.sin(0.1), 2.0])
    ap = spin.almost_poisson
    hand = dl.integrate(ap, "dg-gonzalez", x0=np.asarray(ap.reduce(jnp.asarray(q0), jnp.asarray(v0))),
                        h=0.05, t_final=20.0)
    auto = dl.integrate(spin.system, "dg-gonzalez", q0=q0, v0=v0, h=0.05, t_final=20.0)
    assert auto.metadata["chart_switches"] >= 10
    np.testing.assert_allclose(auto.q, hand.q, rtol=0, atol=1e-12 * max(1.0, np.max(np.abs(hand.q))))
    m = dl.models.get("chaplygin-sleigh")
    ap = m.almost_poisson
    T = 30.0
    K = m.params["J"] + m.params["m"] * m.params["a"] ** 2

    def basis(q):
        return jnp.stack([jnp.stack([0.0 * q[2], jnp.cos(q[2]) / np.sqrt(m.params["m"])]),
                          jnp.stack([0.0 * q[2], jnp.sin(q[2]) / np.sqrt(m.params["m"])]),
                          jnp.stack([1.0 / np.sqrt(K) + 0.0 * q[2], 0.0 * q[2]])])
    given = dl.almost_poisson(m.system, m.q0, basis=basis)
    assert not given.atlas
    x0 = np.asarray(given.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0)))
    tr = dl.integrate(given, "dg-gonzalez", x0=x0, h=0.1, t_final=T)
    hand = dl.integrate(ap, "dg-gonzalez", x0=x0, h=0.1, t_final=T)
    np.testing.assert_allclose(tr.q, hand.q, rtol=0, atol=1e-11)


# --- failures that say why ---------------------------------------------------------------------

def test_newton_causes_unit():
    def noisy(x):                   # round-off-like noise of 1e-9: the updates stall above 1e-14
        return x - 1.0 + 1e-9 * jnp.sin(1e9 * x)
    res = nm.newton(noisy, jnp.array([0.5]), jacobian=lambda x: jnp.eye(1), max_iter=30)
    assert not bool(res.converged) and int(res.cause) == nm.NOT_REACHABLE
    res = nm.newton(lambda x: jnp.log(x), jnp.array([3.0]), jacobian=lambda x: 0.2 * jnp.eye(1),
                    max_iter=30)                                   # an iterate goes negative: log -> NaN
    assert not bool(res.converged) and int(res.cause) == nm.NON_FINITE
    res = nm.newton(lambda x: x ** 3 - 2 * x + 2, jnp.array([0.0]), max_iter=40)   # the 0 ↔ 1 cycle
    assert not bool(res.converged) and int(res.cause) in (nm.DIVERGED, nm.MAX_ITERATIONS)
    res = nm.newton(lambda x: jnp.arctan(x), jnp.array([2.0]), max_iter=40)         # overshoots
    assert not bool(res.converged) and int(res.cause) == nm.DIVERGED
    res = nm.newton(lambda x: (x - 2.0) ** 2, jnp.array([3.0]), max_iter=10)         # slow, linear
    assert not bool(res.converged) and int(res.cause) == nm.MAX_ITERATIONS
    # the round-off floor of the residual's terms
    big = 1e6

    def scaled(x):
        return (x - 1.0) + big * 1e-14 * jnp.sin(1e9 * x), jnp.full_like(x, big)
    res = nm.newton(scaled, jnp.array([0.5]), jacobian=lambda x: jnp.eye(1), has_scale=True)
    assert bool(res.converged) and int(res.cause) == nm.CONVERGED

    # noise above the terms' round-off (an ill-conditioned factor inside the residual), here a
    # residual with no exact root whose iterates cycle at ±noise about 1: a stall within
    # STALL_SLACK × rtol is accepted, one above it is not reachable
    def hidden(noise):
        return lambda x: ((x - 1.0) + noise * jnp.where(x >= 1.0, 1.0, -1.0), jnp.ones_like(x))
    res = nm.newton(hidden(3e-13), jnp.array([0.5]), jacobian=lambda x: jnp.eye(1), has_scale=True)
    assert bool(res.converged) and abs(float(res.x[0]) - 1.0) <= 1e-12
    res = nm.newton(hidden(1e-10), jnp.array([0.5]), jacobian=lambda x: jnp.eye(1), has_scale=True,
                    max_iter=30)
    assert not bool(res.converged) and int(res.cause) == nm.NOT_REACHABLE


def test_a_degenerate_chart_fails_with_its_cause_and_keeps_the_nodes():
    sys_ = free_skate()
    ap = dl.almost_poisson(sys_, np.zeros(3))
    ap.switch_below = 0.0                                  # no switching: the chart runs out
    q0, v0 = skate_state(0.3, 1.0, 2.0)
    with pytest.raises(dl.ConvergenceError) as e:
        dl.integrate(ap, "dg-gonzalez", x0=np.asarray(ap.reduce(jnp.asarray(q0), jnp.asarray(v0))),
                     h=0.05, t_final=10.0)
    assert e.value.cause == nm.CHART and "chart" in str(e.value) and "smaller h" in str(e.value)
    tr = e.value.trajectory
    assert tr.q[-1, 2] - q0[2] > 1.0 and np.max(tr.extra["basis_conditioning"][-1]) < 0.2


def test_divergence_message_suggests_a_smaller_h_only():
    m = dl.models.get("chaotic-quartic")
    with pytest.raises(dl.ConvergenceError) as e:
        dl.integrate(m.system, "dg-gonzalez", h=2.5, t_final=50.0, **m.initial_state)
    msg = str(e.value)
    assert e.value.cause in (nm.DIVERGED, nm.MAX_ITERATIONS, nm.NON_FINITE)
    assert "smaller h" in msg and "rtol" not in msg


@pytest.mark.parametrize("n", [40])
def test_large_quartic_converges_at_round_off(n):
    """dg-gonzalez on the 161-dimensional hand-derived form (|x| ≈ 50 at t ≈ 2.4, where the fixed
    1e-14 relative test stalled): runs, energy kept to round-off."""
    m = dl.models.get("chaotic-quartic", n=n)
    ap = m.almost_poisson
    x0 = np.asarray(ap.reduce(jnp.asarray(m.q0), jnp.asarray(m.v0)))
    tr = dl.integrate(ap, "dg-gonzalez", x0=x0, h=0.05, t_final=3.0, save_every=5)
    assert tr.max_relative_energy_error <= 1e-13
    assert np.max(np.abs(tr.extra["x"])) > 10.0                    # the large states were reached


def test_the_frozen_jacobian_finds_the_same_steps(method="dg-gonzalez"):
    """The automatic reduction's default Newton Jacobian leaves out the derivative of Π
    (jacobian="frozen"): it must converge to the steps the exact Jacobian finds, to the Newton
    tolerance, across chart switches (the spring-tied skate, t = 20, save_every = 3)."""
    s = spring_skate()
    q0, v0 = np.array([0.3, -0.2, 0.1]), np.array([np.cos(0.1), np.sin(0.1), 0.9])
    kw = dict(q0=q0, v0=v0, h=0.02, t_final=20.0, save_every=3, progress=False)
    frozen = dl.integrate(s, method, **kw)
    exact = dl.integrate(s, method, jacobian="exact", **kw)
    assert frozen.metadata["chart_switches"] == exact.metadata["chart_switches"] >= 3
    np.testing.assert_allclose(frozen.q, exact.q, rtol=0, atol=1e-11)
    assert np.max(np.abs(frozen.energy - frozen.energy[0])) <= 1e-13 * abs(frozen.energy[0]) + 1e-14
    with pytest.raises(dl.InputError, match="jacobian"):
        dl.integrate(s, method, jacobian="secant", **kw)

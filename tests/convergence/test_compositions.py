"""Symmetric compositions (issue 15): ``dl.methods.compose`` and the registered compositions
(``nh-rattle-4/-6/-8``, ``gni-midpoint-4``, ``dg-gonzalez-4/-6``, ``dg-avf-4``, ``eps-midpoint-4/-6``,
``lie-gni-mv-4/-6``, ``reduced-gni-4``) reach orders 4, 6 and 8, fitted against exact or reference
solutions; their bases on D* (``nh-rattle-sym``, ``gni-midpoint-sym``, ``lie-gni-mv-sym``,
``reduced-gni-sym``) are self-adjoint maps, checked by stepping forward and back on systems that
are not in the model zoo; a composition of energy-preserving maps preserves energy; the two-step
GNI family is refused (its state's step is not self-adjoint: the triple jump of nh-rattle stays of
order 2)."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.convergence import convergence


def _fit(model, methods, hs, T, **options):
    return convergence(dl.models.get(model), methods, hs, t_final=T, **options)


@pytest.mark.parametrize("model, methods, hs, T", [
    # constant G, linear constraints, exact solution
    ("vertical-rolling-disk", {"nh-rattle-4": 4, "nh-rattle-6": 6, "nh-rattle-8": 8}, [1.6, 0.8, 0.4, 0.2], 16.0),
    # q-dependent G (the Newton path of the D* form)
    ("chaplygin-sleigh", {"gni-midpoint-4": 4, "nh-rattle-4": 4}, [1.6, 0.8, 0.4, 0.2], 16.0),
    # affine constraints
    ("p2-affine", {"nh-rattle-sym": 2, "nh-rattle-4": 4, "nh-rattle-6": 6}, [0.2, 0.1, 0.05, 0.025], 4.0),
    # explicit user coefficients and the other named sets
    ("gearbox", {"implicit-midpoint-4": 4, "dg-gonzalez-4": 4, "dg-gonzalez-6": 6}, [0.2, 0.1, 0.05, 0.025], 4.0),
    # another group and kind: the Suslov problem (R, ω) against its exact solution
    ("suslov", {"eps-midpoint-4": 4, "eps-midpoint-6": 6}, [0.4, 0.2, 0.1, 0.05], 8.0),
])
def test_composed_methods_reach_their_order(model, methods, hs, T):
    ms = [dl.methods.compose("implicit-midpoint", "triple-jump-4") if m == "implicit-midpoint-4" else m
          for m in methods]
    res = _fit(model, ms, hs, T)
    for name, order in methods.items():
        errs = np.asarray(res.errors_q[name])
        # fit on the errors above round-off (an order-8 error reaches 1e-13 at the finest h)
        slope = fitted_order(hs, errs, floor=1e-11, min_points=3)
        assert order - 0.3 <= slope <= order + 0.7, (name, slope, errs)


@pytest.mark.parametrize("name, coefficients", [("nh-rattle-sym", "mclachlan-8"), ("nh-rattle-sym", "yoshida-6")])
def test_the_other_coefficient_sets(name, coefficients):
    m = dl.methods.compose(name, coefficients, name="x")
    order = m.traits.order
    res = _fit("vertical-rolling-disk", [m], [1.6, 0.8, 0.4], 16.0)
    assert order - 0.3 <= res.orders_q["x"] <= order + 0.7, res.errors_q


def _user_system():
    """A 4-dof system not in the zoo: q-dependent metric, a potential, two constraints whose
    covectors turn with the configuration, one of them affine."""
    A = jnp.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.5, 0.2, 0.0], [0.0, 0.2, 1.0, 0.0], [0.1, 0.0, 0.0, 0.8]])
    return dl.NonholonomicSystem(
        mass_matrix=lambda q: A + jnp.diag(0.3 * (1.0 + 0.5 * jnp.sin(q))),
        potential=lambda q: jnp.sum(1.0 - jnp.cos(q)) + 0.1 * q[0] * q[1],
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0, 0.3],
                                               [0.0, 0.2, jnp.cos(q[0]), 1.0]]),
        constraint_rhs=lambda q: jnp.array([0.0, 0.2 * jnp.sin(q[1])]),
        name="user")


@pytest.mark.parametrize("name, fast_path", [("nh-rattle-sym", True), ("nh-rattle-sym", False),
                                             ("gni-midpoint-sym", True)])
def test_the_d_star_form_is_self_adjoint(name, fast_path):
    """Φ_{−h}(Φ_h(y)) = y on D* (to the Newton tolerance), from random states; the GNI's own
    (q, p⁺) step is not (the reason the D* form exists), checked the same way."""
    import jax
    system = _user_system()
    rng = np.random.default_rng(1)
    sch = dl.methods.get(name).build(system, jnp.zeros(4), fast_path=fast_path)
    step = jax.jit(sch.step)
    for _ in range(4):
        q0 = rng.uniform(-2, 2, 4)
        v0 = np.asarray(system.project_velocity(jnp.asarray(q0), jnp.asarray(rng.uniform(-1, 1, 4))))
        y0 = sch.init(jnp.asarray(q0), jnp.asarray(v0), 0.2)
        y1, info1 = step(y0, 0.2)
        y2, info2 = step(y1, -0.2)
        assert bool(info1.converged) and bool(info2.converged)
        assert np.max(np.abs(np.asarray(y1.q) - q0)) > 1e-2           # it moved
        np.testing.assert_allclose(y2.q, y0.q, atol=1e-13)
        np.testing.assert_allclose(y2.p, y0.p, atol=1e-13)
    g = dl.methods.get("gni-midpoint").build(system, q0)
    gstep = jax.jit(g.step)
    z0 = g.init(jnp.asarray(q0), jnp.asarray(v0), 0.2)
    z2 = gstep(gstep(z0, 0.2)[0], -0.2)[0]
    assert np.max(np.abs(np.asarray(z2.p) - np.asarray(z0.p))) > 1e-4


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_compositions_keep_the_constraint_and_the_dg_energy_on_a_long_run():
    system = _user_system()
    q0 = jnp.array([0.3, -0.2, 0.5, 0.1])
    v0 = system.project_velocity(q0, jnp.array([0.5, 0.4, -0.3, 0.2]))
    tr = dl.integrate(system, "nh-rattle-6", q0=q0, v0=v0, h=0.05, t_final=200.0, save_every=7,
                      progress=False)
    assert tr.max_constraint_residual <= 1e-12
    g = dl.models.get("gearbox")
    tr = dl.integrate(g.system, "dg-avf-4", h=0.05, t_final=100.0, save_every=3, progress=False, **g.initial_state)
    assert tr.max_relative_energy_error <= 1e-12
    s = dl.models.get("suslov")        # another initial ω than the model's, on SO(3)
    state = dict(s.initial_state, omega0=np.array([-0.3, 0.7, 0.0]))
    tr = dl.integrate(s.system, "eps-midpoint-4", h=0.05, t_final=200.0, save_every=7, progress=False, **state)
    assert tr.max_relative_energy_error <= 1e-12 and tr.max_constraint_residual <= 1e-14
    R = np.asarray(tr.extra["R"])[-1]
    assert np.max(np.abs(R.T @ R - np.eye(3))) <= 1e-12
    assert tr.max_constraint_residual <= 1e-12


# --- the D* forms of the Lie-group and reduced GNI, on systems of our own ------------------------

def _veselova_body():
    """A rigid body whose angular velocity has no component along the spatial vertical, written in
    the body (A(R) = (Rᵀe₃)ᵀ turns with R), with a non-diagonal inertia: not in the model zoo."""
    from dalembert.systems import LieNonholonomicSystem
    inertia = np.array([[2.0, 0.2, -0.1], [0.2, 1.4, 0.15], [-0.1, 0.15, 0.9]])
    return LieNonholonomicSystem(inertia, lambda R: R[2, :], name="veselova-user")


def _tilted_cart(constant_metric=False):
    """R² × SO(3), left trivialization: a shape-dependent metric coupling x and the body rotation
    (constant with ``constant_metric``: reduced-gni-sym's fast path), a potential, two constraints
    that turn with R and x, one of them affine: not in the zoo."""
    B = jnp.array([[1.5, 0.1, 0.2, 0.0, -0.1], [0.1, 1.2, 0.0, 0.15, 0.0], [0.2, 0.0, 0.9, 0.05, 0.0],
                   [0.0, 0.15, 0.05, 0.8, 0.1], [-0.1, 0.0, 0.0, 0.1, 0.7]])

    def constraint_matrix(x, R):
        return jnp.stack([jnp.concatenate([jnp.array([1.0, 0.0]), -0.6 * R[:, 1]]),
                          jnp.concatenate([jnp.array([0.0, 1.0 + 0.3 * jnp.cos(x[0])]),
                                           0.5 * R[:, 0] + jnp.array([0.0, 0.0, 0.2])])])

    metric = np.asarray(B) if constant_metric else (
        lambda x: B + jnp.diag(jnp.concatenate([0.2 * jnp.sin(x) ** 2, jnp.zeros(3)])))
    return dl.ReducedSystem(metric, constraint_matrix, potential=lambda x: 0.5 * x[0] ** 2 + 0.3 * jnp.cos(x[1]),
                            constraint_rhs=lambda x, R: jnp.array([0.1 * jnp.sin(x[1]), 0.0]),
                            shape_dim=2, name="tilted-cart")


def _rotation(v):
    from scipy.spatial.transform import Rotation
    return Rotation.from_rotvec(v).as_matrix()


def _body_state(system, rotvec, omega):
    R0 = _rotation(rotvec)
    return {"R0": R0, "omega0": np.asarray(system.project(jnp.asarray(R0), jnp.asarray(omega)))}


def _cart_state(system, rotvec, x0=(0.3, -0.2), xdot=(0.5, -0.3), xi=(0.4, 0.8, -0.6)):
    names = ("x0", "R0", "xdot0", "xi0")
    return dict(zip(names, system.check_initial_state(np.asarray(x0), _rotation(rotvec), np.asarray(xdot),
                                                      np.asarray(xi), project=True)))


def _group_step_pairs():
    """(system, D* form, two-step form, states): the Lie-group and the reduced GNI (the latter with a
    shape-dependent and with a constant metric: the general and the fast path)."""
    body = _veselova_body()
    rng = np.random.default_rng(3)
    body_states = [_body_state(body, rng.uniform(-2, 2, 3), rng.uniform(-1, 1, 3)) for _ in range(3)]
    out = [(body, "lie-gni-mv-sym", "lie-gni-mv", body_states)]
    for cart in (_tilted_cart(), _tilted_cart(constant_metric=True)):
        states = [_cart_state(cart, rng.uniform(-2, 2, 3), rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2),
                              rng.uniform(-1, 1, 3)) for _ in range(3)]
        out.append((cart, "reduced-gni-sym", "reduced-gni", states))
    return out


@pytest.mark.parametrize("case", [0, 1, 2], ids=["lie-gni-mv-sym", "reduced-gni-sym", "reduced-gni-sym-fast"])
def test_the_group_d_star_forms_are_self_adjoint(case):
    """Φ_{−h}(Φ_h(y)) = y for the Lie-group and the reduced D* forms from random states of systems
    of our own (R-dependent constraints, one affine, a shape-dependent metric); the two-step
    forms' (R, μ⁺) steps are not (they stay of order 2 when composed)."""
    import jax
    system, sym, two_step, states = _group_step_pairs()[case]
    for name, self_adjoint in ((sym, True), (two_step, False)):
        sch = dl.methods.get(name).build(system)
        step = jax.jit(sch.step)
        for state in states:
            y0 = sch.init(*(jnp.asarray(state[k]) for k in type(system).state_names), 0.3)
            y1, info1 = step(y0, 0.3)
            y2, info2 = step(y1, -0.3)
            assert bool(info1.converged) and bool(info2.converged)
            assert np.max(np.abs(np.asarray(y1.R) - np.asarray(y0.R))) > 1e-2       # it moved
            # the map's state: every field but the multiplier kept as the next Newton guess
            gap = max(float(np.max(np.abs(np.asarray(getattr(y2, f)) - np.asarray(getattr(y0, f)))))
                      for f in y0._fields if f != "lam")
            if self_adjoint:
                assert gap <= 1e-13, (name, gap)
            else:
                assert gap > 1e-4, (name, gap)
    if case == 2:       # the fast path takes the general path's step
        fast, general = (jax.jit(dl.methods.get(sym).build(system, fast_path=f).step) for f in (True, False))
        sch = dl.methods.get(sym).build(system)
        for state in states:
            y0 = sch.init(*(jnp.asarray(state[k]) for k in type(system).state_names), 0.3)
            for a, b in zip(fast(y0, 0.3)[0], general(y0, 0.3)[0]):
                np.testing.assert_allclose(a, b, atol=1e-13)


def _fitted_order_at(system, state, name, hs, T, ref, arrays):
    """The order fitted to max over ``arrays`` of |a(T) − ref[a](T)|, each run's constraint
    residual ≤ 1e-12 checked on the way."""
    errs = []
    for h in hs:
        tr = dl.integrate(system, name, h=h, t_final=T, progress=False, **state)
        errs.append(max(np.max(np.abs(getattr(tr, a)[-1] - ref[a][-1])) for a in arrays))
        assert tr.max_constraint_residual <= 1e-12
    return fitted_order(hs, errs), errs


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_group_compositions_reach_their_order_on_user_systems():
    """lie-gni-mv-4/-6 and reduced-gni-4 against the DOP853 reference (rtol 1e-13) of the two
    systems of our own: the error of R and ω (x) at T."""
    from dalembert.systems.reduced import reference_solution
    body = _veselova_body()
    state = _body_state(body, [0.3, -0.5, 0.8], [0.7, -0.4, 1.1])
    ref = body.reference_solution(state["R0"], state["omega0"], t=np.array([0.0, 6.0]))
    for name, order, hs in (("lie-gni-mv-sym", 2, [0.2, 0.1, 0.05]), ("lie-gni-mv-4", 4, [0.2, 0.1, 0.05]),
                            ("lie-gni-mv-6", 6, [0.4, 0.2, 0.1])):
        slope, errs = _fitted_order_at(body, state, name, hs, 6.0, ref, ("R", "omega"))
        assert order - 0.3 <= slope <= order + 0.5, (name, errs)
    cart = _tilted_cart()
    state = _cart_state(cart, [0.2, 0.4, -0.3])
    ref = reference_solution(cart, *state.values(), np.array([0.0, 4.0]))
    for name, order in (("reduced-gni-sym", 2), ("reduced-gni-4", 4)):
        slope, errs = _fitted_order_at(cart, state, name, [0.1, 0.05, 0.025], 4.0, ref, ("R", "x"))
        assert order - 0.3 <= slope <= order + 0.5, (name, errs)


def test_the_lie_d_star_form_keeps_the_suslov_energy():
    """With constant covectors the MV D* form and its compositions keep ½ωᵀ𝕀ω to round-off (class
    doc of SymmetricLieGNI): a Suslov body of our own, non-diagonal inertia and a generic
    constraint vector, over t = 500 from two states, every 3rd node saved; the energy of the
    two-step lie-gni-mv, whose parasitic mode this body excites, is not kept."""
    import warnings
    from dalembert.systems import LieNonholonomicSystem
    inertia = np.array([[1.6, 0.3, -0.2], [0.3, 1.1, 0.1], [-0.2, 0.1, 0.7]])
    a = np.array([0.3, -0.5, 0.8])
    body = LieNonholonomicSystem(inertia, a, name="suslov-user")
    for name in ("lie-gni-mv-sym", "lie-gni-mv-6"):
        for rotvec, omega in (([0.1, 0.2, 0.3], [0.7, 0.4, 0.1]), ([-1.2, 0.4, 2.0], [-0.2, 1.3, 0.6])):
            tr = dl.integrate(body, name, h=0.1, t_final=500.0, save_every=3, progress=False,
                              **_body_state(body, rotvec, omega))
            assert tr.max_relative_energy_error <= 1e-12, (name, tr.max_relative_energy_error)
            assert tr.max_constraint_residual <= 1e-14
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = dl.integrate(body, "lie-gni-mv", h=0.1, t_final=500.0, save_every=3, progress=False,
                          **_body_state(body, [0.1, 0.2, 0.3], [0.7, 0.4, 0.1]))
    assert tr.max_relative_energy_error > 1e-6


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_group_compositions_on_long_runs():
    """Hundreds of time units from two initial states of each system, every 7th (3rd) node saved:
    the constraint to round-off, R orthogonal, and (linear constraints) a bounded energy error."""
    body = _veselova_body()
    for rotvec, omega in (([0.3, -0.5, 0.8], [0.7, -0.4, 1.1]), ([2.0, 0.1, -1.0], [-1.5, 0.3, 0.2])):
        tr = dl.integrate(body, "lie-gni-mv-6", h=0.1, t_final=300.0, save_every=7, progress=False,
                          **_body_state(body, rotvec, omega))
        assert tr.t[-1] == 300.0 and len(tr.t) == 3000 // 7 + 2
        assert tr.max_constraint_residual <= 1e-12 and tr.max_relative_energy_error <= 1e-7
        assert np.max(tr.extra["orthogonality_defect"]) <= 1e-12
    cart = _tilted_cart()
    for rotvec in ([0.2, 0.4, -0.3], [-1.0, 0.5, 2.0]):
        tr = dl.integrate(cart, "reduced-gni-4", h=0.05, t_final=200.0, save_every=3, progress=False,
                          **_cart_state(cart, rotvec))
        assert tr.max_constraint_residual <= 1e-12
        assert np.max(tr.extra["orthogonality_defect"]) <= 1e-12


def test_compose_refuses_what_it_cannot_raise():
    with pytest.raises(dl.InputError, match="not a self-adjoint map"):
        dl.methods.compose("nh-rattle")
    for two_step in ("lie-gni-mv", "reduced-gni"):
        with pytest.raises(dl.InputError, match="not a self-adjoint map"):
            dl.methods.compose(two_step)
    with pytest.raises(dl.InputError, match="not symmetric"):
        dl.methods.compose("gni-euler-a")
    with pytest.raises(dl.InputError, match="palindromic"):
        dl.methods.compose("implicit-midpoint", [0.3, 0.7])
    with pytest.raises(dl.InputError, match="unknown coefficients"):
        dl.methods.compose("implicit-midpoint", "kahan-li-10")
    with pytest.raises(dl.InputError, match="order 2"):
        dl.methods.compose("nh-rattle-4", "suzuki-4")


def test_equal_compositions_share_one_program(compile_counter):
    """Two compose() calls with the same base and coefficients give equal methods (equal hash):
    the second run compiles nothing and equals the first bit for bit (before: a Method compared
    by identity, so each new but equal composition compiled its start and chunk programs again).
    Other coefficients (or another name) give another method, which compiles its own program and
    another trajectory (the negative control)."""
    compiles = compile_counter
    mdl = dl.models.get("gearbox")
    kw = dict(h=0.1, t_final=2.0, progress=False, **mdl.initial_state)
    a, b = (dl.methods.compose("nh-rattle-sym", "triple-jump-4") for _ in range(2))
    assert a is not b and a == b and hash(a) == hash(b)
    assert a != dl.methods.compose("nh-rattle-sym", "triple-jump-4", name="other")
    first = dl.integrate(mdl.system, a, **kw)
    assert compiles[0] >= 2                    # start and chunk (the counter counts)
    compiles[0] = 0
    second = dl.integrate(mdl.system, b, **kw)
    assert compiles[0] == 0
    for k in ("q", "v", "energy"):
        assert np.array_equal(getattr(first, k), getattr(second, k)), k
    other = dl.integrate(mdl.system, dl.methods.compose("nh-rattle-sym", "suzuki-4"), **kw)
    assert compiles[0] >= 2
    assert np.max(np.abs(other.q - first.q)) > 0.0


@pytest.mark.full
def test_unrolled_stages_are_the_rolled_scan():
    """``compose(unroll=True)`` (registered for gni-midpoint-4, composition.UNROLLED) compiles the
    stages unrolled for speed: the same arithmetic, so the same states bit for bit as the rolled
    loop over the fractions (the node energy, evaluated by another fusion, to within 2 ulp);
    negative control: another 4th-order method gives other states (by 1e-14 here)."""
    from dalembert.methods.composition import UNROLLED
    assert "gni-midpoint-4" in UNROLLED and dl.methods.get("gni-midpoint-4").unroll
    m = dl.models.get("chaplygin-sleigh")
    run = lambda method: dl.integrate(m.system, method, h=0.1, t_final=5.0, progress=False,  # noqa: E731
                                      **m.initial_state)
    unrolled = run("gni-midpoint-4")
    rolled = run(dl.methods.compose("gni-midpoint-sym", "suzuki-4", name="rolled"))
    other = run("nh-rattle-4")
    assert not rolled.metadata.get("unroll") and not dl.methods.compose("gni-midpoint-sym", "suzuki-4").unroll
    for k in ("q", "v", "p"):
        np.testing.assert_array_equal(getattr(unrolled, k), getattr(rolled, k))
    np.testing.assert_allclose(unrolled.energy, rolled.energy, rtol=4.5e-16, atol=0)
    assert not np.array_equal(other.q, rolled.q)

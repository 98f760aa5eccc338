"""Symmetric compositions (issue 15): ``dl.methods.compose`` and the registered compositions
(``nh-rattle-4/-6/-8``, ``gni-midpoint-4``, ``dg-gonzalez-4/-6``, ``dg-avf-4``, ``eps-midpoint-4/-6``)
reach orders 4, 6
and 8, fitted against exact or reference solutions; their bases on D* (``nh-rattle-sym``,
``gni-midpoint-sym``) are self-adjoint maps, checked by stepping forward and back on a system that
is not in the model zoo; a composition of energy-preserving maps preserves energy; the two-step
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


def test_compose_refuses_what_it_cannot_raise():
    with pytest.raises(dl.InputError, match="not a self-adjoint map"):
        dl.methods.compose("nh-rattle")
    with pytest.raises(dl.InputError, match="not symmetric"):
        dl.methods.compose("gni-euler-a")
    with pytest.raises(dl.InputError, match="palindromic"):
        dl.methods.compose("implicit-midpoint", [0.3, 0.7])
    with pytest.raises(dl.InputError, match="unknown coefficients"):
        dl.methods.compose("implicit-midpoint", "kahan-li-10")
    with pytest.raises(dl.InputError, match="order 2"):
        dl.methods.compose("nh-rattle-4", "suzuki-4")

"""Bad input is refused with the documented exception and a message that says what is wrong;
numerical failure raises ConvergenceError (with the step, the time and the partial trajectory),
never a silent NaN.
"""

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import (ConstraintViolationError, ConvergenceError, DalembertError, InputError,
                              SystemDefinitionError, UnknownNameError)

P1 = dl.models.get("p1-linear")


def run(system=None, method="nh-rattle", **kw):
    args = dict(q0=P1.q0, v0=P1.v0, h=0.1, t_final=1.0)
    args.update(kw)
    return dl.integrate(system if system is not None else P1.system, method, **args)


def _mu_particle(q):
    return jnp.stack([-q[1], jnp.zeros_like(q[1]), jnp.ones_like(q[1])])[None, :]


def make(**kw):
    args = dict(mass_matrix=np.eye(3), constraint_matrix=_mu_particle, name="test-system")
    args.update(kw)
    return dl.NonholonomicSystem(**args)


Q0 = np.zeros(3)
V0 = np.array([1.0, 0.3, 0.0])


# ---------------------------------------------------------------------------------------------
# numbers
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("q0", [np.nan, 0.3, -0.2]), ("q0", [0.5, np.inf, -0.2]),
    ("v0", [0.8, -np.inf, 0.24]), ("v0", [np.nan, -0.4, 0.24]),
])
def test_non_finite_initial_data(field, value):
    with pytest.raises(InputError) as ei:
        run(**{field: value})
    assert field in str(ei.value)
    assert "finite" in str(ei.value)


@pytest.mark.parametrize("field", ["h", "t_final"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 0.0, -0.1, "0.1x", None])
def test_bad_h_and_t_final(field, value):
    with pytest.raises(InputError) as ei:
        run(**{field: value})
    assert field in str(ei.value)


@pytest.mark.parametrize("save_every", [0, -2, 1.5, "3"])
def test_bad_save_every(save_every):
    with pytest.raises(InputError, match="save_every"):
        run(save_every=save_every)


def test_wrong_lengths():
    with pytest.raises(InputError, match="v0"):
        run(v0=[0.8, -0.4])
    with pytest.raises(InputError):
        run(q0=[0.5, 0.3])
    with pytest.raises(InputError):
        run(q0=[[0.5, 0.3, 0.2]])


# ---------------------------------------------------------------------------------------------
# inconsistent initial velocity
# ---------------------------------------------------------------------------------------------

V0_BAD = np.array([0.8, -0.4, 0.3])      # ż − y ẋ = 0.3 − 0.24 = 0.06


def test_constraint_violation_raises_with_residual():
    with pytest.raises(ConstraintViolationError) as ei:
        run(v0=V0_BAD)
    err = ei.value
    assert isinstance(err, InputError)
    assert np.allclose(err.residual, [0.06], atol=1e-15)
    assert "6.000e-02" in str(err)
    assert "project" in str(err)


def test_tiny_violation_is_tolerated_large_is_not():
    """Tolerance 1e-10 · max(1, ‖v0‖∞)."""
    run(v0=P1.v0 + np.array([0.0, 0.0, 5e-11]))
    with pytest.raises(ConstraintViolationError):
        run(v0=P1.v0 + np.array([0.0, 0.0, 5e-10]))


@pytest.mark.parametrize("model_name", ["p1-linear", "p2-affine"])
def test_project_true_projects_G_orthogonally(model_name):
    m = dl.models.get(model_name)
    v_bad = m.v0 + np.array([0.1, -0.2, 0.3])
    tr = dl.integrate(m.system, "nh-rattle", q0=m.q0, v0=v_bad, h=0.1, t_final=0.5, project=True)
    v = tr.v[0]
    assert np.max(np.abs(tr.constraint_residual)) <= 1e-12
    # the G-orthogonal projection onto {μ v = ν}, computed here with NumPy
    G = np.diag([1.0, 2.0, 1.5])
    mu = np.array([[-m.q0[1], 0.0, 1.0]])
    nu = np.array([0.5 * np.sin(m.q0[0])]) if m.system.is_affine else np.zeros(1)
    Gi_muT = np.linalg.solve(G, mu.T)
    v_ref = v_bad - Gi_muT @ np.linalg.solve(mu @ Gi_muT, mu @ v_bad - nu)
    assert np.max(np.abs(v - v_ref)) <= 1e-13
    assert np.allclose(tr.metadata["v0"], v_ref, atol=1e-15, rtol=0)
    # a consistent v0 is left alone by project=True
    tr2 = dl.integrate(m.system, "nh-rattle", q0=m.q0, v0=m.v0, h=0.1, t_final=0.5, project=True)
    assert tr2.metadata["v0"] == m.v0.tolist()
    assert np.max(np.abs(tr2.v[0] - m.v0)) <= 1e-15


# ---------------------------------------------------------------------------------------------
# user callables
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,names", [
    (dict(mass_matrix=lambda q: jnp.ones((2, 3))), ["mass_matrix", "(2, 3)"]),
    (dict(mass_matrix=lambda q: jnp.eye(4)), ["mass_matrix", "(4, 4)"]),
    (dict(constraint_matrix=lambda q: jnp.ones((1, 2))), ["constraint_matrix", "(1, 2)"]),
    (dict(constraint_matrix=lambda q: jnp.array([-q[1], 0.0, 1.0])), ["constraint_matrix"]),
    (dict(constraint_matrix=lambda q: jnp.eye(3)), ["constraint_matrix", "rows"]),
    (dict(constraint_rhs=lambda q: jnp.zeros(2)), ["constraint_rhs", "(2,)"]),
    (dict(potential=lambda q: q), ["potential", "(3,)"]),
    (dict(potential=lambda q: jnp.ones((1, 2))), ["potential"]),
])
def test_wrong_shapes_name_the_callable(kw, names):
    system = make(**kw)
    for _ in range(2):        # shape checks are cached only once they pass: a second run fails too
        with pytest.raises(SystemDefinitionError) as ei:
            run(system, q0=Q0, v0=V0)
        for s in names:
            assert s in str(ei.value)


@pytest.mark.parametrize("kw,name", [
    (dict(mass_matrix=lambda q: jnp.eye(3) * jnp.nan), "mass_matrix"),
    (dict(constraint_matrix=lambda q: jnp.array([[jnp.inf, 0.0, 1.0]])), "constraint_matrix"),
    (dict(constraint_rhs=lambda q: jnp.array([jnp.nan])), "constraint_rhs"),
    (dict(potential=lambda q: jnp.log(q[0] - 1.0)), "potential"),
    (dict(potential=lambda q: jnp.sqrt(q[0] ** 2)), "potential"),   # ∇V(0) = NaN
])
def test_non_finite_values_from_callables(kw, name):
    with pytest.raises(SystemDefinitionError) as ei:
        run(make(**kw), q0=Q0, v0=V0)
    assert name in str(ei.value)
    assert "non-finite" in str(ei.value)


def test_callable_that_raises_is_reported():
    def bad(q):
        raise RuntimeError("boom")
    with pytest.raises(SystemDefinitionError) as ei:
        run(make(potential=bad), q0=Q0, v0=V0)
    assert "potential" in str(ei.value) and "boom" in str(ei.value)


@pytest.mark.parametrize("G,what", [
    (np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), "symmetric"),
    (np.diag([1.0, 0.0, 1.0]), "positive definite"),
    (np.diag([1.0, -1.0, 1.0]), "positive definite"),
])
def test_bad_mass_matrix(G, what):
    for mass in (G, lambda q: jnp.asarray(G)):
        with pytest.raises(SystemDefinitionError) as ei:
            run(make(mass_matrix=mass), q0=Q0, v0=V0)
        assert "mass_matrix" in str(ei.value) and what in str(ei.value)


def test_non_square_mass_array_rejected_at_construction():
    with pytest.raises(SystemDefinitionError, match="mass_matrix"):
        make(mass_matrix=np.ones((2, 3)))


def test_rank_deficient_constraints():
    twice = lambda q: jnp.concatenate([_mu_particle(q), _mu_particle(q)])  # noqa: E731
    with pytest.raises(SystemDefinitionError) as ei:
        run(make(constraint_matrix=twice), q0=Q0, v0=V0)
    assert "constraint_matrix" in str(ei.value) and "rank" in str(ei.value)


def test_missing_constraints_and_non_callables():
    with pytest.raises(InputError, match="constraint_matrix"):
        dl.NonholonomicSystem(mass_matrix=np.eye(3))
    with pytest.raises(InputError, match="potential"):
        make(potential=3.0)


# ---------------------------------------------------------------------------------------------
# names
# ---------------------------------------------------------------------------------------------

def test_unknown_method_lists_valid_names():
    with pytest.raises(UnknownNameError) as ei:
        run(method="rk4")
    msg = str(ei.value)
    assert "rk4" in msg
    for name in dl.methods.available():
        assert name in msg
    assert isinstance(ei.value, DalembertError)


def test_registry_contents():
    names = set(dl.methods.available())
    assert names >= {"nh-rattle", "gni-euler-a", "gni-euler-b", "gni-euler-ab", "gni-midpoint",
                     "dla-midpoint", "reference"}
    assert dl.methods.available()["nh-rattle"].order == 2
    assert dl.methods.available()["gni-euler-a"].order == 1
    with pytest.raises(UnknownNameError):
        dl.methods.get(None)


# ---------------------------------------------------------------------------------------------
# numerical failure
# ---------------------------------------------------------------------------------------------

# V = ½|q|² inside x < 1; 0·√(1 − x) makes V and ∇V NaN beyond x = 1 and leaves the arithmetic
# unchanged inside. The motion x = 1.5 sin t leaves the region at t ≈ 0.73.
SQRT_WALL = make(potential=lambda q: 0.5 * jnp.sum(q * q) + 0.0 * jnp.sqrt(1.0 - q[0]), name="sqrt-wall")
V_OUT = np.array([1.5, 0.3, 0.0])
H = 0.05


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint", "dla-midpoint"])
@pytest.mark.parametrize("save_every", [1, 4])
def test_convergence_error_carries_partial_trajectory(method, save_every):
    with pytest.raises(ConvergenceError) as ei:
        dl.integrate(SQRT_WALL, method, q0=Q0, v0=V_OUT, h=H, t_final=2.0, save_every=save_every)
    err = ei.value
    k = err.step
    assert isinstance(k, int) and 10 <= k <= 20
    assert err.time == pytest.approx(k * H, abs=1e-14)
    assert f"step {k}" in str(err)
    tr = err.trajectory
    # nodes t_0 .. t_k at the save stride, with finite states
    assert len(tr) == k // save_every + 1
    assert np.allclose(tr.t, H * save_every * np.arange(len(tr)), atol=1e-14, rtol=0)
    for a in (tr.q, tr.v, tr.p, tr.constraint_residual):
        assert np.all(np.isfinite(a))
    assert np.all(np.isfinite(tr.energy))
    # they are exactly a prefix of a successful run that stops at the last kept node (node
    # outputs such as the energy are checked at saved nodes, so with save_every > 1 the reported
    # step is the last one before the first saved node with a non-finite output)
    good = dl.integrate(SQRT_WALL, method, q0=Q0, v0=V_OUT, h=H,
                        t_final=(len(tr) - 1) * save_every * H, save_every=1)
    assert np.array_equal(good.q[::save_every][:len(tr)], tr.q)
    assert np.array_equal(good.v[::save_every][:len(tr)], tr.v)
    # the explicit method evaluates ∇V at the nodes: its failing step is the first one that
    # leaves the region; one more step with the smooth potential (same arithmetic inside) ends
    # beyond x = 1
    if method == "nh-rattle":
        assert np.all(tr.q[:, 0] < 1.0) and np.all(np.isfinite(tr.energy))
        smooth = make(potential=lambda q: 0.5 * jnp.sum(q * q), name="smooth")
        s = dl.integrate(smooth, method, q0=Q0, v0=V_OUT, h=H, t_final=(k + 1) * H)
        assert np.all(s.q[:k + 1, 0] < 1.0) and s.q[k + 1, 0] >= 1.0
        assert np.array_equal(s.q[:len(good.q)], good.q)


def test_newton_iteration_limit_raises_at_step_zero():
    with pytest.raises(ConvergenceError) as ei:
        run(method="gni-midpoint", max_iter=1)
    err = ei.value
    assert err.step == 0 and err.time == 0.0
    assert len(err.trajectory) == 1
    assert np.array_equal(err.trajectory.q[0], P1.q0)
    # with the default limit (40) the same run succeeds, in a few iterations per step
    tr = run(method="gni-midpoint")
    assert 2 <= tr.metadata["newton"]["max_iterations"] <= 40


WHERE_WALL = make(potential=lambda q: jnp.where(q[0] < 1.0, 0.5 * jnp.sum(q * q), jnp.nan),
                  name="where-wall")


@pytest.mark.parametrize("system,method", [(WHERE_WALL, "nh-rattle"), (SQRT_WALL, "gni-midpoint")],
                         ids=["where-wall-nh-rattle", "sqrt-wall-gni-midpoint"])
def test_potential_nan_value_is_not_silent(system, method):
    try:
        tr = dl.integrate(system, method, q0=Q0, v0=V_OUT, h=H, t_final=2.0)
    except ConvergenceError as err:
        assert np.all(np.isfinite(err.trajectory.energy)), "NaN energy in ConvergenceError.trajectory"
        return
    assert np.all(np.isfinite(tr.energy)), "silent NaN energies in the returned trajectory"


def test_method_for_another_system_kind_is_a_clear_error():
    """A method built for another kind of system (here a Lie-group method on a system on R^n,
    and the R^n GNI on the Suslov problem) raises InputError naming both, not AttributeError."""
    p1 = dl.models.get("p1-linear")
    with pytest.raises(dl.InputError, match="eps-midpoint"):
        dl.integrate(p1.system, "eps-midpoint", q0=p1.q0, v0=p1.v0, h=0.1, t_final=1.0)
    sus = dl.models.get("suslov")
    with pytest.raises(dl.InputError, match="integrates nonholonomic systems.*euler-poincare-suslov"):
        dl.integrate(sus.system, "nh-rattle", h=0.1, t_final=1.0, **sus.initial_state)


# ---------------------------------------------------------------------------------------------
# issue 39 item 9: the reference method's memory bound; dl.solve's input
# ---------------------------------------------------------------------------------------------

def _one_line(err) -> str:
    msg = str(err.value)
    assert "\n" not in msg, msg
    return msg


def test_reference_run_too_large_for_memory_is_refused_before_it_allocates():
    with pytest.raises(InputError) as ei:
        run(method="reference", h=1e-3, t_final=1e6)          # 1e9 nodes
    msg = _one_line(ei)
    assert "reference run would keep 1,000,000,001 nodes" in msg and "save_every" in msg


def test_solve_refuses_bad_state_and_n_steps_with_one_line():
    import jax
    s = P1.system
    q0, v0 = np.asarray(P1.q0, float), np.asarray(P1.v0, float)
    with pytest.raises(InputError) as ei:                        # not a tuple
        dl.solve(s, "nh-rattle", np.stack([q0, v0]), 0.1, 10)
    assert "dl.solve: state0 must be a tuple of the 2 arrays (q0, v0)" in _one_line(ei)
    with pytest.raises(InputError) as ei:                        # a tuple of one
        dl.solve(s, "nh-rattle", (q0,), 0.1, 10)
    assert "got a tuple of 1" in _one_line(ei)
    with pytest.raises(InputError) as ei:                        # wrong shape, concrete
        dl.solve(s, "nh-rattle", (q0[:2], v0), 0.1, 10)
    assert _one_line(ei).startswith("dl.solve: ") and "shape" in str(ei.value)
    with pytest.raises(InputError) as ei:                        # wrong shape, traced
        jax.jit(lambda q, v: dl.solve(s, "nh-rattle", (q, v), 0.1, 10)["q"])(q0[:2], v0)
    assert "dl.solve: state0 shapes [(2,), (3,)] do not fit" in _one_line(ei)
    with pytest.raises(InputError) as ei:                        # traced n_steps
        jax.jit(lambda n: dl.solve(s, "nh-rattle", (q0, v0), 0.1, n)["q"])(10)
    assert "n_steps is a traced value" in _one_line(ei) and "Python int" in str(ei.value)
    with pytest.raises(InputError) as ei:
        dl.solve(s, "nh-rattle", (q0, v0), 0.1, 10.5)
    assert "n_steps must be an integer; got 10.5" in _one_line(ei)


def test_solve_refuses_v0_off_the_constraint_unless_asked_to_project():
    s = P1.system
    q0, v0 = np.asarray(P1.q0, float), np.asarray(P1.v0, float)
    off = v0 + np.array([0.0, 0.0, 0.5])
    with pytest.raises(ConstraintViolationError) as ei:
        dl.solve(s, "nh-rattle", (q0, off), 0.1, 10)
    msg = _one_line(ei)
    assert msg.startswith("dl.solve: v0 violates the constraints") and "project=True" in msg
    assert ei.value.residual is not None
    projected = s.check_initial_state(q0, off, project=True)
    a = dl.solve(s, "nh-rattle", (q0, off), 0.1, 10, project=True)
    b = dl.solve(s, "nh-rattle", projected, 0.1, 10)
    np.testing.assert_array_equal(a["q"], b["q"])
    # a consistent state passes through unchanged (no projection, so the same values)
    np.testing.assert_array_equal(dl.solve(s, "nh-rattle", (q0, v0), 0.1, 10)["q"][0], q0)


# ---------------------------------------------------------------------------------------------
# issue 39 item 11: gni misuse, metadata, dl.convergence's arguments, complex data
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("L_d, what", [
    (3.0, "got float"),
    ("midpoint", "got the string 'midpoint' (a registered method is dl.methods.get(name))"),
    (P1.system, "got NonholonomicSystem"),
    (dl.methods.get("nh-rattle"), "got GNI"),
    (lambda q0, q1: jnp.sum(q0 * q1), "got a callable with parameters (q0, q1), which does not take (q0, q1, h)"),
], ids=["number", "string", "system", "method", "two-arguments"])
def test_gni_of_something_not_a_discrete_lagrangian_is_one_line(L_d, what):
    with pytest.raises(InputError) as ei:
        dl.methods.gni(L_d)
    msg = _one_line(ei)
    assert msg.startswith("dl.methods.gni takes a discrete Lagrangian: a callable L_d(q0, q1, h) -> scalar")
    assert what in msg


def test_gni_of_a_vector_valued_discrete_lagrangian_is_refused_before_tracing():
    with pytest.raises(InputError) as ei:
        run(method=dl.methods.gni(lambda q0, q1, h: q0 * q1, name="vector-ld"))
    assert "vector-ld: the discrete Lagrangian L_d(q0, q1, h) must return a scalar" in _one_line(ei)


@pytest.mark.parametrize("metadata, what", [
    ("a note", 'metadata must be a dict of JSON values, e.g. metadata={"note": ...}; got str'),
    ({"f": object()}, "metadata['f'] has no JSON form"),
    ({"s": {1, 2}}, "metadata['s'] has no JSON form"),
    ({("a", 1): 2}, "the key ('a', 1) is a tuple; keys must be strings"),
], ids=["string", "object", "set", "tuple-key"])
def test_metadata_must_be_a_dict_of_json_values_at_the_call(metadata, what, tmp_path):
    with pytest.raises(InputError) as ei:
        run(metadata=metadata)
    assert what in _one_line(ei)
    with pytest.raises(InputError) as ei:          # the ensemble checks it at the call too
        dl.ensemble(P1.system, "nh-rattle", q0=np.stack([P1.q0] * 2), v0=np.stack([P1.v0] * 2),
                    h=0.1, t_final=1.0, metadata=metadata)
    assert what in _one_line(ei)
    ok = run(metadata={"note": "fine", "a": np.arange(3), "p": tmp_path})
    assert dl.load(ok.save(tmp_path / "ok.npz")).metadata["note"] == "fine"


def test_convergence_arguments_are_checked_with_what_to_pass():
    m = dl.models.get("p1-linear")
    with pytest.raises(InputError) as ei:
        dl.convergence("p1-linear", ["nh-rattle"], [0.1, 0.05])
    assert ("dl.convergence: model must be a model of the zoo, e.g. dl.models.get('p1-linear')"
            in _one_line(ei))
    with pytest.raises(InputError) as ei:
        dl.convergence(m.system, ["nh-rattle"], [0.1, 0.05])      # a system without its state
    assert "needs its initial state and final time: pass q0=..., v0=..., t_final=..." in _one_line(ei)
    with pytest.raises(InputError) as ei:
        dl.convergence(3.0, ["nh-rattle"], [0.1, 0.05])
    assert "got float" in _one_line(ei)
    for hs in ([], [0.1], 0.1, [0.1, 0.1]):
        with pytest.raises(InputError) as ei:
            dl.convergence(m, ["nh-rattle"], hs)
        assert "at least two different step sizes" in _one_line(ei) and "hs=[0.1, 0.05, 0.025]" in str(ei.value)
    with pytest.raises(InputError) as ei:
        dl.convergence(m, ["nh-rattle"], [0.1, -0.05])
    assert "finite and > 0" in _one_line(ei)
    res = dl.convergence(m, "nh-rattle", [0.1, 0.05], t_final=1.0)      # one name is one method
    assert list(res.orders_q) == ["nh-rattle"]


def test_complex_data_are_refused_by_the_systems_checks():
    from dalembert.systems.lie_nonholonomic import LieNonholonomicSystem
    G = np.eye(3) * (1 + 0.5j)
    for mass in (G, np.eye(3) + 0j):
        with pytest.raises(SystemDefinitionError) as ei:
            make(mass_matrix=mass)
        assert "mass_matrix is complex (complex128); it must be real" in _one_line(ei)
    with pytest.raises(SystemDefinitionError) as ei:
        run(make(mass_matrix=lambda q: jnp.asarray(G) * (1.0 + q[0] ** 2)), q0=Q0, v0=V0)
    assert "mass_matrix(q0) returns complex values" in _one_line(ei)
    with pytest.raises(SystemDefinitionError) as ei:
        dl.EulerPoincareSuslovSystem(np.diag([1.0, 2.0, 3.0]) * (1 + 1j), np.array([[0.0, 0.0, 1.0]]))
    assert "inertia is complex" in _one_line(ei)
    with pytest.raises(SystemDefinitionError) as ei:
        LieNonholonomicSystem(np.diag([1.0, 2.0, 3.0]) * (1 + 1j), lambda R: R[2, :][None, :])
    assert "inertia is complex" in _one_line(ei)


def _skate(potential, mu=None):
    return dl.NonholonomicSystem(mass_matrix=np.eye(3), potential=potential,
                                 constraint_matrix=mu or (lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]])))


@pytest.mark.parametrize("potential, mu, hint", [
    (lambda q: np.sin(q[0]), None, "write them with jax.numpy (import jax.numpy as jnp; jnp.sin(q[0]), not np.sin"),
    (lambda q: q[0] if q[0] > 0 else -q[0], None, "use jnp.where or jax.lax.cond"),
    (lambda q: 0.0 * q[0], lambda q: np.array([[-np.sin(q[2]), np.cos(q[2]), 0.0]]), "with jax.numpy"),
])
def test_numpy_or_python_control_flow_in_a_callable_gets_a_one_line_hint(potential, mu, hint):
    with pytest.raises(SystemDefinitionError) as e:
        dl.integrate(_skate(potential, mu), "nh-rattle", q0=np.zeros(3), v0=np.array([1.0, 0, 0]), h=0.1, t_final=1)
    msg = str(e.value)
    assert "\n" not in msg and hint in msg and "JAX" in msg and type(e.value).__name__ == "SystemDefinitionError"


def test_other_callable_errors_get_no_tracing_hint_and_the_old_name_still_works():
    with pytest.raises(SystemDefinitionError) as e:          # a wrong shape: no JAX tracing error behind it
        dl.integrate(_skate(lambda q: q[:2]), "nh-rattle", q0=np.zeros(3), v0=np.array([1.0, 0, 0]), h=0.1, t_final=1)
    assert "jax.numpy" not in str(e.value) and "jnp.where" not in str(e.value)
    with pytest.warns(DeprecationWarning, match="SystemDefinitionError"):
        from dalembert.errors import SystemError_
    assert SystemError_ is SystemDefinitionError and issubclass(SystemDefinitionError, dl.InputError)


def test_compiled_check_accepts_only_what_the_full_checks_accept():
    """check() takes a valid initial state in one compiled call (NonholonomicSystem._passes) only
    with a margin on every bound; a state nearer a bound goes through the NumPy checks, which
    accept it or name what fails, exactly as without the compiled call (negative controls: each
    bound just inside, where _passes declines, and just outside, where check() raises)."""
    s = make()
    q, v = Q0, V0
    assert s._passes(q, v, 1e-10) is not None
    np.testing.assert_array_equal(s.check(q, v)[1], v)
    # μ(q0) v0 = v0[2] here: a residual 0.7 tol is accepted by check() but not by _passes
    near = V0 + np.array([0.0, 0.0, 0.7e-10])
    assert s._passes(q, near, 1e-10) is None
    np.testing.assert_array_equal(s.check(q, near)[1], near)
    with pytest.raises(ConstraintViolationError):
        s.check(q, V0 + np.array([0.0, 0.0, 2e-10]))
    cases = [(np.diag([1.0, 1.0, c]), ok, "positive definite")      # λ_min / λ_max against DEFINITENESS_RTOL = 1e-14
             for c, ok in ((5e-14, True), (5e-15, False))]
    cases += [(lambda q, d=d: jnp.eye(3).at[0, 1].add(d), ok, "symmetric")   # max |G − Gᵀ| against SYMMETRY_RTOL = 1e-12
              for d, ok in ((0.7e-12, True), (2e-12, False))]
    for G, ok, what in cases:
        sc = make(mass_matrix=G)
        assert sc._passes(q, v, 1e-10) is None
        if ok:
            np.testing.assert_array_equal(sc.check(q, v)[1], v)
        else:
            with pytest.raises(SystemDefinitionError, match=what):
                sc.check(q, v)

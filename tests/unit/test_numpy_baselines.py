"""The NumPy loops of the speed benchmark reproduce dalembert's compiled schemes.

Two independent implementations of each scheme (closed-form NumPy with analytic ∇V, ∇²V, ∂μ/∂q
and a Python loop, versus JAX autodiff compiled into ``lax`` loops) must give the same
trajectory: q_k and the reported node momentum p̄_k to ≤ 1e-10 over 200 steps, with the same
Newton iteration counts. This checks the benchmark's baseline (it really is the same scheme) and,
in the other direction, the compiled schemes' equations.
"""
import numpy as np
import pytest

import dalembert as dl
from dalembert.bench import numpy_loops as nl

CASES = [("gearbox", 0.1), ("chaotic-quartic", 0.01)]
N_STEPS = 200


@pytest.mark.parametrize("model_name,h", CASES)
@pytest.mark.parametrize("method", nl.METHODS)
def test_numpy_loop_reproduces_dalembert(model_name, h, method):
    model = dl.models.get(model_name)
    np_model = nl.get(model_name)
    startup = nl.dalembert_startup(method)
    tr = dl.integrate(model.system, method, q0=model.q0, v0=model.v0, h=h, t_final=N_STEPS * h)
    q, p, iterations = nl.integrate(np_model, method, model.q0, model.v0, h, N_STEPS,
                                    startup=startup)
    v, pbar = nl.node_values(np_model, q, p)
    assert q.shape == tr.q.shape == (N_STEPS + 1, model.q0.size)
    assert np.max(np.abs(q - tr.q)) <= 1e-10
    assert np.max(np.abs(pbar - tr.p)) <= 1e-10
    assert np.max(np.abs(v - tr.v)) <= 1e-10
    assert iterations == tr.metadata["newton"]["total_iterations"]


@pytest.mark.parametrize("model_name", ["gearbox", "chaotic-quartic"])
def test_numpy_model_derivatives(model_name):
    """Closed-form ∇V, ∇²V, ∂μ/∂q of the NumPy models against central differences and the
    JAX model's potential and constraint matrix."""
    model = dl.models.get(model_name)
    m = nl.get(model_name)
    rng = np.random.default_rng(0)
    q = model.q0 + 0.3 * rng.standard_normal(model.q0.size)
    n, eps = q.size, 1e-6
    assert abs(m.potential(q) - float(model.system.potential(q))) <= 1e-13
    assert np.max(np.abs(m.constraint_matrix(q) - np.asarray(model.system.constraint_matrix(q)))) <= 1e-15
    assert np.max(np.abs(m.grad_potential(q) - np.asarray(model.system.grad_potential(q)))) <= 1e-13
    E = np.eye(n)
    H = np.stack([(m.grad_potential(q + eps * E[k]) - m.grad_potential(q - eps * E[k])) / (2 * eps)
                  for k in range(n)], axis=1)
    assert np.max(np.abs(H - m.hess_potential(q))) <= 1e-7
    D = np.stack([(m.constraint_matrix(q + eps * E[k]) - m.constraint_matrix(q - eps * E[k])) / (2 * eps)
                  for k in range(n)], axis=-1)
    assert np.max(np.abs(D - m.constraint_jacobian(q))) <= 1e-8


@pytest.mark.parametrize("model_name", ["gearbox", "chaotic-quartic"])
def test_numpy_index1_rhs_matches_reference_rhs(model_name):
    from dalembert.methods.reference import _rhs
    model = dl.models.get(model_name)
    y = np.concatenate([model.q0, model.v0])
    f_np = nl.index1_rhs(nl.get(model_name))(0.0, y)
    f_jax = np.asarray(_rhs(model.system, model.q0.size)(0.0, y))
    assert np.max(np.abs(f_np - f_jax)) <= 1e-13


def test_numpy_loop_reports_newton_failure():
    model = dl.models.get("gearbox")
    with pytest.raises(nl.NumpyLoopError, match="did not converge"):
        nl.integrate(nl.get("gearbox"), "gni-midpoint", model.q0, model.v0, 0.1, 5, max_iter=1)


@pytest.mark.parametrize("method", ["nh-rattle", "gni-euler-ab", "dla-midpoint"])
def test_numpy_loop_other_startup(method):
    """The start-up that is not the default (when the methods have the option)."""
    import inspect
    build = dl.methods.get("nh-rattle").build
    if "startup" not in inspect.signature(build).parameters:
        pytest.skip("the methods have a single start-up")
    other = "legendre" if nl.dalembert_startup(method) == "consistent" else "consistent"
    model = dl.models.get("gearbox")
    tr = dl.integrate(model.system, method, q0=model.q0, v0=model.v0, h=0.1, t_final=20.0,
                      startup=other)
    q, p, _ = nl.integrate(nl.get("gearbox"), method, model.q0, model.v0, 0.1, 200, startup=other)
    assert np.max(np.abs(q - tr.q)) <= 1e-10
    assert np.max(np.abs(nl.node_values(nl.get("gearbox"), q, p)[1] - tr.p)) <= 1e-10


# --- the SO(3) schemes (issue 4): dalembert.bench.numpy_lie ------------------------------------
from dalembert.bench import numpy_lie  # noqa: E402

# suslov (m = 1) and a body with two covectors (m = 2, generic inertia): ker A is a line
_I2 = np.array([[2.0, 0.3, -0.1], [0.3, 1.5, 0.2], [-0.1, 0.2, 1.0]])
_A2 = np.array([[1.0, 0.5, 0.0], [0.0, 0.2, 1.0]])


def _so3_case(case):
    if case == "suslov":
        m = dl.models.get("suslov")
        return m.system, m.initial_state["R0"], m.initial_state["omega0"], 0.1
    system = dl.EulerPoincareSuslovSystem(_I2, _A2, "two-covectors")
    w0 = np.cross(_A2[0], _A2[1])
    R0 = np.asarray(dl.lie.so3.exp(np.array([0.3, -0.2, 0.5])))
    return system, R0, 1.5 * w0 / np.linalg.norm(w0), 0.05


_SO3_CASES = [(m, "suslov") for m in numpy_lie.METHODS] + [
    ("eps-variational", "two-covectors"), ("lie-gni-mv", "two-covectors")]


@pytest.mark.parametrize("method,case", _SO3_CASES)
def test_numpy_so3_loop_reproduces_dalembert(method, case):
    """R_k and the reported ω_k of the NumPy loop and the compiled scheme agree to ≤ 1e-10 over
    200 steps, with the same Newton iteration counts (with m = 2, ω is constant: energy and
    ker A fix it up to sign; R still rotates)."""
    system, R0, w0, h = _so3_case(case)
    tr = dl.integrate(system, method, R0=R0, omega0=w0, h=h, t_final=N_STEPS * h)
    R, second, iterations = numpy_lie.integrate(system.inertia, system.A, method, R0, w0, h, N_STEPS)
    w = numpy_lie.node_values(system.inertia, system.A, method, second)
    assert R.shape == tr.R.shape == (N_STEPS + 1, 3, 3)
    assert np.max(np.abs(R - tr.R)) <= 1e-10
    assert np.max(np.abs(w - tr.omega)) <= 1e-10
    assert np.max(np.abs(R[-1] - R[0])) > 1e-1        # the motion is not trivial
    assert iterations == tr.metadata["newton"]["total_iterations"]


def test_numpy_so3_loop_reports_newton_failure():
    m = dl.models.get("suslov")
    with pytest.raises(numpy_lie.NumpyLoopError, match="did not converge"):
        numpy_lie.integrate(m.system.inertia, m.system.A, "eps-midpoint", m.initial_state["R0"],
                            m.initial_state["omega0"], 0.1, 5, max_iter=1)

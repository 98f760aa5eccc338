"""``rk8-projected`` (methods/projected_rk.py): its tableaus (Prince–Dormand's 13-stage RK8(7)13M,
the default, and DOP853) satisfy the order conditions of order 8 for the quadrature and the
stage sums; the method reaches order 8 with either on exact and
reference solutions; the constraint is kept to round-off over a long run of a system that is
not in the model zoo (q-dependent metric, turning and affine constraints), from two initial
states and with save_every ≠ 1; its steps are explicit (the engine's unchecked loop)."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import convergence, fitted_order
from dalembert.methods import projected_rk

from test_compositions import _user_system


@pytest.mark.parametrize("name, stages", [("prince-dormand-8", 13), ("dop853", 12)])
def test_the_tableau_has_order_8(name, stages):
    A, b, c = projected_rk.TABLEAUS[name]()
    assert A.shape == (stages, stages) and np.all(np.triu(A) == 0.0)       # explicit
    np.testing.assert_allclose(A.sum(axis=1), c, atol=1e-14)
    for k in range(1, 9):                                            # bushy trees: Σ b c^{k−1} = 1/k
        assert abs(b @ c ** (k - 1) - 1.0 / k) < 1e-14, k
    for k in range(0, 6):                       # trees [τ^k, [τ]]: Σ b_i c_i^k a_ij c_j = 1/(2(k + 3))
        assert abs(b @ (c ** k * (A @ c)) - 1.0 / (2 * (k + 3))) < 1e-13, k
    for k in range(0, 5):                       # [τ^k, [[τ]]]: Σ b_i c_i^k a_ij a_jl c_l = 1/(6(k + 4))
        assert abs(b @ (c ** k * (A @ (A @ c))) - 1.0 / (6 * (k + 4))) < 1e-13, k


@pytest.mark.parametrize("model, hs, T, tableau", [
    ("vertical-rolling-disk", [4.0, 2.0, 1.0, 0.5], 16.0, "prince-dormand-8"),
    ("gearbox", [0.8, 0.4, 0.2, 0.1], 8.0, "prince-dormand-8"),
    ("p2-affine", [0.4, 0.2, 0.1, 0.05], 4.0, "prince-dormand-8"),
    ("vertical-rolling-disk", [2.0, 1.0, 0.5, 0.25], 16.0, "dop853")])
def test_rk8_projected_reaches_order_8(model, hs, T, tableau):
    res = convergence(dl.models.get(model), ["rk8-projected"], hs, t_final=T, tableau=tableau)
    errs = np.asarray(res.errors_q["rk8-projected"])
    slope = fitted_order(hs, errs, floor=1e-13, min_points=3)
    assert 7.5 <= slope <= 9.2, (slope, errs)


def test_constraint_to_round_off_on_a_long_user_run():
    s = _user_system()
    q0 = jnp.array([0.1, -0.2, 0.3, 0.0])
    runs = []
    for v_guess in ([0.5, 0.2, -0.3, 0.1], [-0.4, 0.6, 0.2, -0.2]):
        q0c, v0 = s.check(q0, jnp.array(v_guess), project=True)
        tr = dl.integrate(s, "rk8-projected", q0=q0c, v0=v0, h=0.05, t_final=100.0, save_every=7, progress=False)
        assert tr.t[-1] == pytest.approx(100.0)
        assert np.max(np.abs(tr.constraint_residual)) <= 1e-13
        ref = dl.integrate(s, "reference", q0=q0c, v0=v0, h=0.05, t_final=20.0, progress=False)
        assert np.max(np.abs(tr.q[:len(ref.q[::7])] - ref.q[::7])) <= 1e-8     # SciPy's DOP853 at 1e-13
        runs.append(tr)
    assert not np.allclose(runs[0].q[-1], runs[1].q[-1])


def test_rk8_projected_is_explicit_in_the_engine():
    from dalembert.engine import loop, programs
    s = _user_system()
    q0, v0 = s.check(jnp.array([0.1, -0.2, 0.3, 0.0]), jnp.array([0.5, 0.2, -0.3, 0.1]), project=True)
    b = programs.bind(s, dl.methods.get("rk8-projected"), (np.asarray(q0), np.asarray(v0)), {})
    assert loop.never_fails(b.scheme, b.scheme.init(q0, v0, 0.1), 0.1)


def test_an_unknown_tableau_is_named():
    with pytest.raises(dl.InputError, match="unknown tableau 'rk45'.*prince-dormand-8"):
        dl.integrate(dl.models.get("gearbox").system, "rk8-projected", h=0.1, t_final=1.0,
                     tableau="rk45", progress=False, **dl.models.get("gearbox").initial_state)

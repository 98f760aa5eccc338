"""The registered ``reference`` method (DOP853) through ``dl.integrate`` for system kinds whose state
is not (q, v): ReducedSystem (x0, R0, xdot0, xi0) and LieNonholonomicSystem (R0, omega0)."""
import numpy as np
import pytest

import dalembert as dl
from dalembert.models import rolling_ball as rb


def test_reference_method_on_the_ball_equals_the_models_own_reference():
    """dl.integrate(ReducedSystem, "reference") (index-1 equations of the ReducedSystem by autodiff)
    against the model's §4.1 equations written independently in spatial ω: two formulations."""
    p, st = rb.fig3_initial_state("left")
    m = dl.models.get("rolling-ball", **p)
    tr = dl.integrate(m.system, "reference", h=0.1, t_final=10.0, **st)
    ref = m.reference(tr.t, **st)
    assert tr.x.shape == (101, 2) and tr.R.shape == (101, 3, 3)
    assert np.abs(tr.x - ref["x"]).max() <= 1e-10
    assert np.abs(tr.omega - ref["omega"]).max() <= 1e-10
    assert np.abs(tr.constraint_residual).max() <= 1e-10


def test_reference_method_reaches_a_symmetric_eps_system_through_its_view():
    """The Suslov system (an EulerPoincareSuslovSystem) has no reference of its own kind; the
    registered view as a LieNonholonomicSystem gives one, which matches the closed-form ω."""
    from dalembert.models.suslov import exact_omega
    s = dl.models.get("suslov")
    tr = dl.integrate(s.system, "reference", h=0.1, t_final=2.0, **s.initial_state)
    np.testing.assert_allclose(tr.omega, exact_omega(tr.t)["omega"], rtol=0, atol=1e-10)


def test_reference_method_refuses_a_system_kind_without_a_reference():
    ap = dl.AlmostPoissonSystem(lambda x: np.array([[0.0, 1.0], [-1.0, 0.0]]), lambda x: 0.5 * (x @ x))
    with pytest.raises(dl.InputError, match="integrates nonholonomic or reduced or lie-nonholonomic"):
        dl.integrate(ap, "reference", h=0.1, t_final=1.0, x0=np.array([1.0, 0.0]))


def test_reference_method_on_a_lie_nonholonomic_system_agrees_with_the_lie_gni():
    """R-dependent constraint (spatial ω ⊥ e3): the DOP853 reference through dl.integrate and the
    second-order Lie GNI at h = 1e-3 agree to O(h²)."""
    from dalembert.systems.lie_nonholonomic import LieNonholonomicSystem
    sys_ = LieNonholonomicSystem(np.diag([1.0, 2.0, 3.0]), lambda R: R[2, :])
    R0, w0 = np.eye(3), np.array([0.3, -0.4, 0.0])
    ref = dl.integrate(sys_, "reference", h=0.01, t_final=2.0, R0=R0, omega0=w0)
    gni = dl.integrate(sys_, "lie-gni-cayley", h=0.001, t_final=2.0, save_every=10, R0=R0, omega0=w0)
    assert ref.R.shape == gni.R.shape == (201, 3, 3)
    assert np.abs(ref.R - gni.R).max() <= 1e-5
    assert np.abs(ref.omega - gni.omega).max() <= 1e-5
    assert np.abs(ref.constraint_residual).max() <= 1e-10

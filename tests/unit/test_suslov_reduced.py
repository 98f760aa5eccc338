"""The almost-Poisson ρ form of the Suslov problem (Celledoni et al. 2019 §4.3, spec §7.3, target 19)
against the Euler–Poincaré–Suslov equations and the closed-form solution."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import fitted_order
from dalembert.errors import InputError
from dalembert.models import suslov
from dalembert.models.suslov_reduced import EXAMPLE_INERTIA, almost_poisson_form, omega_of, rho_of
from dalembert.systems.euler_poincare_suslov import EulerPoincareSuslovSystem


def _random_spd(rng):
    B = rng.standard_normal((3, 3))
    return B @ B.T + 3 * np.eye(3)


@pytest.mark.parametrize("which", ["example", "jimenez-scheurle", "random"])
def test_vector_field_is_euler_poincare_suslov(which):
    rng = np.random.default_rng(19)
    I = {"example": EXAMPLE_INERTIA, "jimenez-scheurle": suslov.INERTIA, "random": _random_spd(rng)}[which]
    form = almost_poisson_form(I)
    eps = EulerPoincareSuslovSystem(I, [0.0, 0.0, 1.0])
    vf = jax.jit(form.vector_field)
    wd = jax.jit(eps.omega_dot)
    for _ in range(20):
        w = np.concatenate([rng.standard_normal(2), [0.0]])
        rho = rho_of(I, w)
        # ρ = I_m u on ω3 = 0, so ρ̇ = I_m (ω̇1, ω̇2); the EPS field keeps ω̇3 = 0
        expected = I[:2, :2] @ np.asarray(wd(jnp.asarray(w)))[:2]
        # measured over the three inertias: 5.0e-16, 0, 2.2e-16, 3.6e-15 (round-off; the first three kept at 1e-14)
        np.testing.assert_allclose(np.asarray(vf(jnp.asarray(rho))), expected, atol=1e-14 * max(1, np.abs(expected).max()))
        assert abs(float(wd(jnp.asarray(w))[2])) < 1e-14
        np.testing.assert_allclose(omega_of(I, rho), w, atol=1e-14)
        assert abs(float(form.hamiltonian(jnp.asarray(rho))) - 0.5 * w @ I @ w) < 3.5e-14   # 10× the measured


def test_structure_functions_as_printed_for_i12_zero():
    I = EXAMPLE_INERTIA
    form = almost_poisson_form(I)
    np.testing.assert_allclose(form.structure, [I[0, 2] / I[0, 0], I[1, 2] / I[1, 1]], rtol=1e-15)
    P = np.asarray(form.poisson_matrix(jnp.array([0.3, -0.7])))
    np.testing.assert_array_equal(P, -P.T)


def test_midpoint_energy_exact_and_order_two_against_closed_form():
    I, w0 = suslov.INERTIA, suslov.OMEGA0
    form = almost_poisson_form(I)
    T = 5.0
    w_exact = suslov.exact_omega(np.array([0.0, T]), I, w0)["omega"][-1]
    hs = np.array([0.1, 0.05, 0.025])
    errs = []
    for h in hs:
        tr = dl.integrate(form, "implicit-midpoint", x0=rho_of(I, w0), h=h, t_final=T, progress=False)
        assert np.max(np.abs(tr.energy - tr.energy[0])) <= 1e-15
        errs.append(np.max(np.abs(omega_of(I, tr.x[-1]) - w_exact)))
    assert 1.9 <= fitted_order(hs, errs) <= 2.1, errs
    # the DG methods are the midpoint rule here (𝓗 quadratic, Remark 3.2)
    tr_g = dl.integrate(form, "dg-gonzalez", x0=rho_of(I, w0), h=0.1, t_final=T, progress=False)
    tr_m = dl.integrate(form, "implicit-midpoint", x0=rho_of(I, w0), h=0.1, t_final=T, progress=False)
    np.testing.assert_allclose(tr_g.x, tr_m.x, atol=1e-14)


def test_approaches_the_stable_equilibrium():
    """s = (𝕀ω)_3 → 0 along the closed-form motion; the scheme follows it (spec §7.3)."""
    I, w0 = suslov.INERTIA, suslov.OMEGA0
    form = almost_poisson_form(I)
    T = 60.0
    tr = dl.integrate(form, "implicit-midpoint", x0=rho_of(I, w0), h=0.05, t_final=T, progress=False)
    s = tr.x @ form.structure
    ex = suslov.exact_omega(np.array([0.0, T]), I, w0)
    s_exact_T = float((I @ ex["omega"][-1])[2])
    # measured: |s(0)| = 0.13, |s(60)| = 2.953e-5 (scheme) and 2.953e-5 (exact), |ω − ω_exact| = 3.8e-9 at t = 60
    assert abs(s[0]) > 0.1 and abs(s[-1]) < 1e-4 and abs(s_exact_T) < 1e-4       # ≈ 3.4×
    np.testing.assert_allclose(omega_of(I, tr.x[-1]), ex["omega"][-1], atol=3e-8)   # ≈ 8×


def test_bad_inertia():
    with pytest.raises(InputError):
        almost_poisson_form(np.eye(2))
    with pytest.raises(InputError, match="symmetric"):
        almost_poisson_form(np.array([[1.0, 0.1, 0.2], [0.1, 1.0, 0.2], [0.2, 0.1, 1.0]]))
    with pytest.raises(InputError, match="positive definite"):
        almost_poisson_form(-np.eye(3))

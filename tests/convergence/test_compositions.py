"""Symmetric compositions (issue 15, first part): ``dl.methods.compose`` raises a symmetric
one-step method of order 2 to order 4 (Yoshida's triple jump, Suzuki's fractal) and 6 (Yoshida's
solution A), fitted on the gearbox against its reference solution; a composition of
energy-preserving maps preserves energy; the two-step GNI family is refused (its state's step is
not self-adjoint: measured, the triple jump of nh-rattle stays of order 2)."""
import numpy as np
import pytest

import dalembert as dl
from dalembert.convergence import convergence

HS = [0.2, 0.1, 0.05, 0.025]


@pytest.fixture(scope="module")
def gearbox():
    return dl.models.get("gearbox")


@pytest.mark.parametrize("base, coefficients, order", [("implicit-midpoint", "triple-jump-4", 4),
                                                       ("dg-gonzalez", "suzuki-4", 4),
                                                       ("implicit-midpoint", "yoshida-6", 6)])
def test_composed_methods_reach_their_order(gearbox, base, coefficients, order):
    m = dl.methods.compose(base, coefficients)
    assert m.traits.order == order and m.name == f"{base}-{order}"
    res = convergence(gearbox, [base, m], HS, t_final=5.0)
    assert order - 0.25 <= res.orders_q[m.name] <= order + 0.5, res.orders_q
    assert res.errors_q[m.name][-1] < res.errors_q[base][-1] / 100


def test_a_composed_discrete_gradient_keeps_energy_and_the_constraint(gearbox):
    m = dl.methods.compose("dg-gonzalez", "triple-jump-4")
    tr = dl.integrate(gearbox.system, m, h=0.05, t_final=50.0, **gearbox.initial_state)
    assert tr.max_relative_energy_error <= 1e-12
    assert tr.max_constraint_residual <= 1e-12


def test_compose_refuses_what_it_cannot_raise():
    with pytest.raises(dl.InputError, match="not a self-adjoint map"):
        dl.methods.compose("nh-rattle")
    with pytest.raises(dl.InputError, match="not symmetric"):
        dl.methods.compose("gni-euler-a")
    with pytest.raises(dl.InputError, match="palindromic"):
        dl.methods.compose("implicit-midpoint", [0.3, 0.7])
    with pytest.raises(dl.InputError, match="unknown coefficients"):
        dl.methods.compose("implicit-midpoint", "kahan-li-8")

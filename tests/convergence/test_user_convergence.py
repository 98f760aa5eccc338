"""dl.convergence on a system of our own (outside the model zoo): the kind's reference solution is
the comparison; fitted orders as declared; the missing pieces are one-line errors."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError


def _skate():
    """A skate with a q-dependent metric and an anisotropic spring (ours)."""
    return dl.NonholonomicSystem(
        mass_matrix=lambda q: jnp.diag(jnp.array([1.0 + 0.1 * q[1] ** 2, 1.0, 0.2])),
        potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="my-skate")


Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])


def test_orders_of_a_users_system_against_its_reference_solution():
    """Measured: nh-rattle-sym 2.001 (q) / 2.002 (v); spark-lobatto3 4.003 / 4.000."""
    r = dl.convergence(_skate(), ["nh-rattle-sym", "spark-lobatto3"], [0.1, 0.05, 0.025], q0=Q0, v0=V0,
                       t_final=2.0)
    assert "reference solution" in r.reference and r.model == "my-skate"
    assert abs(r.orders_q["nh-rattle-sym"] - 2) <= 0.15 and abs(r.orders_v["nh-rattle-sym"] - 2) <= 0.15
    assert abs(r.orders_q["spark-lobatto3"] - 4) <= 0.3 and abs(r.orders_v["spark-lobatto3"] - 4) <= 0.3


@pytest.mark.parametrize("kw,match", [({"q0": Q0, "v0": V0}, "t_final=..."),
                                      ({"v0": V0, "t_final": 1.0}, "q0=..."),
                                      ({"q0": Q0, "v0": V0, "t_final": 1.0, "initial_state": {"R0": 1}},
                                       "unknown initial-state names")])
def test_missing_state_or_final_time_is_a_one_line_error(kw, match):
    with pytest.raises(InputError, match=match) as err:
        dl.convergence(_skate(), ["nh-rattle-sym"], [0.1, 0.05], **kw)
    assert "\n" not in str(err.value)

"""The analysis that lets the engine skip the per-step energy check (engine/finite.py): a
function made of operations that are finite on finite arguments is recognised, one with a
division, a logarithm, a square root or a non-finite constant is not."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.engine.finite import finite_on_finite

X = jax.ShapeDtypeStruct((3,), jnp.float64)


@pytest.mark.parametrize("fn, finite", [
    (lambda q: 0.5 * q @ q + jnp.cos(q[2]) - 0.2 * jnp.sin(2 * q[2]), True),
    (lambda q: jnp.sum(jnp.stack([q, q ** 3])) + jnp.tanh(q[0]) * jnp.max(q), True),
    (lambda q: jax.jit(lambda y: y[0] * y[1])(q), True),                 # inside a nested jit
    (lambda q: jnp.log(1.0 + q[0]), False),
    (lambda q: 1.0 / (1.0 + q[0] ** 2), False),
    (lambda q: jnp.sqrt(q[0]), False),
    (lambda q: jnp.exp(q[0]), False),                                     # overflows at q > 709
    (lambda q: q[0] * jnp.array(np.nan), False),                          # a non-finite constant
    (lambda q: jnp.linalg.solve(jnp.eye(3) + jnp.outer(q, q), q)[0], False),
])
def test_finite_on_finite(fn, finite):
    assert finite_on_finite(fn, X) is finite


def test_an_unused_division_does_not_count():
    assert finite_on_finite(lambda q: (q[0] ** 2, 1.0 / q[1])[0], X)


def test_a_traced_constant_is_not_assumed_finite():
    seen = []

    def outer(c):
        seen.append(finite_on_finite(lambda q: q[0] * c, X))
        return c
    jax.jit(outer)(1.0)
    assert seen == [False]


def test_the_energy_check_stays_where_the_potential_can_go_non_finite():
    from dalembert.engine import loop, programs
    q0, v0 = np.zeros(3), np.array([1.0, 0.0, 0.0])
    for V, skipped in ((lambda q: q[0] ** 2 + jnp.cos(q[2]), True), (lambda q: jnp.log(1.0 + q[0] ** 2), False)):
        s = dl.NonholonomicSystem(mass_matrix=jnp.eye(3), potential=V,
                                  constraint_matrix=lambda q: jnp.array([[0.0, 0.0, 1.0]]))
        b = programs.bind(s, dl.methods.get("nh-rattle"), (q0, v0), {})
        e = loop.step_energy(b.system, b.scheme)(b.scheme.init(jnp.asarray(q0), jnp.asarray(v0), 0.1), 0.1)
        assert (e is None) is skipped

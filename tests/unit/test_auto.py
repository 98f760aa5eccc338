"""method="auto" (and the method left out): the rule of dl.recommend on the built-in models and on
systems of our own; the choice recorded in the metadata; a negative control where the faster
two-step method warns on a default run that the chosen one runs cleanly."""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.methods import get as get_method
from dalembert.methods.kinds import accepts
from dalembert.monitors import ParasiticModeWarning


def _state(model):
    return tuple(np.asarray(v, float) for v in model.initial_state.values())


@pytest.mark.parametrize("name", dl.models.available())
def test_every_builtin_model_gets_an_accepting_self_adjoint_one_step_method(name):
    model = dl.models.get(name)
    rec = dl.recommend(model.system, _state(model))
    method = get_method(rec.method)
    assert accepts(method, model.system, _state(model))
    assert method.traits.symmetric and not method.traits.two_step and method.traits.order >= 2
    assert rec.reason and "\n" not in rec.reason


def _skate(metric):
    return dl.NonholonomicSystem(
        mass_matrix=metric, potential=lambda q: 0.5 * q[0] ** 2 + 0.3 * q[1] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate")


def test_leaving_the_method_out_is_the_recommended_method_bit_for_bit():
    """Three systems of our own (constant metric; q-dependent metric; configuration constraints):
    the run without a method equals the run with the recommended one, and the metadata names it."""
    q0, v0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])
    unit = dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2, 0.2])), potential=lambda q: 0.5 * q[0] ** 2,
        constraint_matrix=lambda q: jnp.array([[-q[3], q[2], 0.0, 0.0]]),
        holonomic_constraints=lambda q: jnp.array([q[2] ** 2 + q[3] ** 2 - 1.0]))
    cases = [(_skate(jnp.diag(jnp.array([1.0, 1.0, 0.2]))), q0, v0),
             (_skate(lambda q: jnp.diag(jnp.array([1.0 + 0.1 * q[1] ** 2, 1.0, 0.2]))), q0, v0),
             (unit, np.array([2.0, 1.0, np.cos(0.3), np.sin(0.3)]),
              np.array([np.cos(0.3), np.sin(0.3), -0.8 * np.sin(0.3), 0.8 * np.cos(0.3)]))]
    for system, q, v in cases:
        auto = dl.integrate(system, q0=q, v0=v, h=0.05, t_final=1.0, progress=False)
        rec = dl.recommend(system, (q, v))
        named = dl.integrate(system, rec.method, q0=q, v0=v, h=0.05, t_final=1.0, progress=False)
        assert auto.metadata["method"] == rec.method
        assert np.array_equal(auto.q, named.q) and np.array_equal(auto.v, named.v)
    ens = dl.ensemble(cases[0][0], h=0.05, t_final=1.0, q0=np.stack([q0, q0]), v0=np.stack([v0, v0]),
                      progress=False)
    assert ens.metadata["method"] == dl.recommend(cases[0][0], (q0, v0)).method


def test_auto_runs_cleanly_where_the_two_step_method_warns():
    """Negative control: on the snakeboard at its default step, the faster two-step nh-rattle shows a
    parasitic period-2 mode (ParasiticModeWarning, t ≈ 50); the auto choice runs without warning."""
    model = dl.models.get("snakeboard")
    kw = dict(h=model.default_h, t_final=model.default_t_final, progress=False, **model.initial_state)
    with pytest.warns(ParasiticModeWarning):
        dl.integrate(model.system, "nh-rattle", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ParasiticModeWarning)
        dl.integrate(model.system, "auto", **kw)

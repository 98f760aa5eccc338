"""The typed declarations: claims of what a method preserves, features a method accepts, node arrays
of a kind, options read from ``build`` — and what the engine and the conformance suite do with them."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert import verification as v
from dalembert.declarations import Claim, Feature, Invariant, Role
from dalembert.errors import InputError
from dalembert.methods.base import Method, Traits
from dalembert.methods.discrete_constraints import midpoint_constraint


def _skate(affine=False, qdep=False, name="skate"):
    """A knife edge of our own (not a built-in model); options: affine constraint, q-dependent metric."""
    G = (lambda q: jnp.diag(jnp.array([1.0 + 0.1 * jnp.sin(q[2]) ** 2, 1.0, 0.2]))) if qdep \
        else jnp.diag(jnp.array([1.0, 1.0, 0.2]))
    return dl.NonholonomicSystem(
        mass_matrix=G, potential=lambda q: 0.1 * q[0] ** 2,
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
        constraint_rhs=(lambda q: jnp.array([0.1])) if affine else None, name=name)


Q0 = np.zeros(3)


def _v0(affine):
    return np.array([1.0, -0.1 if affine else 0.0, 0.5])


# --- claims ---------------------------------------------------------------------------------------

def test_every_preserves_entry_is_a_claim_with_a_measure_or_a_reason():
    """Every claim of every registered method is typed; each checkable one has a measurement in the
    conformance suite and a tolerance; the others say why they are proved but not checked."""
    n_claims = n_checkable = 0
    for name, t in dl.methods.available().items():
        for c in t.preserves:
            n_claims += 1
            assert isinstance(c, Claim) and isinstance(c.invariant, Invariant), name
            if c.checkable:
                n_checkable += 1
                assert c.invariant in v.MEASURES and c.invariant in v.TOLERANCES, (name, c)
            else:
                assert c.invariant.how or not c.node_quantity or c.discrete_constraint is None
    # i-dla's option-dependent claim is two claims; the 7 discrete gradients (and compositions) keeping
    # energy claim it without forces and the energy balance with them
    assert n_claims == 125 and n_checkable == 114


def test_prose_claims_are_refused():
    with pytest.raises(TypeError, match="Claim"):
        Traits(order=2, symmetric=True, implicit=True, preserves=("energy H",))
    with pytest.raises(TypeError, match="Feature"):
        Traits(order=2, symmetric=True, implicit=True, accepts={"affine constraints"})


def test_discrete_constraint_claim_measures_and_fails_where_false():
    """The midpoint discrete constraint is kept to round-off by dla-midpoint (its claim) and not by
    nh-rattle (whose q nodes satisfy only the node constraint): the measurement can fail."""
    claim = Claim(Invariant.DISCRETE_CONSTRAINT, "ω_d midpoint", discrete_constraint=midpoint_constraint)
    sk = _skate(qdep=True)
    kept = dl.integrate(sk, "dla-midpoint", q0=Q0, v0=_v0(False), h=0.05, t_final=5.0, progress=False)
    other = dl.integrate(sk, "nh-rattle", q0=Q0, v0=_v0(False), h=0.05, t_final=5.0, progress=False)
    value, tol, ok = v.check_claim(claim, kept, sk, {})
    assert ok and value < 1e-13
    value, tol, ok = v.check_claim(claim, other, sk, {})
    assert not ok and value > 1e-6                     # negative control: O(h²) off the discrete constraint
    # a run that does not keep every node cannot be measured (and says so)
    thin = dl.integrate(sk, "dla-midpoint", q0=Q0, v0=_v0(False), h=0.05, t_final=5.0, save_every=4,
                        progress=False)
    assert v.check_claim(claim, thin, sk, {})[0] is None


def test_energy_claim_fails_on_a_method_that_does_not_keep_energy():
    """Negative control of the energy measurement: dg-gonzalez keeps H, nh-rattle does not."""
    claim = Claim(Invariant.ENERGY, "energy H")
    sk = _skate(qdep=True)
    dg = dl.integrate(sk, "dg-gonzalez", q0=Q0, v0=_v0(False), h=0.05, t_final=5.0, progress=False)
    nh = dl.integrate(sk, "nh-rattle", q0=Q0, v0=_v0(False), h=0.05, t_final=5.0, progress=False)
    assert v.check_claim(claim, dg, sk, {})[2]
    assert not v.check_claim(claim, nh, sk, {})[2]


def test_conditional_and_option_claims_are_reported_not_dropped():
    """A claim whose condition this system does not meet, or that holds with other options, is listed
    as not checked with its reason (no silent gap)."""
    cond = Claim(Invariant.ENERGY, "E", condition="constant covectors A", holds_for=lambda s: False)
    tr = dl.integrate(_skate(), "nh-rattle", q0=Q0, v0=_v0(False), h=0.1, t_final=1.0, progress=False)
    value, why = v.check_claim(cond, tr, _skate(), {})
    assert value is None and "constant covectors" in why
    opt = Claim(Invariant.NODE_CONSTRAINT, "endpoint", options=(("constraint", "endpoint"),))
    assert v.check_claim(opt, tr, _skate(), {"constraint": "discrete"})[0] is None
    assert v.check_claim(opt, tr, _skate(), {"constraint": "endpoint"})[2]


# --- features ------------------------------------------------------------------------------------

@pytest.mark.parametrize("affine,qdep,method,feature", [
    (True, False, "dg-gonzalez", "affine constraints"),
    (False, True, "i-dla", "configuration-dependent metric"),
    (True, True, "gonzalez-r", "affine constraints"),
])
def test_a_feature_the_method_does_not_accept_is_refused_before_tracing(affine, qdep, method, feature):
    sk = _skate(affine, qdep)
    fits = dl.methods.accepting(sk, (Q0, _v0(affine)))
    assert method not in fits and "nh-rattle" in fits
    with pytest.raises(InputError, match=feature) as err:
        dl.integrate(sk, method, q0=Q0, v0=_v0(affine), h=0.1, t_final=1.0, progress=False)
    msg = str(err.value)
    assert "\n" not in msg and ", ".join(fits) in msg          # names every method that accepts it


def test_features_of_the_kinds():
    assert _skate().features(Q0, _v0(False)) == frozenset()
    assert _skate(True, True).features(Q0, _v0(True)) == {Feature.AFFINE_CONSTRAINTS, Feature.CONFIGURATION_METRIC}
    ball = dl.models.get("rolling-ball").system
    assert Feature.RIGHT_TRIVIALISED not in ball.features()
    quartic = dl.LeftInvariantSystem(lambda w: 0.5 * w @ w + 0.1 * (w @ w) ** 2, [0.0, 0.0, 1.0], "quartic")
    assert quartic.features() == {Feature.NON_QUADRATIC_LAGRANGIAN}
    assert "eps-midpoint" not in dl.methods.accepting(quartic) and "dreps-rk4" in dl.methods.accepting(quartic)


def test_two_step_and_self_adjoint_are_traits():
    """The monitor and compose read the traits, not family names."""
    from dalembert import monitors
    two_step = {n for n, t in dl.methods.available().items() if t.two_step}
    assert {"nh-rattle", "gni-euler-a", "lie-gni", "reduced-gni", "gni-exp-chart", "lie-gni-mv"} <= two_step
    assert not two_step & {"nh-rattle-sym", "dg-gonzalez", "reduced-gni-sym", "eps-midpoint"}
    assert set(monitors.monitored_methods()) == two_step
    assert all(not t.self_adjoint for n, t in dl.methods.available().items() if n in two_step)
    with pytest.raises(InputError, match="not a self-adjoint map"):
        dl.methods.compose("nh-rattle")


# --- node arrays --------------------------------------------------------------------------------

def test_node_arrays_replace_state_name_rules():
    assert dl.NonholonomicSystem.state_array("v0") == "v"
    assert dl.ReducedSystem.state_array("xi0") == "xi"
    assert dl.EulerPoincareSuslovSystem.state_array("omega0") == "omega"
    assert dl.ReducedSystem.arrays_with(Role.GROUP_ELEMENT) == ("R",)
    with pytest.raises(InputError, match="initial-state name"):
        dl.NonholonomicSystem.state_array("q")


# --- options -------------------------------------------------------------------------------------

def test_unknown_option_is_named_with_the_declared_ones():
    with pytest.raises(InputError, match="unknown option tolerance; its options: fast_path, rtol"):
        dl.integrate(_skate(), "nh-rattle", q0=Q0, v0=_v0(False), h=0.1, t_final=1.0, tolerance=1e-9,
                     progress=False)
    assert dl.methods.get("nh-rattle-4").options() == {k: d for k, d in dl.methods.get("nh-rattle-sym").options().items()}


def test_a_bug_inside_build_surfaces_as_itself():
    """An AttributeError or TypeError raised by a method's own build is not turned into a refusal."""
    class Broken(Method):
        def build(self, system, q0):
            return system.no_such_attribute

    broken = Broken("broken", Traits(order=1, symmetric=False, implicit=False, integrates=("nonholonomic",)))
    with pytest.raises(AttributeError, match="no_such_attribute"):
        dl.integrate(_skate(), broken, q0=Q0, v0=_v0(False), h=0.1, t_final=1.0, progress=False)

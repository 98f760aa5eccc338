"""The quick versions of every registered experiment pass all their checks."""
import ast
import re
from pathlib import Path

import pytest

from dalembert import experiments as ex

#: a replacement field str.format / an f-string would fill: {name}, {name:g}, {name[0]!r}, {obj.attr}
PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*(?:\[[^\]{}]*\]|\.\w+)*(?:![rsa])?(?::[^{}]*)?\}")


def unformatted(text):
    return PLACEHOLDER.findall(text or "")


@pytest.mark.parametrize("exp_id", [e if ex.get(e).quick_in_ci else pytest.param(e, marks=pytest.mark.full)
                                    for e in sorted(ex.available())])
def test_quick_experiment_checks_pass(exp_id, tmp_path):
    r = ex.run(ex.get(exp_id), quick=True, out=tmp_path)
    assert r.checks, "an experiment must state checks"
    failed = [f"{c.claim}: measured {c.measured}, expected {c.expected}" for c in r.checks if not c.passed]
    assert not failed, failed
    assert all(f.exists() and f.stat().st_size > 0 for f in r.figures)
    texts = [r.notes, r.title, r.description] + [x for c in r.checks for x in (c.claim, c.expected, c.measured, c.source)]
    left = [(t[:80], unformatted(t)) for t in texts if unformatted(t)]
    assert not left, f"unformatted placeholders (a missing f prefix?): {left}"


def test_no_experiment_string_has_an_unformatted_placeholder():
    """Every string literal of the experiment modules that is not a docstring or the receiver of
    ``.format`` (literal parts of f-strings included: an f-string joined to a plain one leaves the
    plain part's braces as text) has no ``{name…}`` left: celledoni2019-fig4's notes printed a
    literal ``{T_dg:g}``. This covers the full-mode branches the quick runs do not reach."""
    src = Path(ex.__file__).parent
    hits = []
    for path in sorted(src.glob("*.py")):
        tree = ast.parse(path.read_text())
        skip = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                    skip.add(id(first.value))                                  # a docstring
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                    and isinstance(node.func.value, ast.Constant)):
                skip.add(id(node.func.value))                                  # "…{x}…".format(x=…)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                if unformatted(node.value):
                    hits.append(f"{path.name}:{node.lineno}: {unformatted(node.value)}")
    assert not hits, hits


def test_the_placeholder_test_sees_a_missing_f_prefix():
    """The regression itself: a plain string joined to an f-string keeps its braces."""
    T_dg = 200.0
    assert unformatted("run to t = " f"{T_dg:g}; " "and to t = {T_dg:g}") == ["{T_dg:g}"]
    assert not unformatted(f"run to t = {T_dg:g}") and not unformatted("in [{:.3f}, {:.3f}]")


# --- negative controls: the rewritten checks fail on inputs that break their claim -----------------
def test_sleigh_stability_classification_fails_beyond_its_step_bound():
    """celledoni2019-fig3's Prop. 4.1 / Remark 4.2 checks (eigenvalues by autodiff of the library's
    step and of explicit Euler on (22)) report no violation below the bound on h and violations above
    it (h = 1.5 × 2/(𝒞|ρ2|): λ1 = −0.2 at ρ2 > 0; Euler at 1.5 × 1/(𝒞|ρ2|): λ1 = −0.5)."""
    import numpy as np

    from dalembert import models
    from dalembert.experiments.celledoni2019 import classification_violations, sleigh_step_jacobian
    ap = models.get("chaplygin-sleigh", J=8.0, a=1.0, m=1.0).almost_poisson
    C, rho2s = 1.0 / 9.0, np.array([-0.6, 0.6])
    for method, bound in (("implicit-midpoint", 2.0), ("explicit-euler", 1.0)):
        jac = sleigh_step_jacobian(ap, method)
        assert classification_violations(jac, C, rho2s, [0.3, 0.9], bound)[0] == 0
        assert classification_violations(jac, C, rho2s, [1.5], bound)[0] > 0


def test_stability_grid_fails_for_implicit_euler_and_a_half_step_of_explicit_euler():
    """celledoni2019-fig3's Remark 4.2 grid check holds for explicit Euler and fails for maps that
    also classify the equilibria below h < 1/(𝒞|ρ2|) but keep λ1 ∈ (0, 1) beyond it: implicit
    Euler (λ1 = 1/(1 + h𝒞ρ2)) and explicit Euler with a half step (λ1 = 1 − h𝒞ρ2/2). Measured:
    0 of 54 violations for explicit Euler, 12 of 54 for each of the two (every point beyond the
    bound, 4 fractions × 3 positive ρ2 — quick grid)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from dalembert import models
    from dalembert.experiments.celledoni2019 import sleigh_step_jacobian, stability_grid_checks
    ap = models.get("chaplygin-sleigh", J=8.0, a=1.0, m=1.0).almost_poisson
    C, rho2s = 1.0 / 9.0, np.array([-1.5, -0.6, -0.1, 0.1, 0.6, 1.5])
    fractions, beyond = np.linspace(0.05, 0.95, 7), np.linspace(1.05, 1.95, 4)
    Df = jax.jit(jax.jacfwd(ap.vector_field))

    def at(rho):
        return jnp.concatenate([jnp.zeros(3), jnp.asarray(rho, jnp.float64)])

    def implicit_euler(rho, h):       # the linearisation of x' = x + h f(x') at an equilibrium
        return np.linalg.inv(np.eye(5) - h * np.asarray(Df(at(rho))))[3:, 3:]

    def half_step_euler(rho, h):
        return (np.eye(5) + 0.5 * h * np.asarray(Df(at(rho))))[3:, 3:]

    dg = sleigh_step_jacobian(ap, "dg-gonzalez")
    good = stability_grid_checks(dg, sleigh_step_jacobian(ap, "explicit-euler"), C, rho2s, fractions, beyond)
    assert all(c.passed for c in good), [(c.claim, c.measured) for c in good]
    for wrong in (implicit_euler, half_step_euler):
        prop, rem = stability_grid_checks(dg, wrong, C, rho2s, fractions, beyond)
        assert prop.passed and not rem.passed, (wrong.__name__, rem.measured)
        assert rem.measured == "12 of 54", (wrong.__name__, rem.measured)


def test_dg_discrete_constraint_depends_on_the_steps():
    """celledoni2019-fig2 checks the discrete constraint |μ(q̄)(q'−q)|/h of AVF and GONZALEZ, not
    the node constraint of their lifted velocity, which is zero for any state: on 50 random reduced
    states the node constraint is ≤ 1e-14 (measured 2.2e-16) while the discrete constraint between
    them is O(1) (measured 70.6); explicit Euler on the same form (h = 0.1, t ≤ 1) violates it
    at O(h) (measured 4.74e-2 relative to max(1, |q|), against the check's 1e-14), halving with h (2.35e-2 at h = 0.05)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from dalembert import models
    from dalembert.experiments.celledoni2019 import discrete_constraint
    model = models.get("chaotic-quartic", n=3, alpha=0.7)
    ap = model.almost_poisson
    xs = np.random.default_rng(0).normal(size=(50, 13))
    q, v = jax.vmap(ap.lift)(jnp.asarray(xs))
    node = np.abs(np.asarray(jax.vmap(lambda a, b: model.system.constraint_matrix(a)[0] @ b)(q, v)))
    assert node.max() <= 1e-14                      # structural: no integration needed
    random_steps = float(discrete_constraint(model.system, q, 0.1).max())
    assert random_steps > 1e-2, random_steps
    x0 = ap.reduce(jnp.asarray(model.q0), jnp.asarray(model.v0))
    euler = {}
    for h in (0.1, 0.05):
        step = jax.jit(lambda x, h=h: x + h * ap.vector_field(x))
        nodes = [x0]
        for _ in range(int(round(1.0 / h))):
            nodes.append(step(nodes[-1]))
        qs = jax.vmap(ap.lift)(jnp.stack(nodes))[0]
        euler[h] = float(discrete_constraint(model.system, qs, h).max() / max(1.0, float(jnp.max(jnp.abs(qs)))))
    assert euler[0.1] > 1e-3 and 1.6 <= euler[0.1] / euler[0.05] <= 2.5, euler


def test_perturbation_period_map_check_fails_for_a_wrong_step():
    """jimenez-scheurle-perturbation: X(0) = x, X(ε) = φ hold by the blend's construction for any φ
    (measured 1.7e-16 with φ wrong by 1e-3), so the check is on the period map's distance from the
    unperturbed flow, |X(ε) − F(ε, x)| = O(ε^{p+1}): slope 2.985 for eps-midpoint (p = 2, range
    [2.9, 3.1]); with every step φ wrong by 1e-3 (in ω1, ω2: φ stays in 𝔤^D) it is 0.000 and fails
    (Euler 0.063 against [1.9, 2.1], RK4 −0.000 against [4.9, 5.1])."""
    import jax
    import numpy as np

    from dalembert.experiments.jimenez_scheurle import _end, _setup, blend, period_map_check
    _, sys_, R0, w0 = _setup()
    hfun = jax.jit(jax.vmap(sys_.omega_dot))
    eps, tau = np.array([0.2, 0.1, 0.05, 0.025]), np.linspace(0.0, 1.0, 401)
    dist, dist_wrong, structural = [], [], 0.0
    for h in eps:
        phi = _end(sys_, "eps-midpoint", R0, w0, h, 1)["omega"]
        dist.append(blend(hfun, w0, phi, h, tau)["flow_distance"])
        b = blend(hfun, w0, phi + np.array([1e-3, 1e-3, 0.0]), h, tau)
        dist_wrong.append(b["flow_distance"])
        structural = max(structural, b["endpoints"], b["constraint"])
    assert structural <= 1e-14                     # the endpoints hold for the wrong φ too
    good, bad = period_map_check("eps-midpoint", 2, eps, dist), period_map_check("eps-midpoint", 2, eps, dist_wrong)
    assert good.passed, good.measured
    assert not bad.passed and abs(float(bad.measured)) < 0.1, bad.measured


def test_groupoid_dla_order_check_fails_with_the_gni_in_its_place():
    """ferraro2015-fig1's groupoid-DLA check (order and error constant) fails on the GNI's errors
    (exact second point; order 2.02 but constant e/h² = 3.81 at h = 0.0125 against [94, 115]); the
    DLA's own: order 1.915, constant 103.87."""
    import numpy as np

    from dalembert import models
    from dalembert.experiments.ferraro2015 import _exact_second_point, _integrate, dla_order_check
    mdl = models.get("rolling-ball")
    st = dict(mdl.initial_state, xi0=mdl.initial_state["R0"] @ mdl.initial_state["xi0"])
    hs = np.array([0.1, 0.05, 0.025, 0.0125])
    errs = []
    for h in hs:
        tr = _integrate(mdl.forms["reduced"], "reduced-gni", h, 10.0, st, startup=_exact_second_point(mdl, h))
        errs.append(float(np.max(np.abs(tr.x - mdl.exact_solution(tr.t)["x"]))))
    c = dla_order_check(hs, errs)
    assert not c.passed and c.measured.startswith("2.0"), c.measured      # the order alone would pass
    assert dla_order_check(hs, [0.8643, 0.2475, 0.06428, 0.01623]).passed   # the DLA's measured errors


def test_gni_dla_ratio_check_fails_with_the_dla_in_place_of_the_gni():
    """ferraro2008-sleigh-fig5's "GNI ≈ DLA" ratio: median 0.600 for the GNI (range [0.40, 0.90]);
    with DLA-midpoint in the GNI's place it is 1.000 and fails."""
    from dalembert.experiments.ferraro2008 import GNI, gni_dla_ratio_check, sleigh_errors
    errs, _, _, _ = sleigh_errors(100)
    assert gni_dla_ratio_check(errs[GNI], errs["dla-midpoint"]).passed
    c = gni_dla_ratio_check(errs["dla-midpoint"], errs["dla-midpoint"])
    assert not c.passed and c.measured == "1.000", c.measured


def test_distance_rolled_check_fails_for_the_first_order_scheme():
    """ferraro2015-fig4's distance check: lie-gni at h = 0.01 is 9.0e-6 from the reference
    solution's 15.9792 (bound 2.7e-5); the paper's first-order gni-exp-chart at the same h misses it
    by 9.2e-3 and fails (the old check, D ∈ [15, 17], passed for both)."""
    from dalembert import models
    from dalembert.experiments.ferraro2015 import _integrate, distance_check, path_length
    from dalembert.models import rolling_ball as rb
    p, st = rb.fig4_initial_state()
    mdl = models.get("rolling-ball", **p)
    tr = _integrate(mdl.system, "gni-exp-chart", 0.01, 10.0, st)
    ref = rb.reference_solution(p, st["x0"], st["R0"], st["xdot0"], st["R0"] @ st["xi0"], tr.t)
    c = distance_check("gni-exp-chart", 0.01, path_length(tr.x), path_length(ref["x"]))
    assert not c.passed and 15.0 <= path_length(tr.x) <= 17.0, c.measured
    assert abs(float(c.measured) - 9.19e-3) <= 1e-4, c.measured

"""The quick versions of every registered experiment pass all their checks."""
import pytest

from dalembert import experiments as ex


@pytest.mark.parametrize("exp_id", sorted(ex.available()))
def test_quick_experiment_checks_pass(exp_id, tmp_path):
    r = ex.run(ex.get(exp_id), quick=True, out=tmp_path)
    assert r.checks, "an experiment must state checks"
    failed = [f"{c.claim}: measured {c.measured}, expected {c.expected}" for c in r.checks if not c.passed]
    assert not failed, failed
    assert all(f.exists() and f.stat().st_size > 0 for f in r.figures)


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

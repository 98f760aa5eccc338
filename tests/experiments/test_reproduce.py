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

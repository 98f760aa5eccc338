"""Every registered method × every built-in model of a kind it integrates: the fitted order
against ``traits.order`` (± 0.15) and each checkable property in ``traits.preserves``
(:mod:`dalembert.verification`). A new method or model is tested by registering it."""
import pytest

from conformance_policy import KNOWN_FAILURES, in_quick_suite

from dalembert import verification as v

PAIRS = v.pairs()


def _param(method, model, form):
    known = KNOWN_FAILURES.get((method, model))
    marks = [pytest.mark.xfail(reason=known, strict=True)] if known and form == "system" else []
    return pytest.param(method, model, form, id=f"{method}|{model}|{form}", marks=marks)


@pytest.mark.parametrize("method,model,form", [_param(*p) for p in PAIRS])
def test_declared_order_and_preserved_properties(method, model, form):
    if not in_quick_suite(method, model):
        pytest.skip(f"{method} on {model} is not in the quick suite (see conformance_policy.EXPENSIVE and "
                    "QUICK_MODEL_METHODS); "
                    "DALEMBERT_FULL_CONFORMANCE=1 or `python -m dalembert.verification` runs every model")
    row = v.check_pair(method, model, form)
    if not row.applicable:
        pytest.skip(f"{method} refuses {model}: {row.reason}")
    assert not row.error, f"{method} on {model}: {row.error}"
    assert row.order_ok, (f"{method} on {model}: fitted order {row.fitted:.3f} (errors {row.errors}) "
                          f"vs declared {row.declared}")
    for name, (value, tol, ok) in row.preserved.items():
        assert ok, f"{method} on {model}: {name} kept to {value:.2e} > {tol:.0e}"


def test_every_registered_compiled_method_has_a_pair():
    import dalembert as dl
    covered = {m for m, _, _ in PAIRS}
    compiled = {n for n, m in dl.methods.registry().items() if m.compiled}
    assert compiled <= covered, f"registered methods without a built-in model to check them on: {compiled - covered}"

"""Shared test configuration: float64 on, dalembert.configure() with a compilation cache private to the run
(shared by its pytest-xdist workers), matplotlib headless,
and deterministic hypothesis examples under CI (CI=true) so that a run can be reproduced."""
import os
import tempfile

from hypothesis import settings

os.environ.setdefault("MPLBACKEND", "Agg")
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

import dalembert  # noqa: E402  (enables float64 for JAX)


#: DALEMBERT_FULL_CONFORMANCE=1 runs the whole suite: every method on every model in the conformance
#: checks, and the tests marked ``full`` (slow variants of properties the quick suite also checks)
FULL = os.environ.get("DALEMBERT_FULL_CONFORMANCE", "").strip() == "1"


def pytest_collection_modifyitems(config, items):
    if FULL:
        return
    import pytest
    skip = pytest.mark.skip(reason="in the full suite (DALEMBERT_FULL_CONFORMANCE=1)")
    for item in items:
        if "full" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config):
    """The tests run with one CPU device per pool thread (what the command line opts in to) but
    without the process-wide small-loop flag, so that dalembert's own per-executable small-loop
    option (the default path of a user who never calls configure) is what the suite exercises
    (what import alone does is tested in a fresh process,
    tests/unit/test_import_side_effects.py), and with JAX's persistent compilation cache in a
    directory of this test run shared by its pytest-xdist workers, out of $HOME: many tests compile
    the same program for a new system object of the same model, and the second compile is then a
    cache hit. Called before any JAX computation (collection imports modules only)."""
    # (set by the controlling process first: its pytest-xdist workers inherit the directory)
    os.environ.setdefault("DALEMBERT_CACHE_DIR", tempfile.mkdtemp(prefix="dalembert-test-cache-"))
    dalembert.configure(small_loops=False, compilation_cache=os.environ["DALEMBERT_CACHE_DIR"])

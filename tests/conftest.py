"""Shared test configuration: float64 on, dalembert.configure() with a compilation cache private to the run
(shared by its pytest-xdist workers), matplotlib headless,
and deterministic hypothesis examples under CI (CI=true) so that a run can be reproduced."""
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("MPLBACKEND", "Agg")
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

import dalembert  # noqa: E402  (enables float64 for JAX)


#: DALEMBERT_FULL_CONFORMANCE=1 runs the whole suite: every method on every model in the conformance
#: checks, and the tests marked ``full`` (slow variants of properties the quick suite also checks)
FULL = os.environ.get("DALEMBERT_FULL_CONFORMANCE", "").strip() == "1"


#: parametrized cases run in the full suite only, to keep CI within its 20 minutes (each 14–28 s in
#: the CI run of 2026-12-07; their other cases stay in CI)
FULL_ONLY_CASES = frozenset({
    "tests/unit/test_linalg_newton.py::test_vmapped_solve_matches_numpy_with_and_without_pivoting[16-rhs5]",
    "tests/unit/test_linalg_newton.py::test_chord_factor_and_solve_alone_and_under_vmap[13]",
    "tests/convergence/test_discrete_gradients.py::test_order_chaotic[dg-itoh-abe]",
    "tests/convergence/test_discrete_gradients.py::test_simplified_and_full_newton_give_the_same_steps[dg-avf]",
    "tests/convergence/test_compositions.py::test_composed_methods_reach_their_order[chaplygin-sleigh-methods1-hs1-16.0]",
    "tests/conformance/test_registry.py::test_declared_order_and_preserved_properties[dg-itoh-abe|chaotic-quartic|almost-poisson]",
    "tests/conformance/test_registry.py::test_declared_order_and_preserved_properties[spark-lobatto4|chaplygin-sleigh|system]",
    "tests/conformance/test_registry.py::test_declared_order_and_preserved_properties[spark-lobatto4|p2-affine|system]",
    "tests/unit/test_forces.py::test_gradient_with_respect_to_the_controls_against_central_differences[spark-lobatto3]",
    "tests/experiments/test_reproduce.py::test_quick_experiment_checks_pass[ferraro2015-fig4]",
    "tests/experiments/test_reproduce.py::test_quick_experiment_checks_pass[ferraro2015-pre-convergence]",
})


def pytest_collection_modifyitems(config, items):
    if FULL:
        return
    skip = pytest.mark.skip(reason="in the full suite (DALEMBERT_FULL_CONFORMANCE=1)")
    for item in items:
        if "full" in item.keywords or item.nodeid in FULL_ONLY_CASES:
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
    start_docs_build(config)


DOCS_TESTS = Path(__file__).resolve().parent / "docs"
_docs_build = None


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def start_docs_build(config):
    """In the run's controlling process only, when the run includes tests/docs and MkDocs is
    installed: start the documentation build (tests/docs/site_build.py) in the background, into
    the run's cache directory, so that it overlaps the other tests instead of holding one
    pytest-xdist worker idle behind its lock (tests/docs/conftest.py waits for its result)."""
    global _docs_build
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    if not all(_installed(m) for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")):
        return
    here = Path(config.invocation_params.dir)
    paths = [(here / a.split("::")[0]).resolve() for a in config.args] or [here.resolve()]
    if not any(p == DOCS_TESTS or p in DOCS_TESTS.parents or DOCS_TESTS in p.parents for p in paths):
        return
    root = Path(os.environ["DALEMBERT_CACHE_DIR"]) / "docs-build"
    root.mkdir(parents=True, exist_ok=True)
    if (root / "started").exists() or (root / "result.json").exists():
        return
    _docs_build = subprocess.Popen([sys.executable, str(DOCS_TESTS / "site_build.py"), str(root)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    (root / "started").write_text(str(_docs_build.pid))


def pytest_unconfigure(config):
    """A background docs build still running when the run ends (its tests deselected) is stopped."""
    if _docs_build is not None and _docs_build.poll() is None:
        os.killpg(_docs_build.pid, signal.SIGTERM)          # the wrapper and its mkdocs process
        _docs_build.wait(timeout=30)


@pytest.fixture
def compile_counter(monkeypatch):
    """A one-element list counting dalembert's program compiles (calls of
    ``dalembert.engine.programs.compile_program``) from now on; reset it with ``counter[0] = 0``."""
    from dalembert.engine import programs
    count = [0]
    real = programs.compile_program

    def counted(*args, **kwargs):
        count[0] += 1
        return real(*args, **kwargs)
    monkeypatch.setattr(programs, "compile_program", counted)
    return count

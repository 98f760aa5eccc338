"""Shared test configuration: float64 on, dalembert.configure(), matplotlib headless, a private compilation cache,
and deterministic hypothesis examples under CI (CI=true) so that a run can be reproduced."""
import os
import tempfile

from hypothesis import settings

os.environ.setdefault("MPLBACKEND", "Agg")
# the CLI turns on JAX's persistent compilation cache; keep the tests' entries out of $HOME
os.environ.setdefault("DALEMBERT_CACHE_DIR", tempfile.mkdtemp(prefix="dalembert-test-cache-"))

settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

import dalembert  # noqa: E402  (enables float64 for JAX)

# the tests run with the settings the command line opts in to (XLA small-loop kernels, one CPU
# device per pool thread); what import alone does is tested in a fresh process
# (tests/unit/test_import_side_effects.py)
dalembert.configure()

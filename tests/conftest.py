"""Shared test configuration: float64 on, matplotlib headless, a private compilation cache,
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

import dalembert  # noqa: E402,F401  (enables float64 for JAX)

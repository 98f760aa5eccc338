"""Shared test configuration: float64 on, matplotlib headless, a private compilation cache."""
import os
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")
# the CLI turns on JAX's persistent compilation cache; keep the tests' entries out of $HOME
os.environ.setdefault("DALEMBERT_CACHE_DIR", tempfile.mkdtemp(prefix="dalembert-test-cache-"))

import dalembert  # noqa: E402,F401  (enables float64 for JAX)

"""Shared test configuration: float64 on, matplotlib headless, a private compilation cache."""
import os

os.environ.setdefault("MPLBACKEND", "Agg")

import dalembert  # noqa: E402,F401  (enables float64 for JAX)

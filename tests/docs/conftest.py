"""The documentation site, built once per test session for the tests in tests/docs.

``docs_build`` runs ``mkdocs build --strict`` on the repository's mkdocs.yml into a temporary
directory (in a subprocess, as a user would) and returns its exit status, output and site
directory; ``docs_site`` is that directory, for tests that read the built pages (it fails, with
the end of the build's output, when the build did). Tests using them are skipped when MkDocs,
Material or mkdocstrings is not installed (``pip install -e ".[docs]"``)."""
import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory):
    """Built once per test run: the pytest-xdist workers share the site through the run's cache
    directory (tests/conftest.py), the first to come builds it under a lock, the others read its
    result (the build runs every model's default run for the gallery: minutes, not to be paid twice)."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    shared = os.environ.get("DALEMBERT_CACHE_DIR")
    root = Path(shared) / "docs-build" if shared else tmp_path_factory.mktemp("docs-build")
    root.mkdir(parents=True, exist_ok=True)
    site, result = root / "site", root / "result.json"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not result.exists():
                env = dict(os.environ, NO_MKDOCS_2_WARNING="1", MPLBACKEND="Agg",
                           PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                                       str(REPO / "mkdocs.yml"), "-d", str(site)], cwd=REPO, env=env,
                                      capture_output=True, text=True, timeout=1200)
                result.write_text(json.dumps({"returncode": proc.returncode, "output": proc.stdout + proc.stderr,
                                              "seconds": time.perf_counter() - t0}))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    r = json.loads(result.read_text())
    return SimpleNamespace(returncode=r["returncode"], output=r["output"], site=site, seconds=r["seconds"])


@pytest.fixture(scope="session")
def docs_site(docs_build) -> Path:
    if docs_build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {docs_build.returncode}):\n{docs_build.output[-4000:]}")
    return docs_build.site

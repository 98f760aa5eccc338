"""The documentation site, built once per test session for the tests in tests/docs.

``docs_build`` runs ``mkdocs build --strict`` on the repository's mkdocs.yml into a temporary
directory (in a subprocess, as a user would) and returns its exit status, output and site
directory; ``docs_site`` is that directory, for tests that read the built pages (it fails, with
the end of the build's output, when the build did). Tests using them are skipped when MkDocs,
Material or mkdocstrings is not installed (``pip install -e ".[docs]"``)."""
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import site_build  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory):
    """Built once per test run: the pytest-xdist workers share the site through the run's cache
    directory (tests/conftest.py). The run's controlling process starts the build in the background
    when the run includes these tests (tests/conftest.py, ``start_docs_build``), so that it overlaps
    the other tests; a worker that needs the site waits for its result. Without that background
    build (a run of this folder alone in one process, say), the first to come builds it under a
    lock and the others read its result (the build runs every model's default run for the gallery:
    minutes, not to be paid twice)."""
    for module in site_build.MODULES:
        pytest.importorskip(module)
    shared = os.environ.get("DALEMBERT_CACHE_DIR")
    root = Path(shared) / "docs-build" if shared else tmp_path_factory.mktemp("docs-build")
    root.mkdir(parents=True, exist_ok=True)
    result = root / "result.json"
    started = root / "started"
    if started.exists():                              # the background build: wait for its result
        deadline = time.monotonic() + 1500
        while not result.exists() and time.monotonic() < deadline:
            time.sleep(1.0)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not result.exists():
                site_build.build(root)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    r = json.loads(result.read_text())
    return SimpleNamespace(returncode=r["returncode"], output=r["output"], site=root / "site", seconds=r["seconds"])


@pytest.fixture(scope="session")
def docs_site(docs_build) -> Path:
    if docs_build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {docs_build.returncode}):\n{docs_build.output[-4000:]}")
    return docs_build.site

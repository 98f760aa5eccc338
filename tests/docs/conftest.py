"""The documentation site, built once per test session for the tests in tests/docs.

``docs_build`` runs ``mkdocs build --strict`` on the repository's mkdocs.yml into a temporary
directory (in a subprocess, as a user would) and returns its exit status, output and site
directory; ``docs_site`` is that directory, for tests that read the built pages (it fails, with
the end of the build's output, when the build did). Tests using them are skipped when MkDocs,
Material or mkdocstrings is not installed (``pip install -e ".[docs]"``)."""
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
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    site = tmp_path_factory.mktemp("docs-site") / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(site)], cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    return SimpleNamespace(returncode=proc.returncode, output=proc.stdout + proc.stderr, site=site,
                           seconds=time.perf_counter() - t0)


@pytest.fixture(scope="session")
def docs_site(docs_build) -> Path:
    if docs_build.returncode != 0:
        pytest.fail(f"mkdocs build --strict failed (exit {docs_build.returncode}):\n{docs_build.output[-4000:]}")
    return docs_build.site

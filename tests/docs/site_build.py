"""Build the documentation site once: ``python tests/docs/site_build.py ROOT`` runs
``mkdocs build --strict`` on the repository's mkdocs.yml into ROOT/site and writes ROOT/result.json
(exit status, output, seconds) when it ends, whatever the outcome, by an atomic rename (a reader
never sees half a file). Used by tests/docs/conftest.py, and started in the background by the test
run's controlling process (tests/conftest.py) so that the build overlaps the other tests."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def build(root: Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")])))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                               "-d", str(root / "site")], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=1200)
        result = {"returncode": proc.returncode, "output": proc.stdout + proc.stderr}
    except Exception as exc:                       # the waiting tests must learn the outcome
        result = {"returncode": -1, "output": f"the docs build did not run: {exc!r}"}
    result["seconds"] = time.perf_counter() - t0
    tmp = root / f"result.json.{os.getpid()}"
    tmp.write_text(json.dumps(result))
    os.replace(tmp, root / "result.json")
    return result


if __name__ == "__main__":
    build(Path(sys.argv[1]))

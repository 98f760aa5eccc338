"""The documentation site builds with ``mkdocs build --strict`` and no warning, and its generated
pages match the registries: one method-table row per registered method, one gallery section
with an existing figure per model, the API reference with the main entry points. The site makes
no external request and carries no internal wording. (The build itself: tests/docs/conftest.py.)"""
import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

pytest.importorskip("mkdocs")

import dalembert as dl  # noqa: E402

pytestmark = pytest.mark.xdist_group("docs")

REPO = Path(__file__).resolve().parents[2]


class Page(HTMLParser):
    """The tables (header cells, body rows as cell texts), images and element ids of a page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tables, self.images, self.ids = [], [], set()
        self._cell = None
        self._row = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "table":
            self.tables.append({"head": [], "rows": []})
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "img":
            self.images.append(a)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(("th" if tag == "th" else "td", "".join(self._cell).strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row and all(kind == "th" for kind, _ in self._row):
                self.tables[-1]["head"] = [text for _, text in self._row]
            else:
                self.tables[-1]["rows"].append([text for _, text in self._row])
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def page_path(site: Path, name: str) -> Path:
    """The HTML file of the page ``name`` (e.g. "reference/methods"), with or without
    directory URLs."""
    for p in (site / f"{name}.html", site / name / "index.html"):
        if p.exists():
            return p
    raise AssertionError(f"no page {name} in {site}")


def read(site: Path, name: str) -> tuple:
    path = page_path(site, name)
    return path, Page(path.read_text(encoding="utf-8"))


def test_build_is_strict_and_has_no_warnings(docs_build):
    assert docs_build.returncode == 0, docs_build.output[-4000:]
    warnings = [line for line in docs_build.output.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)
    assert (docs_build.site / "index.html").exists()


def test_method_table_has_one_row_per_registered_method(docs_site):
    """The chooser (method, order, use when, cost, preserves) and the details, one row per
    registered method each; every method has its own "use when" and a cost."""
    _, page = read(docs_site, "reference/methods")
    tables = [t for t in page.tables if t["head"][:1] == ["method"]]
    assert len(tables) == 2, [t["head"] for t in page.tables]
    (chooser, details), methods = tables, dl.methods.available()
    assert chooser["head"] == ["method", "order", "use when", "cost", "preserves"]
    assert details["head"][:3] == ["method", "symmetric", "step"]
    for table in (chooser, details):
        assert [r[0] for r in table["rows"]] == list(methods)
    for row in chooser["rows"]:
        traits = methods[row[0]]
        assert row[1] == str(traits.order) and row[2] not in ("", "—") and row[3] not in ("", "—"), row
        assert row[3].startswith(("explicit", "Newton on")), row
        for inv in traits.invariants():
            assert inv.label in row[4], row
    assert len({r[2] for r in chooser["rows"]}) == len(methods)       # advice of its own for each
    head = details["head"]
    for row in details["rows"]:
        traits = methods[row[0]]
        assert row[1] == ("yes" if traits.symmetric else "no"), row
        assert row[2].startswith("implicit" if traits.implicit else "explicit"), row
        for kind in traits.integrates:
            assert kind in row[head.index("integrates")], row


def test_model_gallery_has_every_model_with_a_figure(docs_site):
    path, page = read(docs_site, "reference/models")
    models = dl.models.available()
    for name in models:
        assert name in page.ids, f"no section for the model {name}"
    figures = {}
    for img in page.images:
        m = re.fullmatch(r"Configuration path of (.+)", img.get("alt", ""))
        if m:
            figures[m.group(1)] = img["src"]
    assert sorted(figures) == sorted(models)
    for name, src in figures.items():
        assert not urlparse(src).scheme, src
        file = (path.parent / unquote(src)).resolve()
        assert file.is_file() and file.stat().st_size > 1000, (name, src)
        assert file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", (name, src)


def test_api_reference_has_the_entry_points(docs_site):
    path, page = read(docs_site, "reference/api")
    text = path.read_text(encoding="utf-8")
    assert "integrate" in text and "NonholonomicSystem" in text
    for ident in ("dalembert.integrate", "dalembert.solve", "dalembert.ensemble", "dalembert.NonholonomicSystem",
                  "dalembert.Trajectory", "dalembert.ReducedSystem", "dalembert.InputError",
                  "dalembert.ConvergenceError"):
        assert ident in page.ids, ident


def test_site_is_offline_and_has_no_internal_wording(docs_site):
    spec = importlib.util.spec_from_file_location("textclean", REPO / "docs" / "_hooks" / "textclean.py")
    textclean = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(textclean)
    external = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"'](?:https?:)?//", re.I)
    pages = sorted(docs_site.rglob("*.html"))
    assert len(pages) > 20
    for p in pages:
        text = p.read_text(encoding="utf-8")
        assert not external.search(text), (p, external.search(text).group(0))
        m = textclean.FORBIDDEN.search(text)
        assert m is None, (p, text[max(0, m.start() - 80):m.end() + 80])
        assert "fonts.googleapis" not in text, p

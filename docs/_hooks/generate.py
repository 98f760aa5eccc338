"""MkDocs hook: the generated pages of the dalembert documentation site.

On every build (``mkdocs build`` or each rebuild of ``mkdocs serve``) this hook

* generates ``reference/methods.md``, the method table, from ``dalembert.methods.available()``;
* generates ``reference/models.md``, the model gallery, from ``dalembert.models.available()`` and
  ``dalembert.models.get(name)``, with one figure per model: the configuration path of a short
  run of the model's default method, step and initial state (at most 2000 steps);

and adds them to the build's files (``File.generated``): nothing is written into the repository,
so the pages cannot go stale. The hook imports dalembert from this checkout's ``src/`` (it is put
first on ``sys.path``), whatever other copy the environment has installed.

The gallery's runs are most of a build's time (each compiles its model's step). Each figure is
kept in a cache outside the repository (``$DALEMBERT_DOCS_CACHE``, default
``$XDG_CACHE_HOME/dalembert/docs-figures``; ``DALEMBERT_DOCS_CACHE=off`` turns it off), keyed by
everything the figure is drawn from: the model's name, parameters, default method, step, number
of steps and initial state, the digest of dalembert's source files and of this hook's figure
code, and the JAX, jaxlib, NumPy and Matplotlib versions (:func:`figure_key`). A build whose inputs
are unchanged (pages edited, another build, ``mkdocs serve``) reuses the figures; a change of
any source file of dalembert draws them all again. The runs that are made use the persistent
compilation cache of the command line (``dalembert.configure(compilation_cache=True)``).

It also keeps internal wording out of the site: the registry strings have their references to
internal working documents removed (``textclean.clean``; the docstrings get the same treatment in
the griffe extension ``docstrings.py``), and every page's final HTML is checked for them
(``textclean.FORBIDDEN``): a page that still has one gets a warning, which fails
``mkdocs build --strict``.
"""
from __future__ import annotations

import hashlib
import html
import io
import json
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path

from mkdocs.structure.files import File

sys.path.insert(0, str(Path(__file__).resolve().parent))
from textclean import FORBIDDEN, PAGE_REF, clean, page_target  # noqa: E402  (docs/_hooks/textclean.py)
from chooser import CHOOSER  # noqa: E402  (docs/_hooks/chooser.py: "use when" and "cost" of each method)

log = logging.getLogger("mkdocs.hooks.dalembert")

#: the generated pages (paths in docs_dir)
METHODS_PAGE = "reference/methods.md"
MODELS_PAGE = "reference/models.md"
FIGURE_DIR = "reference/model-figures"
#: steps of a gallery run at most
MAX_FIGURE_STEPS = 2000

#: the papers, recognised in a ``source`` string, and the theory page of each
PAPERS = (
    (re.compile(r"Nonlinearity 21|Iglesias-Ponte, Martín de Diego, Nonlinearity|FIMdD 2008|"
                r"Ferraro[–-]Iglesias[–-]Martín de Diego,? 2008|Ferraro, Iglesias-Ponte, Martín de Diego"),
     "theory/ferraro2008.md", "Ferraro, Iglesias-Ponte, Martín de Diego 2008"),
    (re.compile(r"Nonlinearity 28|Ferraro[,–-] ?Jiménez[,–-] ?Martín de Diego|FJMdD 2015|New developments on the GNI"),
     "theory/ferraro2015.md", "Ferraro, Jiménez, Martín de Diego 2015"),
    (re.compile(r"Jiménez (&|and|–) Scheurle|Jiménez–Scheurle"),
     "theory/jimenez-scheurle2015.md", "Jiménez, Scheurle 2015"),
    (re.compile(r"Celledoni"), "theory/celledoni2019.md", "Celledoni, Farré Puiggalí, Høiseth, Martín de Diego 2019"),
    (re.compile(r"\btest problems? P\d"), "theory/ferraro2015.md#test-problems",
     "Ferraro, Jiménez, Martín de Diego 2015: our test problems P1–P3"),
)


# ---------------------------------------------------------------------------------------------
# text helpers
# ---------------------------------------------------------------------------------------------

def md(s) -> str:
    """Plain text as Markdown inline text (table-cell safe): HTML and Markdown escaped."""
    s = html.escape(str(s), quote=False)
    return re.sub(r"([\\`*_\[\]{}|#<>])", r"\\\1", s).replace("\n", " ")


def md_doc(s, files, page: str) -> str:
    """:func:`md` of ``s`` with its references to pages of this site as links (relative to
    ``page``); references to pages not in the build stay text."""
    out, last = [], 0
    depth = page.count("/")
    for m in PAGE_REF.finditer(s):
        target = page_target(m.group(1), lambda t: files.get_file_from_path(t) is not None)
        if target is None:
            continue
        anchor = m.group(2) or ""
        out.append(md(s[last:m.start()]))
        out.append(f"[{md(m.group(1).split('/')[-1] + anchor)}]({'../' * depth}{target}{anchor})")
        last = m.end()
    out.append(md(s[last:]))
    return "".join(out)


def _theory_links(text: str, files, page: str) -> list:
    """Markdown links (relative to ``page``) to the theory pages of the papers ``text`` cites;
    papers whose page is not in the build are named without a link."""
    out = []
    depth = page.count("/")
    for pattern, target, label in PAPERS:
        if pattern.search(text):
            if files.get_file_from_path(target.split("#")[0]) is not None:
                out.append(f"[{label}]({'../' * depth}{target})")
            else:
                out.append(label)
    return out


def _fmt_options(options: dict) -> str:
    """' with `k=v`, …' for a default method's build options ('' for none)."""
    return (" with " + ", ".join(f"`{k}={v!r}`" for k, v in options.items())) if options else ""


def _fmt_number(x) -> str:
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    x = float(x)
    return f"{x:.6g}"


def _fmt_array(a) -> str:
    """An array as nested lists of numbers in %g form (6 significant digits)."""
    import numpy as np
    a = np.asarray(a, dtype=float)
    if a.ndim == 0:
        return _fmt_number(a)
    return "[" + ", ".join(_fmt_array(x) for x in a) + "]"


# ---------------------------------------------------------------------------------------------
# the generated pages
# ---------------------------------------------------------------------------------------------

def _import_dalembert(config):
    """dalembert from this checkout's src/, with the command line's settings (the compilation
    cache; small-loop kernels per program as everywhere, engine.xla), made once per process
    before JAX starts; one CPU device (no ensembles here)."""
    src = Path(config.config_file_path).resolve().parent / "src"
    if src.is_dir() and str(src) not in sys.path:
        sys.path.insert(0, str(src))
    import dalembert
    from dalembert.config import backends_started
    if not backends_started():
        try:
            dalembert.configure(cpu_devices=False, compilation_cache=True)
        except Exception:  # noqa: BLE001 — an unusable cache directory: build without it
            dalembert.configure(cpu_devices=False)
    return dalembert


def unbroken(s) -> str:
    """:func:`md` of plain text, its hyphenated words (``gni-euler-a``, ``1e-13``, ``Itoh–Abe``)
    kept on one line (a browser may break a line after a hyphen or a dash): for the chooser table,
    whose lines break between words only."""
    return " ".join(f'<span class="nowrap">{md(w)}</span>' if re.search(r"[-–—/]", w) else md(w)
                    for w in str(s).split())


def _preserved(traits) -> str:
    """The short names of what a method preserves exactly, each once; "(if …)" where every claim
    of that quantity has a condition (a condition that only restates it — configuration
    constraints, for the configuration constraint — is none)."""
    conditions: dict = {}
    for c in traits.preserves:
        label, cond = c.invariant.label, clean(c.condition)
        general = not cond or label in cond or cond in label
        conditions.setdefault(label, [])
        conditions[label].append(None if general else cond)
    return ", ".join(label if None in conds else f"{label} (if {' or '.join(dict.fromkeys(conds))})"
                     for label, conds in conditions.items()) or "—"


def methods_page(dl, files) -> str:
    """The Markdown of the method pages: the chooser table (method, order, use when, cost,
    preserved quantities) and the details (symmetry, step, kinds, the preserved formulas,
    sources)."""
    methods = dl.methods.available()
    registry = dl.methods.registry()
    lines = [
        "---",
        "hide:",
        "  - toc",          # the tables need the width
        "---",
        "",
        "# Methods",
        "",
        "Every method in the registry, generated from `dalembert.methods.available()` when the site "
        f"is built ({len(methods)} methods); `dalembert list` prints the same traits. *Order* is the "
        "global order (in q and the reported velocity; in ω for the SO(3) methods). *Cost* is what one "
        "step solves, in its unknowns: n coordinates, m rolling constraints, k configuration "
        "constraints, G the kinetic metric — *explicit* (no nonlinear solve), *Newton on m* (the "
        "impulses only) or *Newton on n + m* (the whole step). *Preserves*: what the method keeps "
        "exactly (to round-off); the formulas are in [the details](#details). More advice: "
        "[Choosing a method](../guide/methods.md).",
        "",
        "| method | order | use when | cost | preserves |",
        "|---|---|---|---|---|",
    ]
    for name, t in methods.items():
        if name not in CHOOSER:
            log.warning(f"method table: {name!r} has no 'use when' / 'cost' entry in docs/_hooks/chooser.py")
        use, cost = CHOOSER.get(name, ("—", "—"))
        lines.append(f"| `{name}` | {t.order} | {unbroken(use)} | {unbroken(cost)} | {unbroken(_preserved(t))} |")
    lines += [
        "",
        "## Details",
        "",
        "*Step*: explicit, or implicit (a Newton solve) with the case in which the step is explicit all "
        "the same. *Integrates*: the system kinds the method takes as they are; other kinds reach it "
        "only through a registered view (a `NonholonomicSystem` reaches the `almost-poisson` methods "
        "through its automatic almost-Poisson reduction, see "
        "[the user guide](../guide/systems.md#system-kinds)).",
        "",
        "| method | symmetric | step | integrates | preserves exactly | source | theory |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, t in methods.items():
        step = "implicit" if t.implicit else "explicit"
        if t.explicit_when:
            step += f"; explicit when: {md(clean(t.explicit_when))}"
        if not getattr(registry.get(name), "compiled", True):
            step += " (SciPy, not compiled)"
        preserves = "<br>".join(md_doc(clean(str(p)), files, METHODS_PAGE) for p in t.preserves) or "—"
        integrates = ", ".join(f"`{k}`" for k in t.integrates) or "—"
        theory = ", ".join(_theory_links(t.source, files, METHODS_PAGE)) or "—"
        lines.append(f"| `{name}` | {'yes' if t.symmetric else 'no'} | {step} | {integrates} | {preserves} | "
                     f"{md_doc(clean(t.source), files, METHODS_PAGE)} | {theory} |")
    by_kind: dict = {}
    for name, t in methods.items():
        for k in t.integrates:
            by_kind.setdefault(k, []).append(name)
    lines += ["", "## By system kind", "",
              "The methods that take each system kind as it is (the `integrates` column, inverted).",
              "", "| system kind | methods |", "|---|---|"]
    for k, names in by_kind.items():
        lines.append(f"| `{k}` | {', '.join(f'`{n}`' for n in names)} |")
    lines.append("")
    return "\n".join(lines)


def _solution_type(model) -> str:
    if model.exact_solution is not None:
        return "exact (closed form)"
    if model.reference is not None:
        return "the model's own reference solution (DOP853)"
    return "reference ODE (the index-1 equations, SciPy DOP853, rtol = atol = 1e-13)"


def _figure(dl, model):
    """(PNG bytes, caption, seconds, warnings) of the model's short default run."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    h = float(model.default_h)
    n = max(1, min(int(round(model.default_t_final / h)), MAX_FIGURE_STEPS))
    t_final = n * h
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = dl.integrate(model.system, model.default_method, h=h, t_final=t_final, progress=False,
                            **model.default_options, **model.initial_state)
    seconds = time.perf_counter() - t0
    arr = np.asarray(getattr(traj, model.path_array))
    arr = arr.reshape(arr.shape[0], -1)
    i, j = model.path
    names = tuple(model.coordinates)
    label = (lambda k: names[k]) if len(names) == arr.shape[1] else (lambda k: f"{model.path_array}[{k}]")
    fig, ax = plt.subplots(figsize=(4.6, 3.6), dpi=100, layout="constrained")
    ax.plot(arr[:, i], arr[:, j], lw=1.0, color="#3f51b5")
    ax.plot(arr[:1, i], arr[:1, j], "o", ms=4, color="#2e7d32", label="start")
    ax.plot(arr[-1:, i], arr[-1:, j], "s", ms=4, color="#c62828", label="end")
    ax.set_xlabel(label(i))
    ax.set_ylabel(label(j))
    ax.set_title(f"{model.name}: {model.default_method}, h = {h:g}, t ∈ [0, {t_final:g}]", fontsize=9)
    ax.legend(fontsize=8, loc="best")
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    caption = (f"{label(j)} against {label(i)} ({model.path_array} components {i} and {j}) over "
               f"{n} steps of `{model.default_method}`{_fmt_options(model.default_options)}, h = {h:g}, "
               f"from the default initial state")
    notes = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
    return buf.getvalue(), caption, seconds, notes


def figure_cache_dir() -> Path | None:
    """The directory of the gallery's figure cache (None: turned off, ``DALEMBERT_DOCS_CACHE=off``)."""
    env = os.environ.get("DALEMBERT_DOCS_CACHE", "").strip()
    if env.lower() in ("off", "0", "none"):
        return None
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dalembert" / "docs-figures"


_SOURCE_DIGEST: dict = {}


def source_digest(dl) -> str:
    """SHA-256 of dalembert's source files (path and bytes of every ``*.py`` of the package
    imported, sorted) and of this hook's figure code: any change draws the figures again."""
    root = Path(dl.__file__).resolve().parent
    if root not in _SOURCE_DIGEST:
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
        import inspect
        h.update(inspect.getsource(_figure).encode())
        _SOURCE_DIGEST[root] = h.hexdigest()
    return _SOURCE_DIGEST[root]


def figure_key(dl, model) -> str:
    """The cache key of a model's gallery figure: a digest of what the figure is drawn from."""
    import jax
    import jaxlib
    import matplotlib
    import numpy as np
    h = float(model.default_h)
    n = max(1, min(int(round(model.default_t_final / h)), MAX_FIGURE_STEPS))
    state = {k: [str(np.asarray(v).dtype), list(np.shape(v)), np.asarray(v, float).tobytes().hex()]
             for k, v in model.initial_state.items()}
    what = {"model": model.name, "params": {k: repr(v) for k, v in sorted(model.params.items())},
            "method": str(model.default_method),
            "options": {k: repr(v) for k, v in sorted(model.default_options.items())},
            "h": repr(h), "steps": n, "state": state,
            "path": [model.path_array, list(model.path)], "coordinates": list(model.coordinates),
            "source": source_digest(dl), "versions": [dl.__version__, jax.__version__, jaxlib.__version__,
                                                      np.__version__, matplotlib.__version__]}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:32]


def cached_figure(dl, model, cache: Path | None):
    """:func:`_figure` of ``model``, from ``cache`` when it holds the figure of the same inputs
    (:func:`figure_key`), else drawn and stored there (a cache that cannot be written is
    skipped). Returns (PNG bytes, caption, seconds of the run, warnings, whether it was cached)."""
    key = figure_key(dl, model) if cache is not None else None
    if key is not None:
        png, meta = cache / f"{model.name}-{key}.png", cache / f"{model.name}-{key}.json"
        try:
            info = json.loads(meta.read_text(encoding="utf-8"))
            return png.read_bytes(), info["caption"], info["seconds"], info["notes"], True
        except (OSError, ValueError, KeyError):
            pass
    out = _figure(dl, model)
    if key is not None:
        try:
            cache.mkdir(parents=True, exist_ok=True)
            for old in cache.glob(f"{model.name}-*"):        # this model's figures of other inputs
                owner, _, k = old.name.split(".")[0].rpartition("-")
                if owner == model.name and k != key:
                    old.unlink(missing_ok=True)
            tmp = png.with_suffix(".png.tmp")
            tmp.write_bytes(out[0])
            tmp.replace(png)
            tmp = meta.with_suffix(".json.tmp")       # written last: its presence means both are there
            tmp.write_text(json.dumps({"caption": out[1], "seconds": out[2], "notes": out[3]}), encoding="utf-8")
            tmp.replace(meta)
        except OSError as exc:
            log.info(f"model gallery: figure cache {cache} not written ({exc})")
    return (*out, False)


def models_page(dl, files, figures: dict) -> str:
    """The Markdown of the model gallery; ``figures``: name -> (path in docs, caption, s, notes)."""
    specs = dl.models.available()
    lines = [
        "# Model gallery",
        "",
        f"The {len(specs)} built-in models, generated from `dalembert.models.available()` when the "
        "site is built. `dl.models.get(name, **params)` returns a model with its `system`, default "
        "initial state and solution; `dalembert run NAME` integrates it with the defaults below. "
        "Each figure is the configuration path of a short run from the default initial state with "
        f"the default method and step (at most {MAX_FIGURE_STEPS} steps, so shorter than the "
        "default final time for some models).",
        "",
        "| model | system kind | default method | solution |",
        "|---|---|---|---|",
    ]
    models = {name: dl.models.get(name) for name in specs}
    for name, m in models.items():
        lines.append(f"| [`{name}`](#{name}) | `{m.system.kind}` | "
                     f"`{m.default_method}`{_fmt_options(m.default_options)} | "
                     f"{md(_solution_type(m).split(' (')[0])} |")
    lines.append("")
    for name, s in specs.items():
        m = models[name]
        lines += [f"## `{name}` {{#{name}}}", "", f"**{md(clean(s.title))}**", ""]
        if s.description:
            lines += [md_doc(clean(s.description), files, MODELS_PAGE), ""]
        lines.append(f"Source: {md_doc(clean(s.source), files, MODELS_PAGE)}.")
        links = _theory_links(s.source, files, MODELS_PAGE)
        if links:
            lines[-1] += f" Theory: {', '.join(links)}."
        lines.append("")
        if m.notes and clean(m.notes):
            lines += [f"Notes: {md_doc(clean(m.notes), files, MODELS_PAGE)}", ""]
        if s.parameters:
            lines += ["| parameter | default | unit | meaning |", "|---|---|---|---|"]
            for p in s.parameters:
                lines.append(f"| `{p.name}` | {_fmt_number(p.default)} | {md(p.unit) or '—'} | "
                             f"{md_doc(clean(p.doc), files, MODELS_PAGE)} |")
            lines.append("")
        else:
            lines += ["No parameters.", ""]
        state = ", ".join(f"`{k}` = {md(_fmt_array(v))}" for k, v in m.initial_state.items())
        lines += [
            f"- System: `{type(m.system).__name__}` (kind `{m.system.kind}`), coordinates "
            f"{', '.join(f'`{c}`' for c in m.coordinates)}",
            f"- Defaults: method [`{m.default_method}`](methods.md){_fmt_options(m.default_options)}, "
            f"h = {_fmt_number(m.default_h)}, "
            f"T = {_fmt_number(m.default_t_final)}",
            f"- Initial state: {state}",
            f"- Solution: {md(_solution_type(m))}",
        ]
        if m.invariants:
            lines.append(f"- Invariants: {', '.join(md(k) for k in m.invariants)}")
        if m.almost_poisson is not None:
            lines.append("- Has a hand-derived almost-Poisson form (`model.almost_poisson`)")
        lines.append("")
        fig = figures.get(name)
        if fig is not None:
            path, caption, seconds, notes = fig
            rel = path[len("reference/"):]
            lines += [f"![Configuration path of {name}]({rel})", "", f"*{caption}.*", ""]
            for note in notes:
                lines += ['!!! note "The default run warns"', "", f"    {md(clean(note))}", ""]
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# MkDocs events
# ---------------------------------------------------------------------------------------------

def on_files(files, config):
    t_all = time.perf_counter()
    dl = _import_dalembert(config)
    figures = {}
    # DALEMBERT_DOCS_FIGURES=0 skips the gallery's runs (a quicker `mkdocs serve` while writing)
    draw = os.environ.get("DALEMBERT_DOCS_FIGURES", "1").strip() != "0"
    cache, reused = figure_cache_dir(), 0
    for name in (dl.models.available() if draw else ()):
        model = dl.models.get(name)
        try:
            png, caption, seconds, notes, hit = cached_figure(dl, model, cache)
        except Exception as exc:  # noqa: BLE001 — a model whose default run fails is a doc bug
            log.warning(f"model gallery: the default run of {name!r} failed: {type(exc).__name__}: {exc}")
            continue
        reused += hit
        path = f"{FIGURE_DIR}/{name}.png"
        files.append(File.generated(config, path, content=png))
        figures[name] = (path, caption, seconds, notes)
        log.debug(f"model gallery: {name} {'from the cache' if hit else f'in {seconds:.1f} s'}")
    files.append(File.generated(config, METHODS_PAGE, content=methods_page(dl, files)))
    files.append(File.generated(config, MODELS_PAGE, content=models_page(dl, files, figures)))
    log.info(f"dalembert hook: generated {METHODS_PAGE}, {MODELS_PAGE} and {len(figures)} figures "
             f"({reused} from the cache {cache}) in {time.perf_counter() - t_all:.1f} s (dalembert "
             f"{dl.__version__} from {Path(dl.__file__).parent})")
    return files


def on_post_page(output, page, config):
    m = FORBIDDEN.search(output)
    if m:
        a = max(0, m.start() - 60)
        log.warning(f"{page.file.src_uri}: mentions {m.group(0)!r} (internal wording; not for the "
                    f"published docs): ...{output[a:m.end() + 60]}...")
    return output

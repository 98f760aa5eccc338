"""The self-contained HTML report of ``dalembert reproduce`` (figures embedded as base64 PNG)
and its machine-readable twin ``checks.json``."""
from __future__ import annotations

import base64
import html
import json
import platform
from datetime import datetime, timezone
from pathlib import Path

from . import __version__

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.5em 0}
th,td{border:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4} .pass{color:#11772d;font-weight:bold} .fail{color:#b00020;font-weight:bold}
img{max-width:100%;border:1px solid #eee;margin:.5em 0} .meta{color:#666;font-size:.85em}
.note{background:#f9f9f4;border-left:3px solid #cc9;padding:.5em 1em}
.warn{background:#fff8e6;border-left:3px solid #E69F00;padding:.3em 1em;font-size:.9em}
figure{margin:1em 0} figcaption{color:#555;font-size:.85em}
"""


def _img(path: Path, caption: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    name = html.escape(Path(path).name)
    return (f'<figure><img alt="{name}" src="data:image/png;base64,{data}">'
            f'<figcaption>{html.escape(caption)} · {name}</figcaption></figure>')


def write_report(results, out: Path, quick: bool = False) -> Path:
    """Write ``out/index.html`` and ``out/checks.json``; return the index path."""
    out.mkdir(parents=True, exist_ok=True)
    n = sum(len(r.checks) for r in results)
    n_pass = sum(c.passed for r in results for c in r.checks)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>dalembert reproduce</title>"
             f"<link rel='icon' href='data:,'>"
             f"<style>{_CSS}</style></head><body>",
             "<h1>dalembert — reproduction report</h1>",
             f"<p class='meta'>dalembert {__version__} · Python {platform.python_version()} · {stamp}"
             f"{' · <b>quick versions</b>' if quick else ''}</p>",
             f"<p><b>{n_pass}/{n}</b> checks passed.</p>",
             "<table id='summary'><tr><th>experiment</th><th>paper</th><th>checks</th><th>warnings</th>"
             "<th>time (s)</th></tr>"]
    for r in results:
        k = sum(c.passed for c in r.checks)
        cls = "pass" if r.passed else "fail"
        parts.append(f"<tr><td><a href='#{r.id}'>{html.escape(r.id)}</a></td><td>{html.escape(r.paper)}</td>"
                     f"<td class='{cls}'>{k}/{len(r.checks)}</td><td>{len(r.warnings) or ''}</td>"
                     f"<td>{r.wall_time_s:.1f}</td></tr>")
    parts.append("</table>")
    for r in results:
        parts.append(f"<h2 id='{r.id}'>{html.escape(r.title)}</h2>")
        parts.append(f"<p class='meta'>{html.escape(r.id)} · {html.escape(r.paper)}</p>")
        parts.append(f"<p>{html.escape(r.description)}</p>")
        parts.append("<table><tr><th>claim</th><th>expected</th><th>measured</th><th></th><th>source</th></tr>")
        for c in r.checks:
            cls, word = ("pass", "PASS") if c.passed else ("fail", "FAIL")
            parts.append(f"<tr><td>{html.escape(c.claim)}</td><td>{html.escape(c.expected)}</td>"
                         f"<td>{html.escape(c.measured)}</td><td class='{cls}'>{word}</td>"
                         f"<td>{html.escape(c.source)}</td></tr>")
        parts.append("</table>")
        for i, f in enumerate(r.figures, 1):
            parts.append(_img(f, f"Figure {i} of {r.id}"))
        if r.notes:
            parts.append(f"<p class='note'>{html.escape(r.notes)}</p>")
        if r.warnings:
            items = "".join(f"<li><b>{html.escape(w['category'])}</b>: {html.escape(w['message'])}</li>"
                            for w in r.warnings)
            parts.append(f"<details class='warn'><summary>{len(r.warnings)} warning(s) issued while it ran "
                         f"(some experiments provoke them on purpose: see the checks)</summary><ul>{items}</ul>"
                         f"</details>")
    parts.append("</body></html>")
    index = out / "index.html"
    index.write_text("\n".join(parts), encoding="utf-8")
    payload = {"dalembert_version": __version__, "date": stamp, "quick": quick,
               "passed": n_pass, "total": n,
               "experiments": [{"id": r.id, "title": r.title, "paper": r.paper, "quick": r.quick,
                                "wall_time_s": r.wall_time_s, "checks": [c.as_dict() for c in r.checks],
                                "figures": [str(f) for f in r.figures], "data": r.data, "notes": r.notes,
                                "warnings": r.warnings}
                               for r in results]}
    (out / "checks.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=float))
    return index

"""What the issue benchmarks do with their markdown: a note under the heading, print, write."""
from __future__ import annotations

from pathlib import Path


def publish(md: str, note: str = "", out: Path | None = None, out_heading: str = "",
            append: Path | None = None) -> str:
    """Insert ``note`` (a paragraph) after the first paragraph of ``md`` (its heading), print
    the result, write it to ``out`` (under ``out_heading``) and append it to ``append``."""
    if note:
        head, rest = md.split("\n\n", 1)
        md = head + "\n\n" + note.strip() + "\n\n" + rest
    print(md)
    if out:
        Path(out).write_text(out_heading + md, encoding="utf-8")
    if append:
        with open(append, "a", encoding="utf-8") as f:
            f.write("\n" + md)
    return md

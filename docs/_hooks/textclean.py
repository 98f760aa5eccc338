"""Text helpers shared by the docs hook (generate.py) and the docstring extension (docstrings.py):
references to internal working documents, kept out of the published site, and references to the
site's own pages, made links."""
from __future__ import annotations

import re

#: references to internal working documents: removed from registry strings and docstrings
INTERNAL = re.compile(r"\.\./shared|restatement|\brestated\b|\bspec\b|[\w-]*-\d{4}[\w-]*\.md\b|\btarget \d")
#: what no page of the site may contain (checked on the final HTML of every page)
#: (internal documents are named like "gni-2015-new-developments.md"; the theory pages of this
#: site, "ferraro2015.md", are not)
FORBIDDEN = re.compile(r"\.\./shared|restatement|\bspec\s*§|[\w-]*-\d{4}[\w-]*\.md\b|\btarget \d")

#: a page of this site as the registry strings and docstrings name it: "docs/theory/x.md#e1",
#: "theory/x.md", "x.md#e2" (a theory page or a top-level page)
PAGE_REF = re.compile(r"(?<![\w/.-])(?:docs/)?([\w-]+(?:/[\w-]+)*\.md)(#[\w-]+)?")


def page_target(name: str, exists) -> str | None:
    """The path in docs_dir of the page a reference ``name`` means (None if none):
    ``name`` itself, else ``theory/name``; ``exists(path) -> bool``."""
    for target in (name, f"theory/{name}"):
        if exists(target):
            return target
    return None


def _split_top(s: str) -> list:
    """``s`` split after the top-level ';' and ',' (outside brackets), separators kept on the left."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in ";," and depth == 0:
            parts.append(s[start:i + 1])
            start = i + 1
    parts.append(s[start:])
    return [p for p in parts if p]


def _drop_parts(s: str) -> str:
    """``s`` without its top-level ';'/','-separated parts that mention internal documents."""
    kept = [p for p in _split_top(s) if not INTERNAL.search(p)]
    return "".join(kept).strip().rstrip(";,").strip()


def _enclosing_group(s: str, pos: int):
    """(start, end) of the innermost parentheses around ``pos`` (s[start] == '(' and
    s[end] == ')'), or None."""
    depth, start = 0, None
    for i in range(pos - 1, -1, -1):
        if s[i] == ")":
            depth += 1
        elif s[i] == "(":
            if depth == 0:
                start = i
                break
            depth -= 1
    if start is None:
        return None
    depth = 0
    for j in range(pos, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            if depth == 0:
                return start, j
            depth -= 1
    return None


def clean(s: str, *, clauses: bool = True) -> str:
    """``s`` without its references to internal working documents.

    A reference inside parentheses drops the parenthesised part that holds it (``"(spec §3.3,
    ours)"`` -> ``"(ours)"``; the parentheses go when nothing is left). With ``clauses``, a
    reference outside parentheses drops its top-level ';'/','-separated clause (plain text only,
    not HTML)."""
    for _ in range(50):
        m = INTERNAL.search(s)
        if m is None:
            return s
        group = _enclosing_group(s, m.start())
        if group is not None:
            a, b = group
            inner = _drop_parts(s[a + 1:b])
            if inner:
                s = s[:a] + "(" + inner + ")" + s[b + 1:]
            else:
                s = s[:a].rstrip() + s[b + 1:]
        elif clauses:
            s = _drop_parts(s)
            # a bare "spec §x.y" left in a clause that also names something else
            s = re.sub(r"\s*\bGNI spec\s*§[\d.]+,?\s*", " ", s).strip()
        else:
            return s
    return s



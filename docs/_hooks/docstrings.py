"""Griffe extension (mkdocstrings-python ``extensions:``): dalembert's docstrings as Markdown.

The docstrings are free-form prose with NumPy-like sections whose entries are mostly
``name : description`` on one line (not NumPy's ``name : type`` + indented description), RST
markup (``:func:`x```, double backticks) and a few doctest lines. mkdocstrings renders them with
``docstring_style: null`` (as Markdown) after this extension has rewritten each docstring:

* a section header (``Parameters`` over a line of dashes) becomes a bold label, and the entries
  under it (up to the next blank line) a bullet list, ``name`` in code;
* a paragraph of two or more ``name : description`` lines (dataclass fields) also becomes a list;
* ``:role:`target``` becomes ``target`` in code (``~a.b.c`` -> ``c``);
* doctest lines (``>>>``) become a fenced Python block;
* outside code, ``*`` between two characters (P*p, T*Q), ``<tag`` and braces are escaped so that
  Markdown does not read them as emphasis, HTML or attribute lists;
* paths of this site's pages (``docs/theory/ferraro2015.md#e1``) become links;
* parenthetical references to internal working documents are removed (``textclean.clean``).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import griffe

sys.path.insert(0, str(Path(__file__).resolve().parent))
from textclean import PAGE_REF, clean, page_target  # noqa: E402  (docs/_hooks/textclean.py)

SECTIONS = {"Parameters", "Other Parameters", "Returns", "Yields", "Raises", "Warns", "Attributes",
            "Notes", "Examples", "Example", "See Also", "References"}
ENTRY_SECTIONS = {"Parameters", "Other Parameters", "Returns", "Yields", "Raises", "Warns", "Attributes"}
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref|term):`~?([^`]+)`")
#: the docs directory: references to its pages become links relative to the API page
#: (reference/api.md), where the docstrings are rendered
DOCS = Path(__file__).resolve().parents[1]


def _page_link(m) -> str:
    target = page_target(m.group(1), lambda t: (DOCS / t).is_file())
    if target is None:
        return m.group(0)
    anchor = m.group(2) or ""
    return f"[{m.group(1).split('/')[-1]}{anchor}](../{target}{anchor})"


CODE = re.compile(r"(``.+?``|`[^`]+`)")
#: "name : text" (names: identifiers, "q0, v0", "**options", "SystemDefinitionError (an InputError)")
ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w.]*(?:\s*,\s*\*{0,2}[A-Za-z_][\w.]*)*(?:\s+\([^()]{1,40}\))?)\s+:(?:\s+(.*))?$")
DASHES = re.compile(r"^\s*-{3,}\s*$")
#: first-line endings after which the next line continues the same sentence
CONTINUES = re.compile(r"([,;(—–-]|\b(and|or|of|the|a|an|to|in|on|with|for|by|as|is|from))$")


def _role(m) -> str:
    target = m.group(1)
    if "<" in target and target.endswith(">"):          # :ref:`text <target>`
        target = target[:target.index("<")].strip()
    return f"`{target.split('.')[-1] if m.group(0).split('`')[1].startswith('~') else target}`"


def inline(text: str) -> str:
    """One line (or paragraph) of docstring prose as Markdown inline text."""
    text = ROLE.sub(_role, text)
    out = []
    for i, part in enumerate(CODE.split(text)):
        if i % 2:                                          # a code span
            if part.startswith("``") and "`" not in part[2:-2]:
                part = f"`{part[2:-2]}`"
            out.append(part)
            continue
        part = PAGE_REF.sub(_page_link, part)
        part = re.sub(r"(?<=\S)\*(?=\S)", r"\\*", part)
        part = re.sub(r"<(?=[A-Za-z/!?])", "&lt;", part)
        part = part.replace("{", r"\{").replace("}", r"\}")
        out.append(part)
    return "".join(out)


def _entry_name(name: str) -> str:
    m = re.match(r"^(.*?)(\s+\(.*\))?$", name)
    names, extra = m.group(1), m.group(2) or ""
    code = ", ".join(f"`{n.strip()}`" for n in names.split(","))
    return code + inline(extra)


def _is_header(lines: list, i: int) -> bool:
    return lines[i].strip() in SECTIONS and i + 1 < len(lines) and bool(DASHES.match(lines[i + 1]))


def _is_entry(line: str) -> bool:
    return not line[:1].isspace() and ENTRY.match(line) is not None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _chunks(lines: list) -> list:
    """``lines`` split at blank lines into lists of non-blank lines."""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line)
        elif cur:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def _prose(lines: list) -> str:
    """Lines of a paragraph as one Markdown line (an RST "::" at the end becomes ":")."""
    text = " ".join(line.strip() for line in lines)
    return inline(re.sub(r"(?<=\S)::$", ":", text))


def _body(chunks: list, base: int, pad: str) -> list:
    """Paragraphs and (more indented) code blocks of an entry or a docstring, as Markdown lines
    with ``pad`` before each."""
    out = []
    for chunk in chunks:
        if min(_indent(line) for line in chunk) > base:
            cut = min(_indent(line) for line in chunk)
            out += ["", f"{pad}```python", *[pad + line[cut:] for line in chunk], f"{pad}```"]
        else:
            out += ["", pad + _prose(chunk)]
    return out


def _section(lines: list, i: int) -> int:
    """The end (exclusive) of the section whose first line is ``lines[i]``: the first blank
    line not followed by an indented line or an entry, or the next section header."""
    j = i
    while j < len(lines):
        if _is_header(lines, j):
            return j
        if not lines[j].strip():
            k = j
            while k < len(lines) and not lines[k].strip():
                k += 1
            if k < len(lines) and not _is_header(lines, k) and (lines[k][:1].isspace() or _is_entry(lines[k])):
                j = k
                continue
            return j
        j += 1
    return j


def _entries(block: list) -> list:
    """Markdown bullets of ``name : description`` entries; an entry goes on to the next one (its
    more indented lines may hold further paragraphs and code blocks)."""
    items, prefix = [], []                                   # [name, first line, [lines]]
    for line in block:
        m = ENTRY.match(line) if _is_entry(line) else None
        if m:
            items.append([m.group(1), (m.group(2) or "").strip(), []])
        elif items:
            items[-1][2].append(line)
        else:
            prefix.append(line)
    out = ([_prose(prefix), ""] if any(x.strip() for x in prefix) else [])
    # NumPy style (a type on the entry's line, the description below) when one entry shows it
    numpy = any(first and rest and rest[0].strip()[:1].isupper() and not CONTINUES.search(first)
                for _, first, rest in items)
    for name, first, rest in items:
        chunks = _chunks(rest)
        base = min((_indent(line) for line in chunks[0]), default=0) if chunks else 0
        lead = chunks.pop(0) if chunks and (not first or _indent(chunks[0][0]) <= base) and rest[0].strip() else []
        if numpy and first and lead:
            text = f"({inline(first)}) {_prose(lead)}"
        else:
            text = _prose(([first] if first else []) + lead)
        out.append(f"- {_entry_name(name)}: {text}")
        body = _body(chunks, base, "    ")
        out += body + ([""] if body else [])
    return out


def to_markdown(doc: str) -> str:
    """A dalembert docstring as Markdown (see the module doc)."""
    doc = clean(doc, clauses=False)
    lines = doc.splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _is_header(lines, i):
            j = _section(lines, i + 2)
            body = lines[i + 2:j]
            out += ["", f"**{stripped}**", ""]
            if stripped in ENTRY_SECTIONS and any(_is_entry(b) for b in body):
                out += _entries(body)
            else:
                out += _body(_chunks(body), 0, "")
            out.append("")
            i = j
            continue
        if not stripped:
            out.append("")
            i += 1
            continue
        if stripped.startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip().startswith((">>>", "...")) and lines[i].strip():
                block.append(lines[i].strip()[4:])
                i += 1
            out += ["", "```python", *block, "```", ""]
            continue
        # a block: consecutive non-blank lines (up to a section header or a doctest)
        j = i
        while j < len(lines) and lines[j].strip() and not lines[j].strip().startswith(">>>") and not _is_header(lines, j):
            j += 1
        block = lines[i:j]
        if _is_entry(block[0]) and sum(_is_entry(b) for b in block) >= 2:
            out += _entries(block)                             # dataclass fields, "name : text"
        elif _indent(line) >= 4 and (not out or not out[-1].strip()):
            out += ["```text", *[b[_indent(line):] if _indent(b) >= _indent(line) else b for b in block], "```"]
        elif any(b.lstrip().startswith(("* ", "- ")) for b in block):
            out += [inline(b) for b in block]                  # a list: keep its lines
        else:
            out.append(_prose(block))
        i = j
    return "\n".join(out).strip() + "\n"


class DocstringsToMarkdown(griffe.Extension):
    """Rewrites every docstring as Markdown when its object is created."""

    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None and obj.docstring.value:
            obj.docstring.value = to_markdown(obj.docstring.value)

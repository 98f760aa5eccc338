"""The modules of dalembert import each other without a circle.

Every module under ``src/dalembert`` is parsed (not imported) and each ``import`` statement,
at module level or inside a function or class, is an edge of the module graph. Rules:

* ``import a.b.c`` and ``from a.b.c import n`` import ``a.b.c``; when ``a.b.c.n`` is a module,
  also that module. A package is its ``__init__``.
* Importing ``a.b.c`` runs the ``__init__`` of the packages ``a`` and ``a.b`` first: those are
  edges too, except for the packages that contain the importing module (they are being, or
  have been, imported when it runs: a submodule importing a sibling does not import its own
  package again).
* ``from <package> import n`` where ``n`` is not a submodule reads a name of the package's
  ``__init__``: an edge to that ``__init__`` even when it is the importer's own package (a
  submodule that takes a name from its package's ``__init__``, which imports that submodule, is
  a circle).
* ``__import__("a.b")`` with a literal name counts as ``import a.b``.

The graph must have no cycle (a strongly connected component of more than one module, or a
module importing itself); the failure message prints one cycle per component.
"""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "dalembert"


def _modules() -> dict:
    """{module name: (path, is_package)} of every module under src/dalembert."""
    out = {}
    for path in sorted((SRC / ROOT).rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if package else parts)
        out[name] = (path, package)
    return out


def _ancestors(name: str) -> list:
    """The packages that contain module ``name`` (outermost first), not ``name`` itself."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _edges(name: str, path: Path, package: bool, modules: dict) -> set:
    """The dalembert modules that module ``name`` imports (rules in the module doc)."""
    own = set(_ancestors(name)) | ({name} if package else set())
    here = name if package else name.rpartition(".")[0]       # the package of a relative import
    targets = set()

    def add_module(mod: str):
        """``mod`` and the packages above it that do not contain the importer."""
        if not (mod == ROOT or mod.startswith(ROOT + ".")):
            return
        for anc in _ancestors(mod):
            if anc in modules and anc not in own:
                targets.add(anc)
        if mod in modules:
            targets.add(mod)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add_module(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            if not (mod == ROOT or mod.startswith(ROOT + ".")):
                continue
            for anc in _ancestors(mod):
                if anc in modules and anc not in own:
                    targets.add(anc)
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                if sub in modules:
                    add_module(sub)
                    if mod not in own:
                        targets.add(mod)
                else:
                    targets.add(mod)              # a name of mod (its __init__ if a package)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            add_module(node.args[0].value)
    return {t for t in targets if t in modules}


def import_graph() -> dict:
    """{module: set of modules it imports} over src/dalembert."""
    modules = _modules()
    return {name: _edges(name, path, package, modules) for name, (path, package) in modules.items()}


def _components(graph: dict) -> list:
    """The strongly connected components of ``graph`` (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(sorted(comp))
    return comps


def _cycle_in(comp: list, graph: dict, start: str) -> list:
    """The shortest cycle through ``start`` within its strongly connected component (BFS)."""
    members = set(comp)
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return path[::-1] + [start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return comp


def import_cycles() -> list:
    """The circles of the import graph: per strongly connected component of more than one module
    (or a module importing itself), the shortest cycle through each of its modules, each cycle
    once (a list of module names, first = last)."""
    graph = import_graph()
    cycles, seen = [], set()
    for comp in _components(graph):
        if len(comp) > 1 or comp[0] in graph[comp[0]]:
            for start in comp:
                cycle = _cycle_in(comp, graph, start)
                key = frozenset(zip(cycle, cycle[1:]))
                if key not in seen:
                    seen.add(key)
                    cycles.append(cycle)
    return cycles


def test_the_graph_sees_the_imports():
    graph = import_graph()
    assert "dalembert.engine" in graph["dalembert"]
    assert "dalembert.engine.loop" in graph["dalembert.engine.run"]
    assert "dalembert.engine" not in graph["dalembert.engine.run"]    # its own package


def test_results_do_not_reach_the_engine():
    graph = import_graph()
    for name in graph:
        if name == "dalembert.results" or name.startswith("dalembert.results."):
            seen, todo = set(), [name]
            while todo:
                for w in graph[todo.pop()] - seen:
                    seen.add(w)
                    todo.append(w)
            assert not {m for m in seen if m == "dalembert.engine" or m.startswith("dalembert.engine.")}, name


def test_no_import_cycle():
    cycles = import_cycles()
    assert not cycles, "import cycles in src/dalembert:\n" + "\n".join(" -> ".join(c) for c in cycles)


if __name__ == "__main__":                          # pragma: no cover - a report for developers
    graph = import_graph()
    for comp in _components(graph):
        if len(comp) > 1:
            print(f"component of {len(comp)}: {', '.join(comp)}")
    for c in import_cycles():
        print(" -> ".join(c))

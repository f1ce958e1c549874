"""mpsgen's modules import each other in one direction: no circle, whether the import stands at
the top of a module, inside a function, or under ``TYPE_CHECKING``. The walk reads the
sources (``ast``), so an import hidden in a function body counts like any other."""

from __future__ import annotations

import ast
from pathlib import Path

import mpsgen

PACKAGE = Path(mpsgen.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "practice_tree" in path.relative_to(PACKAGE).parts:
            continue
        parts = ("mpsgen", *path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The mpsgen modules ``name`` imports anywhere in its source (``from mpsgen.x import y``
    names ``mpsgen.x``, and ``mpsgen.x.y`` when y is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [base, *(f"{base}.{a.name}" for a in node.names)]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    return found


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imported(name, path, known) for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, edges = work[-1]
            for w in edges:
                if w not in index:
                    index[w] = low[w] = len(index)
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
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == v:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return out


def test_the_walk_sees_imports_inside_functions():
    # (explain imports the new-op planner inside its functions only)
    assert "mpsgen.plan.newop" in import_graph()["mpsgen.report.explain"]


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back():
    found = circles(import_graph())
    assert found == [], "modules that import each other (a circle; move what they share down a layer): " + "; ".join(
        " <-> ".join(group) for group in found
    )


# The layers, lowest first: a module imports only modules of its own layer or of one below.
# ``mpsgen/__init__.py`` belongs to ``core``, ``mpsgen/__main__.py`` to ``cli``.
LAYERS = ("core", "metal", "tree", "patch", "spec", "edits", "codegen", "shim", "plan", "check", "report", "cli")


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "core"
    if parts[1] == "__main__":
        return "cli"
    return parts[1]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    rank = {name: i for i, name in enumerate(LAYERS)}
    return [
        f"{a} ({layer_of(a)}) imports {b} ({layer_of(b)})"
        for a, targets in sorted(graph.items())
        for b in sorted(targets)
        if rank[layer_of(b)] > rank[layer_of(a)]
    ]


def test_every_module_belongs_to_a_layer():
    strays = sorted(m for m in import_graph() if layer_of(m) not in LAYERS)
    assert strays == [], f"modules outside the layers (move them into one, or add the layer to LAYERS): {strays}"


def test_the_upward_finder_finds_an_upward_import():
    assert upward_imports({"mpsgen.tree.x": {"mpsgen.plan.newop"}, "mpsgen.plan.newop": {"mpsgen.tree.x"}}) == [
        "mpsgen.tree.x (tree) imports mpsgen.plan.newop (plan)"
    ]


def test_no_module_imports_a_layer_above_its_own():
    found = upward_imports(import_graph())
    assert found == [], "imports that run up the layers (move what is shared down): " + "; ".join(found)


def private_uses() -> list[str]:
    """``from mpsgen.x import _y`` and ``x._y`` (x an imported mpsgen module) across modules:
    a name with a leading underscore belongs to its module. (``import a as _a`` is fine.)"""
    known = _modules()
    out = []
    for name, path in sorted(known.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mpsgen"):
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in known:
                        modules.add(alias.asname or alias.name)
                    elif alias.name.startswith("_") and node.module != name:
                        out.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known and alias.asname:
                        modules.add(alias.asname)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                out.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} uses {node.value.id}.{node.attr}")
    return out


def test_no_private_name_is_used_across_modules():
    found = private_uses()
    assert found == [], "private names used outside their module (make them public, or move the use): " + "; ".join(found)

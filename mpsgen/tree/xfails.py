"""The xfail/skip entries of ``common_mps.py`` as data: which op, which dict, which dtypes."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from typing import TYPE_CHECKING, NamedTuple
from mpsgen.tree.source import match_close, parse_python

if TYPE_CHECKING:
    import ast

# torch dtype spellings -> canonical names
_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "int": "int32",
    "long": "int64",
    "short": "int16",
    "cfloat": "complex64",
    "chalf": "complex32",
    "cdouble": "complex128",
}


def canonical_dtype(expr: str) -> str:
    name = expr.strip().split(".")[-1]
    return "torch." + _ALIASES.get(name, name)


class XfailEntry(NamedTuple):
    """One ``"key": None | [dtypes]`` element of an xfail/skip dict."""

    dict_name: str
    key: str
    dtypes: tuple[str, ...] | None  # None means every dtype
    line: int  # 1-based line of the key


_COMPLEX_SET = re.compile(r"^[ \t]*(\w*COMPLEX\w*)\s*(?::[^=\n]*)?=\s*\{", re.M)
_STRING = re.compile(r"""(?<![\w])["']([\w.]+)["']""")


@functools.lru_cache(maxsize=2)
def complex_supported(text: str) -> frozenset[str]:
    """OpInfo names in common_mps.py's set of ops MPS tests with complex inputs
    (``SUPPORTED_COMPLEX_OPS`` in 2.13; found by shape, not by that name). Read once per text:
    every op a run plans asks it of the same file."""
    found: set[str] = set()
    for m in _COMPLEX_SET.finditer(text):
        i = match_close(text, m.end() - 1)
        i = len(text) if i < 0 else i
        body = "\n".join(line.split("#", 1)[0] for line in text[m.end() : i].split("\n"))
        found.update(_STRING.findall(body))
    return frozenset(found)


def _statements(nodes: list) -> Iterator[ast.AST]:
    """Every statement of ``nodes`` and of the blocks nested in them (functions, classes,
    if/for/while/with/try/match bodies): where an assignment can be, without visiting
    the expressions that :func:`ast.walk` also goes through."""
    for node in nodes:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, name, None)
            if isinstance(sub, list):
                yield from _statements(sub)


def _source(node: ast.expr) -> str:
    """``ast.unparse(node)``, without unparsing the common ``torch.float32`` and ``x``."""
    import ast  # (local: check loads no ast)

    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ast.unparse(node)


def modifier_assignments(module: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(name, value) of each assignment to a plain name among the statements of
    ``mps_ops_modifier`` (where its xfail/skip dicts and complex-supporting set are made)."""
    import ast  # (local: check loads no ast)

    for fn in _statements(module.body):
        if not isinstance(fn, ast.FunctionDef) or fn.name != "mps_ops_modifier":
            continue
        for node in _statements(fn.body):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for t in targets:
                if isinstance(t, ast.Name):
                    yield t.id, value


def is_list_name(name: str) -> bool:
    """Whether a dict assigned to ``name`` is an xfail/skip list (``UNIMPLEMENTED_XFAILLIST``, ``SKIPLIST``...)."""
    return "XFAIL" in name or "SKIP" in name


def read_xfail_entries(text: str) -> list[XfailEntry]:
    """The xfail/skip entries of ``mps_ops_modifier``, the ones :mod:`mpsgen.edits.common_mps`
    edits, from the file's one parse (:func:`~mpsgen.tree.source.parse_python`); [] when the
    file does not parse. Read once per text (every op a run plans asks it of the same file)."""
    return list(_xfail_entries(text))


@functools.lru_cache(maxsize=2)
def _xfail_entries(text: str) -> tuple[XfailEntry, ...]:
    import ast  # (local: check loads no ast)

    try:
        module = parse_python(text)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    entries = []
    for name, value in modifier_assignments(module):
        if not isinstance(value, ast.Dict) or not is_list_name(name):
            continue
        for k, v in zip(value.keys, value.values):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                continue
            dtypes = None
            if isinstance(v, (ast.List, ast.Tuple)):
                dtypes = tuple(canonical_dtype(_source(x)) for x in v.elts)
            entries.append(XfailEntry(name, k.value, dtypes, k.lineno))
    return tuple(entries)


@functools.lru_cache(maxsize=1)
def unedited_mentions(text: str) -> dict[str, list[tuple[int, str]]]:
    """Name -> (line, source line) of each place in ``mps_ops_modifier`` that names it in a
    form the test-list edit does not handle: anything but a key of an XFAIL/SKIP dict literal
    or a member of the complex-supporting set (a subscript assignment, a dict built with
    ``dict(...)`` or passed to ``.update``). Such an entry would keep the op's tests xfailed.
    One parse answers for every op: callers look their OpInfo keys up (a run that plans
    several ops, as coverage does, asks once per text; the answer is shared: read it only)."""
    return _unedited_mentions(text)


def _unedited_mentions(text: str) -> dict[str, list[tuple[int, str]]]:
    import ast  # (local: check loads no ast)

    try:
        module = parse_python(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    lines = text.split("\n")
    handled: set[int] = set()  # ids of the nodes the edit reads
    found: dict[str, set[tuple[int, str]]] = {}
    for fn in _statements(module.body):
        if not isinstance(fn, ast.FunctionDef) or fn.name != "mps_ops_modifier":
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if isinstance(node.value, ast.Dict) and any("XFAIL" in n or "SKIP" in n for n in names):
                    handled.update(id(k) for k in node.value.keys if k is not None)
                elif isinstance(node.value, ast.Set) and any("COMPLEX" in n for n in names):
                    handled.update(id(e) for e in node.value.elts)
        for node in ast.walk(fn):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in handled:
                name = node.value
            elif isinstance(node, ast.keyword) and node.arg:
                name = node.arg
            else:
                continue
            found.setdefault(name, set()).add((node.lineno, lines[node.lineno - 1].strip()))
    return {name: sorted(places) for name, places in found.items()}

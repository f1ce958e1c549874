"""Which ``c10/metal/*.h`` header of the tree declares a ``c10::metal::`` function, and which
headers a ``.metal`` file already sees (its ``#include``s, followed inside the tree)."""

from __future__ import annotations

import re

from mpsgen.tree import PytorchTree

C10_METAL_DIR = "c10/metal"
_USE = re.compile(r"(?<![\w:])(?:::)?c10::metal::(\w+)\s*[(<]")
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](c10/metal/[\w./]+)[>"]', re.M)
_NOT_A_DECLARATION = ("return", "if", "else", "while", "for", "switch", "case", "#", "//", "*")


def functions_used(functor: str) -> list[str]:
    """``c10::metal::`` functions a functor's text calls, in order of first use."""
    return list(dict.fromkeys(_USE.findall(functor)))


def declaring_headers(tree: PytorchTree, names: list[str]) -> dict[str, list[str]]:
    """name -> the c10/metal headers that declare or define it (a line that names a type,
    then ``name(``, not a statement)."""
    found: dict[str, list[str]] = {n: [] for n in names}
    if not names:
        return found
    for rel in tree.list_files(C10_METAL_DIR, (".h",)):
        text = tree.read(rel).text
        for n in names:
            if n in text and _declares(text, n):
                found[n].append(rel)
    return found


def _declares(text: str, name: str) -> bool:
    """Whether a line of ``text`` declares or defines ``name``: the first ``name(`` of the line
    follows a type, not a statement (``return``, ``if``...) or an expression. Visits only the
    places that name it (a C-speed search), not every line. A type (``using opmath_t = ...``,
    ``struct name``) or a variable template (``constexpr bool name = ...``) counts too."""
    judged = -1  # the start of the last line whose first call was judged
    for m in re.finditer(re.escape(name), text):  # a literal: a C-speed search (a leading \b is not)
        at, end = m.span()
        if at and _is_word(text[at - 1]):
            continue  # inside a longer name
        before = at
        while before and text[before - 1].isspace():
            before -= 1
        word = before
        while word and _is_word(text[word - 1]):
            word -= 1
        equals = _EQUALS.match(text, end)
        if before < at and (
            (text[word:before] == "using" and equals)
            or (text[word:before] in ("struct", "class") and not _is_word(text[end : end + 1]))
        ):
            return True  # `using name =`, `struct name`
        start = text.rfind("\n", 0, at) + 1
        if equals and _CONSTEXPR.search(text, start, at):
            return True  # `constexpr bool name = ...`
        if start == judged or not _CALL.match(text, end):
            continue
        judged = start
        head = text[start:at].strip()
        if head and not head.startswith(_NOT_A_DECLARATION) and "=" not in head and "(" not in head:
            return True
    return False


_EQUALS = re.compile(r"\s*=")
_CALL = re.compile(r"\s*\(")
_CONSTEXPR = re.compile(r"\bconstexpr\b[^;=(\n]*\Z")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def included_closure(tree: PytorchTree, text: str) -> set[str]:
    """The c10/metal headers ``text`` includes, directly or through them."""
    seen: set[str] = set()
    todo = _INCLUDE.findall(text)
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        src = tree.read_optional(rel)
        if src is not None:
            todo.extend(_INCLUDE.findall(src.text))
    return seen


def add_include(text: str, header: str) -> str:
    """Insert ``#include <header>`` among the file's ``#include <c10/metal/...>`` lines, in
    sorted position (after the last include when the file has none of those)."""
    lines = text.split("\n")
    new = f"#include <{header}>"
    c10 = [i for i, ln in enumerate(lines) if _INCLUDE.match(ln)]
    if c10:
        at = next((i for i in c10 if lines[i].strip() > new), c10[-1] + 1)
    else:
        includes = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("#include")]
        at = includes[-1] + 1 if includes else 0
    return "\n".join(lines[:at] + [new] + lines[at:])

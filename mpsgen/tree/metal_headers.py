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
            if n not in text:
                continue
            for m in re.finditer(rf"^([ \t]*)([^\n]*?)\b{re.escape(n)}\s*\(", text, re.M):
                head = m.group(2).strip()
                if not head or head.startswith(_NOT_A_DECLARATION) or "=" in head or "(" in head:
                    continue
                found[n].append(rel)
                break
    return found


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

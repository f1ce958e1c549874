"""Who a tree's CODEOWNERS file names for a set of paths: the people a PR touching them asks
for review (PyTorch's CODEOWNERS subscribes them to such PRs; ``/aten/src/ATen/native/mps/``
names the MPS maintainers of the day). GitHub's rules: the file is looked for in ``.github/``,
the root, then ``docs/``; for each path the last matching pattern wins (a pattern with no
owners names nobody); patterns are gitignore-like (a leading ``/`` anchors to the root, a
pattern without an inner ``/`` matches at any depth, a trailing ``/`` matches everything under
a folder, ``*`` stays within a name, ``**`` crosses folders)."""

from __future__ import annotations

import re

from mpsgen.tree import PytorchTree

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")


def _regex(pattern: str) -> re.Pattern[str]:
    anchored = pattern.startswith("/") or "/" in pattern.rstrip("/")
    folder = pattern.endswith("/")
    body = pattern.strip("/")
    out = ""
    i = 0
    while i < len(body):
        if body.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif body.startswith("**", i):
            out += ".*"
            i += 2
        elif body[i] == "*":
            out += "[^/]*"
            i += 1
        elif body[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(body[i])
            i += 1
    head = "" if anchored else "(?:.*/)?"
    # a file pattern also matches a folder of that name (and so what is under it)
    tail = "/.*" if folder else "(?:/.*)?"
    return re.compile(f"{head}{out}{tail}\\Z")


def read_rules(text: str) -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
    rules = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        pattern, *owners = line.split()
        rules.append((_regex(pattern), tuple(owners)))
    return rules


def owners_of(tree: PytorchTree, paths: list[str]) -> list[str]:
    """The owners the tree's CODEOWNERS names for ``paths`` (each path's last matching rule),
    in the order the file names them; none when the tree has no CODEOWNERS."""
    for rel in LOCATIONS:
        src = tree.read_optional(rel)
        if src is not None:
            break
    else:
        return []
    rules = read_rules(src.text)
    found: dict[str, None] = {}
    for path in paths:
        owners: tuple[str, ...] = ()
        for regex, names in rules:
            if regex.match(path):
                owners = names
        found.update(dict.fromkeys(owners))
    return list(found)

"""Hostile and unlucky inputs, as a table: each case prepares a practice tree (and files beside
it) and gives the mpsgen arguments; the expected outcome is a one-paragraph error naming what
is wrong, the exit code, no traceback and nothing written.

Used by ``tests/test_hostile_table.py`` (in-process and, for a sample, as real processes) and
by ``benchmarks/hostile_trial.py`` (every case as a process, with the closing counts).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mpsgen.tree import COMMON_MPS, KERNELS_DIR, NATIVE_FUNCTIONS, OPERATIONS_DIR

BINARY_METAL = f"{KERNELS_DIR}/BinaryKernel.metal"
BINARY_MM = f"{OPERATIONS_DIR}/BinaryKernel.mm"
NEW_OP = ("new-op", "heaviside", "--binary", "--integer")


@dataclass(frozen=True)
class Case:
    id: str
    prepare: Callable[[Path, Path], list[str]]  # (tree root, scratch folder) -> mpsgen arguments
    exit_code: int
    words: tuple[str, ...]  # what the message must say (file names, lines, what to do)


def _args(*args: str) -> Callable[[Path, Path], list[str]]:
    return lambda root, tmp: [*args, "--root", str(root)]


def _spec(text: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        spec = tmp / "heaviside.yaml"
        spec.write_text(text)
        return ["new-op", "heaviside", "--spec", str(spec), *extra, "--root", str(root)]

    return prepare


def _edit(rel: str, change: Callable[[str], str], *args: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        path = root / rel
        path.write_text(change(path.read_text()))
        return [*(args or NEW_OP), "--root", str(root)]

    return prepare


def _conflict(text: str) -> str:
    lines = text.split("\n")
    at = len(lines) // 2
    return "\n".join(lines[:at] + ["<<<<<<< HEAD", lines[at], "=======", lines[at] + "  # theirs", ">>>>>>> topic"] + lines[at + 1 :])


def _long_root(root: Path, tmp: Path) -> list[str]:
    return [*NEW_OP, "--root", str(root / ("b" * 300))]


def _deep_folders(root: Path, tmp: Path) -> list[str]:
    # 1,200 nested folders under aten/src/ATen/native: created with relative mkdirs (a path
    # that long cannot be passed whole to the system)
    fd = os.open(root / "aten/src/ATen/native", os.O_RDONLY)
    try:
        for _ in range(1200):
            os.mkdir("d", dir_fd=fd)
            nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return [*NEW_OP, "--dry-run", "--root", str(root)]


def _list_with_nul(root: Path, tmp: Path) -> list[str]:
    listing = tmp / "paths.txt"
    listing.write_bytes(b"aten/src/ATen/native/native_functions.yaml\x00\n")
    return ["check", f"@{listing}", "--root", str(root)]


def _truncate(text: str) -> str:
    return text[: len(text) * 2 // 3].rstrip("\n")[:-7]


CASES: list[Case] = [
    # names and roots the system refuses (ENAMETOOLONG)
    Case("op name of 300 characters", _args("new-op", "a" * 300, "--unary"), 2, ("300 characters",)),
    Case("migrate op name of 300 characters", _args("migrate-from-mpsgraph", "a" * 300), 2, ("300 characters",)),
    Case("root of 300 characters", _long_root, 2, ("File name too long", "--root")),
    Case("stub of 300 characters", _args(*NEW_OP, "--stub", "s" * 300), 2, ("300 characters",)),
    # specs with bytes YAML does not allow, or nested absurdly deep
    Case("NUL in a spec", _spec("name: heavi\x00side\nkind: binary\n"), 2, ("heaviside.yaml:1:12", "U+0000")),
    Case("bell character in a spec", _spec('name: heaviside\nkind: binary\nexpr: "a\x07 + b"\n'), 2, ("heaviside.yaml:3", "U+0007")),
    Case("escaped control character in a spec expr", _spec('name: heaviside\nkind: binary\nexpr: "a\\x01 + b"\n'), 2, ("control character",)),
    Case("spec nested 5,000 deep", _spec("name: " + "[" * 5000 + "]" * 5000 + "\n"), 2, ("nested too deeply",)),
    Case("check @list holding a NUL", _list_with_nul, 2, ("NUL",)),
    # one validation path for spec and flags
    Case("--expr empty", _args(*NEW_OP, "--expr", ""), 2, ("--expr", "empty")),
    Case("--expr two lines", _args(*NEW_OP, "--expr", "a +\n b"), 2, ("one line",)),
    Case("--expr with an include", _args(*NEW_OP, "--expr", "a\n#include <x>"), 2, ("one line",)),
    Case("--expr a // b", _args(*NEW_OP, "--expr", "a // b"), 2, ("'//' starts a C++ comment", "floor_divide")),
    Case("--expr with a comment", _args(*NEW_OP, "--expr", "a /* b */"), 2, ("comments",)),
    Case("--expr with a statement", _args(*NEW_OP, "--expr", "a); system(b"), 2, ("no statements",)),
    Case("--expr closing a bracket it did not open", _args(*NEW_OP, "--expr", "a) + (b"), 2, ("closes nothing",)),
    Case("--expr preprocessor", _args(*NEW_OP, "--expr", "a #b"), 2, ("preprocessor",)),
    Case("spec with --expr ''", _spec("name: heaviside\nkind: binary\nexpr: a + b\n", "--expr", ""), 2, ("--spec", "empty")),
    Case("spec expr a // b", _spec("name: heaviside\nkind: binary\nexpr: a // b\n"), 2, ("heaviside.yaml:3", "comment")),
    Case(
        "spec integer with --int2float",
        _spec("name: heaviside\nkind: binary\ndtypes: [integer]\nexpr: a + b\n", "--int2float"),
        2,
        ("'int2float' and 'integer'",),
    ),
    Case(
        "functor body escaping its struct",
        _spec("name: heaviside\nkind: binary\nfunctor: |\n  template <typename T> T operator()(T a, T b) { return a; }\n  };\n  struct evil {\n"),
        2,
        ("heaviside.yaml:3", "closes nothing"),
    ),
    Case(
        "functor body leaving a comment open",
        _spec("name: heaviside\nkind: binary\nfunctor: |\n  template <typename T> T operator()(T a, T b) { return a; } /*\n"),
        2,
        ("block comment open",),
    ),
    Case(
        "functor body with a preprocessor line",
        _spec("name: heaviside\nkind: binary\nfunctor: |\n  #include <evil.h>\n  template <typename T> T operator()(T a, T b) { return a; }\n"),
        2,
        ("preprocessor",),
    ),
    Case(
        "functor struct with code after it",
        _spec("name: heaviside\nkind: binary\nfunctor: |\n  struct heaviside_functor { };\n  int x;\n"),
        2,
        ("after the end of struct",),
    ),
    Case("spec with both expr and body", _spec("name: heaviside\nkind: binary\nfunctor: {expr: a+b, body: x}\n"), 2, ("not both",)),
    Case("spec with functor and expr", _spec("name: heaviside\nkind: binary\nfunctor: 'x'\nexpr: a+b\n"), 2, ("not both",)),
    # files that are not what a PyTorch tree holds
    Case("common_mps.py with a syntax error", _edit(COMMON_MPS, lambda t: t + "\ndef broken(:\n"), 2, ("common_mps.py:", "not valid Python")),
    Case("common_mps.py with conflict markers", _edit(COMMON_MPS, _conflict), 2, ("common_mps.py:", "merge conflict")),
    Case(
        "common_mps.py with mixed tabs",
        _edit(COMMON_MPS, lambda t: t + "\ndef mixed():\n        x = 1\n\ty = 2\n"),
        2,
        ("common_mps.py:", "not valid Python"),
    ),
    Case("native_functions.yaml truncated", _edit(NATIVE_FUNCTIONS, _truncate), 2, ("native_functions.yaml:", "truncated")),
    Case(
        "native_functions.yaml unparseable",
        _edit(NATIVE_FUNCTIONS, lambda t: t.replace("- func: abs(Tensor self)", "- func: [abs(Tensor self)", 1)),
        2,
        ("native_functions.yaml:", "not valid YAML"),
    ),
    Case(
        "native_functions.yaml not a list of entries",
        _edit(NATIVE_FUNCTIONS, lambda t: t.replace("- func: abs(Tensor self)", "- fnc: abs(Tensor self)", 1)),
        2,
        ("native_functions.yaml:", "func"),
    ),
    Case("native_functions.yaml with conflict markers", _edit(NATIVE_FUNCTIONS, _conflict), 2, ("native_functions.yaml:", "merge conflict")),
    Case("kernel .metal with conflict markers", _edit(BINARY_METAL, _conflict), 2, ("BinaryKernel.metal:", "merge conflict")),
    Case("host .mm with conflict markers", _edit(BINARY_MM, _conflict), 2, ("BinaryKernel.mm:", "merge conflict")),
    Case("check on a .metal with conflict markers", _edit(BINARY_METAL, _conflict, "check"), 2, ("BinaryKernel.metal:", "merge conflict")),
    # folders nested deeper than any source tree
    Case("folders 1,200 deep under aten/src/ATen/native", _deep_folders, 0, ("dry run",)),
]


def tree_state(root: Path) -> dict[str, bytes]:
    """Every file of the tree (bounded walk: a case may nest folders absurdly deep)."""
    from mpsgen.tree.walk import walk_files

    return {rel: Path(e.path).read_bytes() for rel, e in walk_files(str(root), "", None) if ".git" not in rel.split("/")}


def leftovers(root: Path) -> list[str]:
    """Temporary files mpsgen stages beside a target (``.<name>.*.mpsgen``)."""
    return sorted(rel for rel in tree_state(root) if rel.endswith(".mpsgen"))


def undo_deep_folders(root: Path) -> None:
    """Remove the chain :func:`_deep_folders` made, a level at a time (``shutil.rmtree`` and
    pytest's clean-up recurse once per level and fail on it)."""
    base = root / "aten/src/ATen/native"
    while (base / "d").is_dir():
        if (base / "d" / "d").is_dir():
            os.rename(base / "d" / "d", base / "d.next")
            os.rmdir(base / "d")
            os.rename(base / "d.next", base / "d")
        else:
            os.rmdir(base / "d")

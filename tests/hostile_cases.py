"""Hostile and unlucky inputs, as a table: each case prepares a practice tree (and files beside
it, in a scratch folder) and gives the mpsgen arguments; the expected outcome is the exit code,
a message naming what is wrong, no traceback, no raw control character printed, and nothing
written (or, for an ``applied`` case, exactly the tree of a clean apply, said so).

Each case belongs to a family: the malformed inputs of the first trial, then one family per
finding of issue 21 (escapes from a tree or a typed path, a tree's config moving a write,
the truth about the outcome once the tree is changed, whole side files, silent partial edits).
The kill family (SIGKILL at random moments, then ``check`` and ``recover``) is not a table:
:func:`kill_trial` runs it.

Used by ``tests/test_hostile_table.py`` (in-process where a case can be, as real processes for
the rest and a sample) and by ``benchmarks/hostile_trial.py`` (every case as a process, the
kill trial, and the closing counts per family).
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    family: str = "malformed input"
    # "untouched": no file of the tree or of the scratch folder changes; "applied": the tree is
    # exactly a clean apply's (REFERENCE_ARGS), and nothing says "nothing written"
    outcome: str = "untouched"
    never: tuple[str, ...] = ()  # what the output must not say
    stdout: str = "pipe"  # "pipe" (read), "full" (/dev/full) or "closed"
    stderr: str = "pipe"
    fsize: int | None = None  # RLIMIT_FSIZE of the process, in bytes
    cwd: str = ""  # the working folder, under the scratch folder
    paragraph: bool = True  # a refusal is one paragraph (False: check's list of findings)
    # outcome "fixed" (check --fix): the tree files that may change (some must); the scratch
    # files the run may write (a --baseline it records)
    changes: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    @property
    def needs_process(self) -> bool:
        """Redirected streams and resource limits cannot be had in-process."""
        return self.stdout != "pipe" or self.stderr != "pipe" or self.fsize is not None


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
    Case("spec with --expr ''", _spec("name: heaviside\nkind: binary\nexpr: a + b\n", "--expr", ""), 2, ("--expr", "empty")),
    Case("spec expr a // b", _spec("name: heaviside\nkind: binary\nexpr: a // b\n"), 2, ("heaviside.yaml:3", "comment")),
    Case(
        "spec integer with --int2float",
        _spec("name: heaviside\nkind: binary\ndtypes: [integer]\nexpr: a + b\n", "--int2float"),
        2,
        ("--int2float contradicts", "heaviside.yaml", "dtypes float, integer"),
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


# -- issue 21's families --------------------------------------------------------------------
# an ESC sequence that sets a terminal's title, and a BEL: printed raw they act on the terminal
ESC = "\x1b]0;pwned\x07"
SHOWN = "\\x1b]0;pwned\\x07"  # as mpsgen must print it
NEW_OP_PR = (*NEW_OP, "--pr-description")
REFERENCE_ARGS = NEW_OP  # the clean apply an "applied" case's tree must equal


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:  # the practice tree changed: the case must be rewritten, not pass emptily
        raise AssertionError(f"{path}: no {old!r} to replace")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _check(*args: str) -> Callable[[Path, Path], list[str]]:
    return lambda root, tmp: ["check", "--root", str(root), *args]


def _then(setup: Callable[[Path, Path], None], args: Callable[[Path, Path], list[str]]) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        setup(root, tmp)
        return args(root, tmp)

    return prepare


def _kernel_name(root: Path, tmp: Path) -> None:
    _replace_once(root / BINARY_MM, 'exec_binary_kernel(iter, "fmin")', f'exec_binary_kernel(iter, "fm{ESC}in")')


def _mm_file_name(root: Path, tmp: Path) -> None:
    (root / OPERATIONS_DIR / "Odd\x1b[2J.mm").write_text(
        'static void odd_kernel(TensorIteratorBase& iter) {\n  lib.exec_unary_kernel(iter, "no_such_kernel");\n}\n'
    )


def _register_argument(root: Path, tmp: Path) -> None:
    metal = root / BINARY_METAL
    metal.write_text(metal.read_text() + f"\nREGISTER_BINARY_OP(fm{ESC}in, float, float);\n")


def _list_entry(fmt: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        listing = tmp / "paths.txt"
        listing.write_text(f"{root / OPERATIONS_DIR}/No{ESC}.mm\n")
        return ["check", f"@{listing}", "--format", fmt, "--root", str(root)]

    return prepare


def _spec_files_metal(root: Path, tmp: Path) -> list[str]:
    spec = tmp / "heaviside.yaml"
    # YAML's own escapes (\e, \a): the spec's bytes are clean, the value is not
    spec.write_text(f'name: heaviside\nkind: binary\nexpr: a + b\nfiles: {{metal: "{KERNELS_DIR}/B\\e]0;pwned\\a.metal"}}\n')
    return ["new-op", "heaviside", "--spec", str(spec), "--dry-run", "--root", str(root)]


def _typed(*args: str) -> Callable[[Path, Path], list[str]]:
    """Arguments where ``{bad}`` is a path holding ESC and BEL (in the scratch folder, missing)
    and ``{root}`` the tree."""

    def prepare(root: Path, tmp: Path) -> list[str]:
        bad = str(tmp / f"no{ESC}where")
        return [a.format(bad=bad, root=root) for a in args]

    return prepare


def _escapes() -> list[Case]:
    fam = "escapes"
    out = []
    for fmt in ("text", "github"):
        finding = "::error file=" if fmt == "github" else "error:"
        out += [
            Case(f"ESC in a .mm kernel name, check {fmt}", _then(_kernel_name, _check("--format", fmt)), 1, ("MPS003", finding, SHOWN), fam, paragraph=False),
            Case(f"ESC in a .mm file name, check {fmt}", _then(_mm_file_name, _check("--format", fmt)), 1, ("Odd\\x1b[2J.mm", finding), fam, paragraph=False),
            Case(f"ESC in a REGISTER_* argument, check {fmt}", _then(_register_argument, _check("--format", fmt)), 1, ("MPS004", finding, SHOWN), fam, paragraph=False),
            Case(f"ESC in a check @list entry, check {fmt}", _list_entry(fmt), 2, (SHOWN, "no such file"), fam),
        ]
    out += [
        Case("ESC in a spec's files.metal", _spec_files_metal, 2, ("B" + SHOWN + ".metal", "does not exist"), fam),
        Case("ESC in --root", _typed(*NEW_OP, "--root", "{bad}"), 2, ("--root", SHOWN, "no such directory"), fam),
        Case("ESC in check --root", _typed("check", "--root", "{bad}"), 2, (SHOWN,), fam),
        Case("ESC in --spec", _typed("new-op", "heaviside", "--spec", "{bad}", "--root", "{root}"), 2, (SHOWN, "not found"), fam),
        Case("ESC in --patch", _typed(*NEW_OP, "--patch", "{bad}/x.patch", "--root", "{root}"), 2, ("--patch", SHOWN), fam),
        Case("ESC in --functor-file", _typed(*NEW_OP, "--functor-file", "{bad}", "--root", "{root}"), 2, ("--functor-file", SHOWN), fam),
        Case("ESC in check PATH", _typed("check", "{bad}", "--root", "{root}"), 2, (SHOWN,), fam),
        Case("ESC in check --baseline", _typed("check", "--baseline", "{bad}/b.json", "--root", "{root}"), 2, (SHOWN,), fam),
        Case("ESC in demo --op", _typed("demo", "--op", f"x{ESC}"), 2, ("--op", SHOWN), fam),
        Case("ESC in try OP", _typed("try", f"x{ESC}"), 2, (SHOWN,), fam),
        Case("ESC in try PATH", _typed("try", "{bad}"), 2, (SHOWN,), fam),
        Case("ESC in spec validate PATH", _typed("spec", "validate", "{bad}"), 2, (SHOWN,), fam),
        Case("ESC in explain OP", _typed("explain", f"x{ESC}", "--root", "{root}"), 2, ("pwned", "not a C identifier"), fam),
    ]
    return out


def _config(where: str, value: str) -> Callable[[Path, Path], list[str]]:
    """A tree whose config names a baseline outside it (folders made, so that a write would
    succeed if mpsgen tried one)."""

    def prepare(root: Path, tmp: Path) -> list[str]:
        (tmp / "elsewhere").mkdir(exist_ok=True)
        (tmp / "outside").mkdir(exist_ok=True)
        (root / "link-out").symlink_to(tmp / "outside", target_is_directory=True)
        line = f'baseline = "{value.format(tmp=tmp)}"\n'
        if where == ".mpsgen.toml":
            (root / where).write_text('select = ["MPS"]\n' + line)
        else:
            (root / where).write_text('[project]\nname = "torch"\n\n[tool.mpsgen]\n' + line)
        return ["check", "--root", str(root)]

    return prepare


def _configs() -> list[Case]:
    out = []
    for where, line in ((".mpsgen.toml", 2), ("pyproject.toml", 5)):
        for value in ("{tmp}/elsewhere/x.json", "../outside/x.json", "link-out/x.json"):
            shown = "absolute" if value.startswith("{tmp}") else value
            out.append(Case(f"{where} baseline = {shown}", _config(where, value), 2, (f"{where}:{line}", "leads outside the tree"), "config"))
    return out


_READ_ONLY: list[Path] = []


class Unavailable(Exception):
    """The system cannot give what the case needs (e.g. a folder root cannot write in)."""


def _read_only_cwd(root: Path, tmp: Path) -> list[str]:
    folder = tmp / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    _READ_ONLY.append(folder)
    if os.geteuid() == 0:  # root writes through modes: the immutable attribute stops it
        subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
    try:
        (folder / ".probe").touch()
    except OSError:
        return [*NEW_OP, "--with-test", "--root", str(root)]
    (folder / ".probe").unlink()
    raise Unavailable("no folder this user cannot write in (chattr +i refused)")


def undo(root: Path, tmp: Path) -> None:
    """Undo what a case made that ``shutil.rmtree`` cannot remove (deep folders, read-only ones)."""
    undo_deep_folders(root)
    while _READ_ONLY:
        folder = _READ_ONLY.pop()
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], capture_output=True)
        folder.chmod(0o755)


def _outcomes() -> list[Case]:
    fam, applied = "outcome", "the change is applied"
    return [
        Case("--pr-description, stdout on /dev/full", _args(*NEW_OP_PR), 3, (applied, "printing the PR description failed", "No space left"), fam, "applied", stdout="full"),
        Case("--pr-description, stdout closed", _args(*NEW_OP_PR), 3, (applied, "standard output is closed"), fam, "applied", stdout="closed"),
        Case("--pr-description, stderr on /dev/full", _args(*NEW_OP_PR), 3, (), fam, "applied", stderr="full"),
        Case("--pr-description, stderr closed", _args(*NEW_OP_PR), 3, (), fam, "applied", stderr="closed"),
        # the side files belong to the change: written first, so nothing is written at all
        Case("--with-test into a read-only folder", _read_only_cwd, 2, ("cannot write", "test_heaviside_shader.py", "nothing written"), fam, cwd="ro"),
    ]


def _side_files() -> list[Case]:
    # new-op's compile gate writes a 14 KB shim to a scratch folder unless its answer for the
    # functor is cached: the reference apply (same functor) caches it, so the --patch case
    # reaches the patch; coverage's many functors may not all be cached, and a gate that cannot
    # write fails first, with a message naming no file (the words allow both)
    fam, too_large = "side files", "File too large"
    return [
        Case(
            "--patch NEW under a 1 KB RLIMIT_FSIZE", lambda root, tmp: [*NEW_OP, "--patch", str(tmp / "new.patch"), "--root", str(root)],
            2, ("--patch", too_large), fam, fsize=1024,
        ),
        Case(
            "check --baseline NEW under a 100-byte RLIMIT_FSIZE", lambda root, tmp: ["check", "--baseline", str(tmp / "new.json"), "--root", str(root)],
            2, (too_large, "nothing written"), fam, fsize=100,
        ),
        Case(
            "coverage -o NEW under a 1 KB RLIMIT_FSIZE", lambda root, tmp: ["coverage", "-o", str(tmp / "cov.json"), "--root", str(root)],
            2, (too_large, "nothing written"), fam, fsize=1024,
        ),
    ]


def _xfail_form(form: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        anchor = "        UNIMPLEMENTED_XFAILLIST_SPARSE"
        _replace_once(root / COMMON_MPS, anchor, form + anchor)
        return [*NEW_OP, "--root", str(root)]

    return prepare


def _duplicated_func(root: Path, tmp: Path) -> list[str]:
    path = root / NATIVE_FUNCTIONS
    text = path.read_text()
    start = text.index("- func: heaviside.out(")
    end = text.index("\n\n", start) + 2
    path.write_text(text[:end] + text[start:end] + text[end:])
    return [*NEW_OP, "--root", str(root)]


def _repeated_key(root: Path, tmp: Path) -> list[str]:
    import re

    path = root / NATIVE_FUNCTIONS
    text, n = re.subn(r"^(    [A-Za-z0-9_, ]*\bCPU\b[A-Za-z0-9_, ]*): heaviside_out$", r"\1, MPS, MPS: heaviside_out", path.read_text(), count=1, flags=re.M)
    assert n == 1
    path.write_text(text)
    return ["check", "--root", str(root)]


def _kernel_file(text: str) -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        (root / BINARY_METAL).write_text(text)
        return [*NEW_OP, "--root", str(root)]

    return prepare


def _partial_edits() -> list[Case]:
    fam, not_edited = "partial edits", "in a form mpsgen does not edit"
    twice = ("MPS, MPS",)
    spec = (
        'name: heaviside\nkind: binary\ndtypes: [integer]\nexpr: "a == 0 ? b : static_cast<decltype(a)>(a > 0)"\n'
        "rows: [heaviside.out, heaviside.out]\n"
    )
    return [
        Case(
            "xfail by subscript assignment", _xfail_form('        UNIMPLEMENTED_XFAILLIST["heaviside"] = None\n'),
            1, (f"{COMMON_MPS}:", '`UNIMPLEMENTED_XFAILLIST["heaviside"] = None`', not_edited), fam,
        ),
        Case(
            "xfail in a dict() grown by .update",
            _xfail_form('        EXTRA = dict()\n        EXTRA.update({"heaviside": None})\n        UNIMPLEMENTED_XFAILLIST.update(EXTRA)\n'),
            1, (f"{COMMON_MPS}:", '`EXTRA.update({"heaviside": None})`', not_edited), fam,
        ),
        Case("xfail as dict(heaviside=None) in .update", _xfail_form("        UNIMPLEMENTED_XFAILLIST.update(dict(heaviside=None))\n"), 1, (f"{COMMON_MPS}:", not_edited), fam),
        Case("--row named twice", _args(*NEW_OP, "--row", "heaviside.out", "--row", "heaviside.out", "--dry-run"), 0, ("MPS: heaviside_out", "dry run"), fam, never=twice),
        Case("spec naming a row twice", _spec(spec, "--dry-run"), 0, ("MPS: heaviside_out", "dry run"), fam, never=twice),
        Case("empty BinaryKernel.metal", _kernel_file(""), 1, ("BinaryKernel.metal has no", "#include"), fam),
        Case("BinaryKernel.metal without anchors", _kernel_file("// kernels go here\nconstant int unused = 0;\n"), 1, ("BinaryKernel.metal has no", "#include"), fam),
        Case("duplicated - func: heaviside.out", _duplicated_func, 2, ("native_functions.yaml:", "`- func: heaviside.out` is there twice", "lines "), fam),
        Case("dispatch line naming MPS twice, check", _repeated_key, 1, ("MPS015",), fam, paragraph=False),
    ]


def _kernel_spec(text: str, *extra: str, op: str = "_pdist_forward") -> Callable[[Path, Path], list[str]]:
    def prepare(root: Path, tmp: Path) -> list[str]:
        spec = tmp / "kernel.yaml"
        spec.write_text(text)
        return ["new-kernel", op, "--spec", str(spec), *extra, "--root", str(root)]

    return prepare


def _new_kernel() -> list[Case]:
    """new-kernel's inputs: kernel specs, flags, and a tree the op does not fit."""
    body = "kind: kernel\nfile: Distance\noutput: {like: self}\nbody: |\n"
    family = "new-kernel"
    return [
        Case("kernel spec with a NUL", _kernel_spec("name: _pdist\x00forward\n" + body + "  return 0;\n"), 2, ("kernel.yaml:1", "U+0000"), family),
        Case("kernel spec nested 5,000 deep", _kernel_spec("name: " + "[" * 5000 + "]" * 5000 + "\n"), 2, ("nested too deeply",), family),
        Case("kernel body with double", _kernel_spec("name: _pdist_forward\n" + body + "  double x = 0;\n  return x;\n"), 2, ("kernel.yaml:6", "double"), family),
        Case("kernel body with a tab", _kernel_spec("name: _pdist_forward\n" + body + "  return\t0;\n"), 2, ("kernel.yaml:6", "tab"), family),
        Case("kernel body with a barrier", _kernel_spec("name: _pdist_forward\n" + body + "  threadgroup_barrier(mem_flags::mem_none);\n  return 0;\n"), 2, ("threadgroup_barrier", "by hand"), family),
        Case("kernel body that does not compile", _kernel_spec("name: _pdist_forward\n" + body + "  return missing_name;\n"), 1, ("kernel.yaml:6", "does not compile"), family),
        Case("kernel spec of an op the yaml lacks", _kernel_spec("name: no_such_op\n" + body + "  return 0;\n", op="no_such_op"), 2, ("no op 'no_such_op'",), family),
        Case("kernel spec of an op on MPS", _kernel_spec("name: _cdist_backward\n" + body + "  return 0;\n", op="_cdist_backward"), 1, ("already dispatches MPS",), family),
        Case("kernel --file with a path", _args("new-kernel", "_pdist_forward", "--file", "../Evil"), 2, ("--file '../Evil'",), family),
        Case("kernel --dtypes unknown", _args("new-kernel", "_pdist_forward", "--dtypes", "float,double"), 2, ("--dtypes", "float, half, bfloat"), family),
        Case("kernel op name with a space", _args("new-kernel", "pdist forward"), 2, ("OP",), family),
    ]


BINARY_OPS_MM = f"{OPERATIONS_DIR}/BinaryOps.mm"


def _stale_xfail(*args: str) -> Callable[[Path, Path], list[str]]:
    """A stale xfail (hypot has a Metal kernel) for `check --fix` to remove; the practice tree's
    BinaryOps.mm has a dead MPSGraph function (MPS007) it removes too."""

    def prepare(root: Path, tmp: Path) -> list[str]:
        path = root / COMMON_MPS
        text = path.read_text()
        anchor = text.index('UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {\n') + len('UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {\n')
        path.write_text(text[:anchor] + '            "hypot": None,\n' + text[anchor:])
        return [*(a.replace("TMP", str(tmp)) for a in args), "--root", str(root)]

    return prepare


def _check_output() -> list[Case]:
    """`check` when its output fails: after --fix or --baseline wrote, exit 3 saying what is
    written (never "nothing written", never a traceback); before anything is written, exit 2
    "nothing written", as new-op and migrate."""
    fam, fixed, fixes = "check output", "the fixes are applied", (BINARY_OPS_MM, COMMON_MPS)
    full, closed = ("writing to standard output failed", "No space left on device"), ("standard output is closed",)
    cases = [
        Case("check --fix, stdout on /dev/full", _stale_xfail("check", "--fix"), 3, (fixed, *full), fam, "fixed", stdout="full", changes=fixes),
        Case("check --fix, stdout closed", _stale_xfail("check", "--fix"), 3, (fixed, *closed), fam, "fixed", stdout="closed", changes=fixes),
        Case("check --fix, stderr on /dev/full", _stale_xfail("check", "--fix"), 3, (), fam, "fixed", stderr="full", changes=fixes),
        Case("check --fix, stderr closed", _stale_xfail("check", "--fix"), 3, (), fam, "fixed", stderr="closed", changes=fixes),
        Case("check --fix --format json, stdout closed", _stale_xfail("check", "--fix", "--format", "json"), 3, (fixed, *closed), fam, "fixed", stdout="closed", changes=fixes),
        Case("check --fix --diff, stdout on /dev/full", _stale_xfail("check", "--fix", "--diff"), 2, (*full, "nothing written"), fam, stdout="full"),
    ]
    for stream in ("full", "closed"):
        cases.append(Case(
            f"check --baseline NEW, stderr {stream}", _stale_xfail("check", "--baseline", "TMP/new.json"), 3, (), fam,
            never=("nothing written",), stderr=stream, writes=("new.json",),
        ))
    for fmt, stream in (("text", "full"), ("json", "closed"), ("lintrunner", "closed"), ("github", "full")):
        cases.append(Case(
            f"check --format {fmt}, stdout {stream}", _stale_xfail("check", "--format", fmt), 2,
            (*(full if stream == "full" else closed), "nothing written"), fam, stdout=stream,
        ))
    return cases


def _blank_values() -> list[Case]:
    """One rule for an empty or white-space value of any option: refused, never taken as the
    option left out (`--kind ''` once wrote the change)."""
    said = "the value is empty or only white space"
    cases = []
    for args, flag in [
        ((*NEW_OP, "--kind", ""), "--kind"), ((*NEW_OP, "--kind", " "), "--kind"), (("new-op", "heaviside", "--kind", ""), "--kind"),
        ((*NEW_OP, "--stub", ""), "--stub"), ((*NEW_OP, "--row", "heaviside.out", "--row", "\t"), "--row"),
        ((*NEW_OP, "--expr", " "), "--expr"), ((*NEW_OP, "--functor-file", ""), "--functor-file"), ((*NEW_OP, "--patch", ""), "--patch"),
        (("migrate-from-mpsgraph", "acosh", "--stub", ""), "--stub"), (("new-kernel", "_pdist_forward", "--file", ""), "--file"),
        (("new-kernel", "_pdist_forward", "--dtypes", " "), "--dtypes"), (("coverage", "-o", ""), "--output"),
        (("explain", "acosh", "--format", ""), "--format"), (("check", "--select", ""), "--select"), (("check", "--baseline", " "), "--baseline"),
        (("check", "--since", ""), "--since"),
    ]:
        shown = " ".join(a if a.strip() else repr(a) for a in args)
        cases.append(Case(f"blank value: {shown}", _args(*args), 2, (f"{flag} {args[-1]!r}", said)))
    for command in (NEW_OP, ("check",), ("recover",)):  # --root last: the value taken
        cases.append(Case(f"blank value: {command[0]} --root ''", lambda root, tmp, c=command: [*c, "--root", ""], 2, ("--root ''", said)))
    return cases


CASES += _escapes() + _configs() + _outcomes() + _side_files() + _partial_edits() + _new_kernel() + _blank_values() + _check_output()
TRIALS = ("kill", "runaway compile", "concurrent writer", "signal timing")  # families run as trials, not cases
FAMILIES = tuple(dict.fromkeys(c.family for c in CASES)) + TRIALS


def tree_state(root: Path) -> dict[str, bytes]:
    """Every file of the tree (bounded walk: a case may nest folders absurdly deep)."""
    from mpsgen.tree.walk import walk_files

    return {rel: Path(e.path).read_bytes() for rel, e in walk_files(str(root), "", None) if ".git" not in rel.split("/")}


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


# -- running and judging a case -------------------------------------------------------------
RAW_CONTROLS = frozenset([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F])  # newline and tab are text
ENV = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE", "PY_COLORS")}
# counts that must stay 0 (the others say how the tries ended)
MUST_BE_ZERO = (
    "wrong exit or message", "tracebacks", "unintended writes", "temp files left", "half-applied",
    "raw control characters printed", "half states unreported", "half-applied after recovery",
    "compiler processes left", "live write called interrupted", "recover acted on a live write", "first writer not complete",
    "silent or wrong exit", "message contradicts the tree", "side file contradicts the tree",
)


def raw_controls(data: bytes) -> int:
    """Bytes a terminal would act on: below 0x20 but newline and tab, and DEL."""
    return sum(b in RAW_CONTROLS for b in data)


def is_temp(rel: str) -> bool:
    """mpsgen's staged, kept and journal files (``.<name>.*.mpsgen``, ``*.mpsgen-old``, the journal)."""
    name = rel.rsplit("/", 1)[-1]
    return name.endswith((".mpsgen", ".mpsgen-old", "mpsgen-journal.json"))


def scratch_state(tmp: Path, root: Path) -> dict[str, bytes]:
    """Every file of the scratch folder outside the tree: where a write that escapes the tree lands."""
    out: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(tmp):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) != str(root)]
        for f in files:
            path = os.path.join(folder, f)
            try:
                out[os.path.relpath(path, tmp)] = Path(path).read_bytes()
            except OSError:
                out[os.path.relpath(path, tmp)] = b"<unreadable>"
    return out


@dataclass(frozen=True)
class Ran:
    code: int
    out: bytes  # what could be read of stdout and stderr (nothing of a full or closed one)
    err: bytes

    @property
    def text(self) -> str:
        return (self.out + self.err).decode("utf-8", "replace")


def run_process(case: Case, args: list[str], tmp: Path, timeout: float = 300) -> Ran:
    """``python -m mpsgen ARGS`` with the case's streams, limit and working folder."""
    import resource
    import sys

    def preexec() -> None:
        if case.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))
        if case.stdout == "closed":
            os.close(1)
        if case.stderr == "closed":
            os.close(2)

    with open(os.devnull, "wb") as null, open("/dev/full", "wb") as full:
        pick = {"pipe": subprocess.PIPE, "full": full, "closed": null}
        proc = subprocess.run(
            [sys.executable, "-m", "mpsgen", *args], stdout=pick[case.stdout], stderr=pick[case.stderr],
            stdin=subprocess.DEVNULL, cwd=tmp / case.cwd, env=ENV, preexec_fn=preexec, timeout=timeout,
        )
    return Ran(proc.returncode, proc.stdout or b"", proc.stderr or b"")


def judge(
    case: Case, ran: Ran, *, before: dict[str, bytes], after: dict[str, bytes], reference: dict[str, bytes] | None,
    scratch_before: dict[str, bytes], scratch_after: dict[str, bytes],
) -> tuple[dict[str, int], list[str]]:
    """The counts one try adds, and what went wrong (empty: as expected)."""
    counts = dict.fromkeys(("tries",), 1)
    problems: list[str] = []

    def count(key: str, why: str) -> None:
        counts[key] = counts.get(key, 0) + 1
        problems.append(why)

    text = ran.text
    if "Traceback" in text:
        count("tracebacks", "a traceback")
    raw = raw_controls(ran.out + ran.err)
    if raw:
        counts["raw control characters printed"] = raw
        problems.append(f"{raw} raw control character(s) printed")
    wrong = []
    if ran.code != case.exit_code:
        wrong.append(f"exit {ran.code}, not {case.exit_code}")
    wrong += [f"does not say {w!r}" for w in case.words if w not in text]
    never = case.never + (("nothing written", "nothing was written") if case.outcome in ("applied", "fixed") else ())
    wrong += [f"says {w!r}" for w in never if w in text]
    visible = case.stdout == "pipe" and case.stderr == "pipe"
    if case.exit_code and case.paragraph and case.outcome == "untouched" and visible and len(text.strip().splitlines()) > 3:
        wrong.append("not one paragraph")
    if wrong:
        count("wrong exit or message", "; ".join(wrong))
    temps = [k for k in after if is_temp(k)] + [k for k in scratch_after if is_temp(k)]
    if temps:
        count("temp files left", f"temporary files left: {temps}")
    now = {k: v for k, v in after.items() if not is_temp(k)}
    if case.outcome == "fixed":
        changed = _changed(before, after)
        if not changed:
            count("wrong exit or message", "said fixed, but the tree is untouched")
        elif set(changed) - set(case.changes):
            count("unintended writes", f"tree files changed beyond the fix's: {sorted(set(changed) - set(case.changes))}")
    elif case.outcome == "applied":
        if now != reference:
            if now == before:
                count("wrong exit or message", "said applied, but the tree is untouched")
            else:
                count("half-applied", f"the tree is neither untouched nor the clean apply's: {_changed(reference or {}, now)}")
    else:
        changed = _changed(before, after)
        if changed:
            count("unintended writes", f"tree files changed: {changed}")
            if ran.code:  # a refused run that changed some of the files it would edit
                counts["half-applied"] = counts.get("half-applied", 0) + 1
    outside = [k for k in _changed(scratch_before, scratch_after) if k not in case.writes]
    if outside:
        count("unintended writes", f"files written outside the tree: {outside}")
    if not problems:
        key = "applied and said so" if case.outcome in ("applied", "fixed") else "clean errors" if case.exit_code else "expected successes"
        counts[key] = 1
    return counts, problems


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    return sorted({k for k in after if before.get(k) != after[k]} | {k for k in before if k not in after})


# -- the kill family --------------------------------------------------------------------------
def reference_apply(base: Path, work: Path) -> tuple[dict[str, bytes], float]:
    """The tree after a clean ``new-op heaviside --binary --integer`` (as a process), and how
    long that run took."""
    import shutil
    import sys
    import time

    root = work / "reference" / "pytorch"
    shutil.copytree(base, root)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "mpsgen", *REFERENCE_ARGS, "--root", str(root)], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, env=ENV, timeout=300,
    )
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    state = tree_state(root)
    shutil.rmtree(root.parent)
    return state, seconds


KILL_COUNTS = (
    "tries", "half states seen", "killed while staging", "killed mid-renames", "killed after the renames", "half states reported",
    "half states unreported", "recovered with --resume", "recovered with --abort",
    "recover --resume refused, the other asked", "recover --abort refused, the other asked",
    "ended untouched", "ended applied", "half-applied after recovery", "temp files left", "tracebacks",
    "raw control characters printed",
)


def kill_trial(base: Path, work: Path, *, runs: int, seed: int, reference: dict[str, bytes], runtime: float) -> tuple[dict[str, int], list[str]]:
    """SIGKILL ``mpsgen new-op`` on a fresh copy of ``base``, ``runs`` times, in turn: a moment
    (0-12 ms: the journal lives ~10 ms) after its journal appears; as soon as its first rename
    replaces a file (the renames take well under a millisecond: most such kills land after the
    last one, before the journal is removed); at a random moment of its run. A journal left is
    a half state: plain ``check`` must report it (MPS016) and the next new-op refuse naming the
    recovery; ``recover --resume`` / ``--abort`` (taking turns after each kind of kill; the
    other when the first cannot: nothing staged to finish with) must end with the fully
    applied / untouched tree, no temporary file and no journal. Without a journal the tree
    must be untouched or fully applied already."""
    import random
    import shutil
    import signal
    import sys
    import time

    from mpsgen.patch.journal import Journal
    from mpsgen.tree import journal_path

    rng = random.Random(seed)
    before = tree_state(base)
    targets = _changed(before, reference)
    counts = dict.fromkeys(KILL_COUNTS, 0)
    failures: list[str] = []

    def mpsgen(root: Path, *args: str) -> subprocess.CompletedProcess:
        proc = run_mpsgen(root, *args)
        seen(proc.stdout + proc.stderr)
        return proc

    def seen(data: bytes) -> None:
        counts["raw control characters printed"] += raw_controls(data)
        counts["tracebacks"] += b"Traceback" in data

    for i in range(runs):
        folder = work / f"kill{i}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        root = folder / "pytorch"
        shutil.copytree(base, root)
        journal = Path(journal_path(root))
        with open(folder / "killed.stderr", "w+b") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "mpsgen", *REFERENCE_ARGS, "--root", str(root)],
                stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL, cwd=folder, env=ENV,
            )
            deadline = time.monotonic() + 300
            if i % 3 == 0:  # while staging or renaming: once its journal is on disk
                while proc.poll() is None and not journal.exists() and time.monotonic() < deadline:
                    time.sleep(0.0002)
                time.sleep(rng.uniform(0, 0.012))
            elif i % 3 == 1:  # among the renames: once a file of the change is replaced
                inodes = {rel: os.stat(root / rel).st_ino for rel in targets}
                while proc.poll() is None and time.monotonic() < deadline and all(
                    _inode(root / rel) == ino for rel, ino in inodes.items()
                ):
                    time.sleep(0.0002)
            else:
                time.sleep(rng.uniform(0, runtime * 1.1))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=300)
            log.seek(0)
            seen(log.read())
        counts["tries"] += 1
        what = f"kill {i}"
        ending = None
        if journal.exists():
            counts["half states seen"] += 1
            written = [s.state for s in Journal.find(root).states()].count("written")
            counts[
                "killed while staging" if not written else "killed after the renames" if written == len(targets) else "killed mid-renames"
            ] += 1
            check = mpsgen(root, "check")
            again = mpsgen(root, *REFERENCE_ARGS, "--dry-run")
            if check.returncode == 1 and b"MPS016" in check.stdout and again.returncode == 1 and b"mpsgen recover" in again.stderr:
                counts["half states reported"] += 1
            else:
                counts["half states unreported"] += 1
                failures.append(f"{what}: check exit {check.returncode}, new-op exit {again.returncode}: {again.stderr[-300:]!r}")
            ending = "--resume" if (i // 3) % 2 == 0 else "--abort"  # each way after each kind of kill
            rec = mpsgen(root, "recover", ending)
            if rec.returncode != 0 and (b"cannot be finished" in rec.stderr or b"cannot be rolled back" in rec.stderr):
                counts[f"recover {ending} refused, the other asked"] += 1
                ending = "--abort" if ending == "--resume" else "--resume"
                rec = mpsgen(root, "recover", ending)
            if rec.returncode == 0:
                counts[f"recovered with {ending}"] += 1
            else:
                failures.append(f"{what}: recover {ending} exit {rec.returncode}: {rec.stderr[-300:]!r}")
        state = tree_state(root)
        temps = [k for k in state if is_temp(k)] + ([str(journal)] if journal.exists() else [])
        if temps:
            counts["temp files left"] += 1
            failures.append(f"{what}: temporary files left: {temps}")
        now = {k: v for k, v in state.items() if not is_temp(k)}
        wanted = {None: (before, reference), "--resume": (reference,), "--abort": (before,)}[ending]
        if any(now == w for w in wanted):
            counts["ended untouched" if now == before else "ended applied"] += 1
        else:
            counts["half-applied after recovery"] += 1
            failures.append(f"{what}: after {ending or 'the kill'}, changed: {_changed(before, now)}; not as applied: {_changed(reference, now)}")
        shutil.rmtree(folder, ignore_errors=True)
    return counts, failures


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


# -- processes below a process ----------------------------------------------------------------
def proc_stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, command name) of a process, None once gone (Linux /proc)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return int(fields[1]), fields[0], raw[raw.index("(") + 1 : raw.rindex(")")]


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid`` now (pid -> command name)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := proc_stat(int(entry))) is not None:
            parents[int(entry)] = (st[0], st[2])
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        for c, (ppid, name) in parents.items():
            if ppid == p and c not in found:
                found[c] = name
                todo.append(c)
    return found


def still_running(pids) -> list[str]:
    """Those of ``pids`` still running (a zombie has ended)."""
    return [f"{p} {st[2]}" for p in pids if (st := proc_stat(p)) is not None and st[1] not in ("Z", "X")]


def run_mpsgen(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m mpsgen ARGS --root ROOT`` to its end, its output captured (the trials' way)."""
    return subprocess.run(
        [sys.executable, "-m", "mpsgen", *args, "--root", str(root)], capture_output=True, stdin=subprocess.DEVNULL,
        cwd=root.parent, env=ENV, timeout=300,
    )


class Watch:
    """Every process seen below ``pid`` while the watch lasts (sampled every 20 ms)."""

    def __init__(self, pid: int):
        import threading

        self.pid, self.seen, self._stop = pid, {}, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import time

        while not self._stop.is_set():
            self.seen.update(descendants(self.pid))
            time.sleep(0.02)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def handlers_installed(pid: int) -> bool:
    """Whether the process catches SIGTERM yet (mpsgen's code runs: the interpreter's start-up is over)."""
    import signal

    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    except OSError:
        pass
    return False


# -- the runaway compile family ---------------------------------------------------------------
# a compile that cannot finish in any time a trial waits, in little memory: a constant evaluated
# at compile time by 10^10 loop steps (g++ gives up only after 2^33 operations, minutes later);
# cc1plus holds ~130 MB meanwhile
SPIN = (
    "static constexpr long spin() { long s = 0; for (long i = 0; i < 100000; ++i) for (long j = 0; j < 100000; ++j) "
    "s += j ^ i; return s; }\n"
)
RUNAWAY_FUNCTOR = SPIN + "template <typename T> T operator()(T a, T b) { constexpr long v = spin(); return a + T(v & 1); }\n"
RUNAWAY_COUNTS = (
    "tries", "stopped by SIGTERM", "stopped by SIGINT", "stopped by SIGHUP", "stopped by the time limit", "remembered on retry",
    "refused as too large", "compiler processes left", "wrong exit or message", "tracebacks", "unintended writes",
)
_SHORT_LIMIT = (  # the gate's time limit made 2 s (the product's is 60 s), then mpsgen's entry point
    "import sys\nimport mpsgen.shim.toolchain as toolchain\ntoolchain.COMPILE_TIME_LIMIT = 2.0\nsys.argv[0] = 'mpsgen'\n"
    "from mpsgen.__main__ import main\nmain()\n"
)


def runaway_trial(base: Path, work: Path, *, runs: int) -> tuple[dict[str, int], list[str]]:
    """A functor whose compile cannot finish, given to `new-op` (each run on a fresh tree and
    cache), ended in turn by SIGTERM, SIGINT and SIGHUP of mpsgen once cc1plus runs (exit 130,
    "nothing written"), by the gate's time limit (2 s here: exit 1 naming it; the same command
    again says at once that it is remembered and starts no compiler), and a 100 KB --expr
    (refused before any compiler starts). After each, no process mpsgen started is running."""
    import shutil
    import signal
    import sys
    import time

    counts = dict.fromkeys(RUNAWAY_COUNTS, 0)
    failures: list[str] = []
    kinds = ("SIGTERM", "SIGINT", "SIGHUP", "time limit", "too large")
    for i in range(runs):
        kind = kinds[i % len(kinds)]
        folder = work / f"runaway{i}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        root = folder / "pytorch"
        shutil.copytree(base, root)
        (folder / "spin.h").write_text(RUNAWAY_FUNCTOR)
        env = {**ENV, "XDG_CACHE_HOME": str(folder / "cache")}
        before = tree_state(root)
        functor = ["--functor-file", str(folder / "spin.h")] if kind != "too large" else ["--expr", "a" + " + a" * 25_000]
        argv = [*NEW_OP, *functor, "--root", str(root)]
        what = f"runaway {i} ({kind})"

        def start(argv=argv, env=env, folder=folder, kind=kind) -> subprocess.Popen:
            head = [sys.executable, "-c", _SHORT_LIMIT] if kind == "time limit" else [sys.executable, "-m", "mpsgen"]
            return subprocess.Popen([*head, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=folder)

        def ended(proc: subprocess.Popen, watch: Watch) -> tuple[int, str]:
            out, err = proc.communicate(timeout=300)
            text = (out + err).decode("utf-8", "replace")
            counts["tracebacks"] += "Traceback" in text
            time.sleep(0.3)
            left = still_running(watch.seen)
            if left:
                counts["compiler processes left"] += 1
                failures.append(f"{what}: left running: {left}")
                for entry in left:  # (the trial's own: end them)
                    try:
                        os.kill(int(entry.split()[0]), signal.SIGKILL)
                    except OSError:
                        pass
            return proc.returncode, text

        counts["tries"] += 1
        proc = start()
        with Watch(proc.pid) as watch:
            if kind.startswith("SIG"):
                deadline = time.monotonic() + 300
                while "cc1plus" not in watch.seen.values() and proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(0.2)
                if proc.poll() is None:
                    proc.send_signal(getattr(signal, kind))
            code, text = ended(proc, watch)
        wanted = {
            "SIGTERM": (130, "interrupted; nothing written."), "SIGINT": (130, "interrupted; nothing written."),
            "SIGHUP": (130, "interrupted; nothing written."), "time limit": (1, "did not finish within 2 s"),
            "too large": (2, "over the 32768 bytes (32 KiB) mpsgen compiles"),
        }[kind]
        ok = code == wanted[0] and wanted[1] in text and (kind != "too large" or "cc1plus" not in watch.seen.values())
        if kind == "time limit" and ok:
            t0 = time.monotonic()
            again = start()
            with Watch(again.pid) as watch:
                code, text = ended(again, watch)
            if code == 1 and "an earlier run on this same source" in text and time.monotonic() - t0 < 30 and "cc1plus" not in watch.seen.values():
                counts["remembered on retry"] += 1
            else:
                ok = False
                failures.append(f"{what}: the retry: exit {code}: {text[-300:]!r}")
        if ok:
            counts["stopped by the time limit" if kind == "time limit" else "refused as too large" if kind == "too large" else f"stopped by {kind}"] += 1
        else:
            counts["wrong exit or message"] += 1
            failures.append(f"{what}: exit {code}: {text[-300:]!r}")
        if tree_state(root) != before:
            counts["unintended writes"] += 1
            failures.append(f"{what}: tree files changed: {_changed(before, tree_state(root))}")
        shutil.rmtree(folder, ignore_errors=True)
    return counts, failures


# -- the concurrent writer family -------------------------------------------------------------
WRITER_COUNTS = (
    "tries", "writer paused mid-write", "writer finished before the pause", "recover refused, naming the writer",
    "second writer refused, naming the writer", "check quiet on the live write", "first writer complete",
    "live write called interrupted", "recover acted on a live write", "first writer not complete", "temp files left",
    "tracebacks",
)


def writer_trial(base: Path, work: Path, *, runs: int, reference: dict[str, bytes]) -> tuple[dict[str, int], list[str]]:
    """A `new-op` paused (SIGSTOP) as soon as its journal is on disk, alive and mid-write:
    plain `check` must not report it (MPS016); `recover` (--resume, --abort, none in turn) and
    a second `new-op` wait for it (10 s), then refuse naming its pid and touch nothing. Let go
    (SIGCONT), it must finish whole (exit 0, the clean apply's tree, no journal)."""
    import shutil
    import signal
    import sys
    import time

    from mpsgen.tree import journal_path

    counts = dict.fromkeys(WRITER_COUNTS, 0)
    failures: list[str] = []

    def mpsgen(root: Path, *args: str) -> subprocess.CompletedProcess:
        proc = run_mpsgen(root, *args)
        counts["tracebacks"] += b"Traceback" in proc.stdout + proc.stderr
        return proc

    for i in range(runs):
        folder = work / f"writer{i}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        root = folder / "pytorch"
        shutil.copytree(base, root)
        journal = Path(journal_path(root))
        what = f"writer {i}"
        counts["tries"] += 1
        first = subprocess.Popen(
            [sys.executable, "-m", "mpsgen", *REFERENCE_ARGS, "--root", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, cwd=folder, env=ENV,
        )
        deadline = time.monotonic() + 300
        while first.poll() is None and not journal.exists() and time.monotonic() < deadline:
            time.sleep(0.0002)
        first.send_signal(signal.SIGSTOP)
        try:
            if not journal.exists():
                counts["writer finished before the pause"] += 1
            else:
                counts["writer paused mid-write"] += 1
                mid = tree_state(root)
                pid = f"pid {first.pid}"
                check = mpsgen(root, "check")
                if b"MPS016" in check.stdout:
                    counts["live write called interrupted"] += 1
                    failures.append(f"{what}: check reported the live write (MPS016)")
                else:
                    counts["check quiet on the live write"] += 1
                ending = ("--resume", "--abort", "")[i % 3]
                rec = mpsgen(root, "recover", *([ending] if ending else []))
                said = rec.stderr.decode("utf-8", "replace")
                if rec.returncode == 1 and pid in said and "not an interrupted one" in said and tree_state(root) == mid:
                    counts["recover refused, naming the writer"] += 1
                else:
                    counts["recover acted on a live write"] += 1
                    failures.append(f"{what}: recover {ending}: exit {rec.returncode}: {said[-300:]!r}")
                again = mpsgen(root, *REFERENCE_ARGS, "--dry-run")
                said = again.stderr.decode("utf-8", "replace")
                if again.returncode == 1 and pid in said and "recover" not in said and "was interrupted" not in said:
                    counts["second writer refused, naming the writer"] += 1
                else:
                    counts["live write called interrupted"] += 1
                    failures.append(f"{what}: second writer: exit {again.returncode}: {said[-300:]!r}")
        finally:
            first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=300)
        counts["tracebacks"] += b"Traceback" in out + err
        state = tree_state(root)
        temps = [k for k in state if is_temp(k)] + ([str(journal)] if journal.exists() else [])
        if temps:
            counts["temp files left"] += 1
            failures.append(f"{what}: temporary files left: {temps}")
        if first.returncode == 0 and {k: v for k, v in state.items() if not is_temp(k)} == reference:
            counts["first writer complete"] += 1
        else:
            counts["first writer not complete"] += 1
            failures.append(f"{what}: the first writer: exit {first.returncode}: {err[-300:]!r}")
        shutil.rmtree(folder, ignore_errors=True)
    return counts, failures


# -- the signal timing family -----------------------------------------------------------------
SIGNAL_COUNTS = (
    "tries", "signalled while staging", "signalled among the renames", "signalled at a random moment", "ended untouched",
    "ended applied", "said so", "silent or wrong exit", "message contradicts the tree", "side file contradicts the tree",
    "half-applied", "temp files left", "tracebacks", "raw control characters printed",
)


def signal_trial(base: Path, work: Path, *, runs: int, seed: int, reference: dict[str, bytes], runtime: float) -> tuple[dict[str, int], list[str]]:
    """SIGINT, SIGTERM and SIGHUP (in turn) to `new-op --with-test` at the edges of its write:
    a moment (0-12 ms) after its journal appears; as soon as its first rename replaces a file
    (most land after the last rename); at a random moment once mpsgen's code runs (its
    handlers are installed). It must exit 0 (done first) or 130 with a message that matches
    the tree: untouched and "nothing written", no --with-test file; or applied, never "nothing
    written", and the --with-test file (part of the change) kept."""
    import random
    import shutil
    import signal
    import sys
    import time

    from mpsgen.tree import journal_path

    rng = random.Random(seed)
    before = tree_state(base)
    targets = _changed(before, reference)
    counts = dict.fromkeys(SIGNAL_COUNTS, 0)
    failures: list[str] = []
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    for i in range(runs):
        folder = work / f"signal{i}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        root = folder / "pytorch"
        shutil.copytree(base, root)
        journal = Path(journal_path(root))
        side = folder / "test_heaviside_shader.py"
        sig = sigs[i % 3]
        what = f"signal {i} ({sig.name})"
        proc = subprocess.Popen(
            [sys.executable, "-m", "mpsgen", *REFERENCE_ARGS, "--with-test", "--root", str(root)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=folder, env=ENV,
        )
        deadline = time.monotonic() + 300
        moment = (i // 3) % 3
        if moment == 0:
            counts["signalled while staging"] += 1
            while proc.poll() is None and not journal.exists() and time.monotonic() < deadline:
                time.sleep(0.0002)
            time.sleep(rng.uniform(0, 0.012))
        elif moment == 1:
            counts["signalled among the renames"] += 1
            inodes = {rel: os.stat(root / rel).st_ino for rel in targets}
            while proc.poll() is None and time.monotonic() < deadline and all(_inode(root / rel) == ino for rel, ino in inodes.items()):
                time.sleep(0.0002)
        else:
            counts["signalled at a random moment"] += 1
            while proc.poll() is None and not handlers_installed(proc.pid) and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, runtime * 1.1))
        if proc.poll() is None:
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=300)
        counts["tries"] += 1
        text = (out + err).decode("utf-8", "replace")
        counts["tracebacks"] += "Traceback" in text
        counts["raw control characters printed"] += raw_controls(out + err)
        state = tree_state(root)
        temps = [k for k in state if is_temp(k)] + ([str(journal)] if journal.exists() else [])
        if temps:
            counts["temp files left"] += 1
            failures.append(f"{what}: temporary files left: {temps}")
        now = {k: v for k, v in state.items() if not is_temp(k)}
        code = proc.returncode
        if code not in (0, 130) or (code == 130 and not err.strip()):
            counts["silent or wrong exit"] += 1
            failures.append(f"{what}: exit {code}: {text[-300:]!r}")
        if now == reference:
            counts["ended applied"] += 1
            if "nothing written" in text or "nothing was written" in text or (code == 130 and "complete" not in text):
                counts["message contradicts the tree"] += 1
                failures.append(f"{what}: applied, but exit {code}: {text[-300:]!r}")
            if not side.is_file():
                counts["side file contradicts the tree"] += 1
                failures.append(f"{what}: applied, but --with-test's file is gone")
        elif now == before:
            counts["ended untouched"] += 1
            if code != 130 or "nothing written" not in text:
                counts["message contradicts the tree"] += 1
                failures.append(f"{what}: untouched, but exit {code}: {text[-300:]!r}")
            if side.exists():
                counts["side file contradicts the tree"] += 1
                failures.append(f"{what}: untouched, but --with-test's file was left")
        else:
            counts["half-applied"] += 1
            failures.append(f"{what}: half-applied: {_changed(before, now)}")
        if not failures or not failures[-1].startswith(what):
            counts["said so"] += 1
        shutil.rmtree(folder, ignore_errors=True)
    return counts, failures

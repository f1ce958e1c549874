"""``mpsgen check --changed``: the findings a change answers for.

A change is the working tree against a base commit (HEAD unless ``--since REF``, or
pre-commit's ``PRE_COMMIT_FROM_REF``, names another), as git tells it: the files it changes
(``git diff --name-status``), the lines it adds or rewrites in each (``git diff -U0``) and the
changed files as they were at the base (``git cat-file --batch``). A change answers for

- every finding on a line it touches (in ``native_functions.yaml``: anywhere in an entry it
  touches), located there or through one of the places the finding names;
- every error the base did not have, wherever it is reported (removing a ``REGISTER_DISPATCH``
  from a ``.mm`` file leaves an unregistered stub, reported at its yaml row).

The base's findings come from a second run of the rules over an index that reads the changed
files' base versions (an :class:`~mpsgen.tree.index.Index` with the base files as its overlay); errors are told apart as the baseline tells them
(:func:`mpsgen.check.baseline.finding_key`), so that lines moving do not make one new.
Nothing here prints.
"""

from __future__ import annotations

import bisect
import gc
import os
import re
import subprocess
import tempfile
from collections import Counter
from typing import NamedTuple

from mpsgen.core import child
from mpsgen.tree.index import Index
from mpsgen.check import RELEVANT, CheckResult, index_findings, resolve_paths
from mpsgen.check.model import ERROR, Finding
from mpsgen.core.errors import BadInput
from mpsgen.tree import NATIVE_FUNCTIONS

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class Change(NamedTuple):
    ref: str  # the base as given (HEAD, a branch, a commit)
    base: str | None  # its commit; None: the repository has no commit yet (everything is new)
    status: dict[str, str]  # tree-relative path -> git's status letter (A, M, D, T)
    hunks: dict[str, list[tuple[int, int]]]  # path -> (first line, count) of the new side; count 0: lines removed after it

    @property
    def files(self) -> frozenset[str]:
        return frozenset(self.status)


def _git(root: str, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        proc = child.run(["git", "-C", root, *args], input=stdin, timeout=120)
    except FileNotFoundError:
        raise BadInput("--changed reads the change from git, which is not installed (or not on PATH).", hint="Install git, or run without --changed.") from None
    except subprocess.TimeoutExpired:
        raise BadInput(f"--changed: `git {args[0]}` did not answer within 2 minutes.") from None
    if proc.returncode != 0:
        why = proc.stderr.decode("utf-8", "replace").strip().split("\n")[0] or f"exit status {proc.returncode}"
        raise BadInput(f"--changed: `git {' '.join(args[:2])}` failed in {root}: {why}.", hint="Run it inside a git checkout of PyTorch, or without --changed.")
    return proc.stdout


def default_ref() -> str:
    """The base a change is read against: pre-commit's ``--from-ref`` (pre-push hooks and
    ``pre-commit run --from-ref A --to-ref B`` set it), else HEAD."""
    return os.environ.get("PRE_COMMIT_FROM_REF") or "HEAD"


def read_change(root: str, ref: str) -> Change:
    """The change of the working tree under ``root`` against ``ref``."""
    _git(root, "rev-parse", "--is-inside-work-tree")  # a clear message outside a checkout
    probe = subprocess.run(["git", "-C", root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], capture_output=True)
    if probe.returncode != 0:
        if ref == "HEAD":  # a repository with no commit yet: every file is new
            return Change(ref, None, {}, {})
        raise BadInput(f"--since {ref}: no such commit in this checkout.", hint="Name a branch, tag or commit (git log shows them).")
    base = probe.stdout.decode().strip()
    common = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--relative")
    listing = _git(root, "diff", *common, "--name-status", "-z", base, "--").decode("utf-8", "surrogateescape").split("\0")
    status = {listing[i + 1]: listing[i][:1] for i in range(0, len(listing) - 1, 2) if listing[i]}
    hunks: dict[str, list[tuple[int, int]]] = {}
    if status:
        diff = _git(root, "diff", *common, "-U0", "--src-prefix=a/", "--dst-prefix=b/", base, "--")
        hunks = parse_hunks(diff.decode("utf-8", "surrogateescape"))
    # files the change adds that git does not track yet (new-kernel's new .metal/.mm/.h):
    # every line of them is the change's
    others = _git(root, "ls-files", "--others", "--exclude-standard", "-z").decode("utf-8", "surrogateescape").split("\0")
    for rel in (p for p in others if p and RELEVANT.search(p) and p not in status):
        try:
            with open(os.path.join(root, rel), "rb") as f:
                count = f.read().count(b"\n") + 1
        except OSError:
            continue
        status[rel] = "A"
        hunks[rel] = [(1, count)]
    return Change(ref, base, status, hunks)


def _unquote(name: str) -> str:
    """A path as git prints it in a diff header (C-quoted when it holds unusual bytes)."""
    if not (len(name) >= 2 and name[0] == '"' and name[-1] == '"'):
        return name
    out = bytearray()
    body, i = name[1:-1], 0
    escapes = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out.append(escapes.get(nxt, ord(nxt)))
            i += 2
            continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_hunks(diff: str) -> dict[str, list[tuple[int, int]]]:
    """path -> the (first line, count) of each hunk's new side, from ``git diff -U0`` output
    (count 0: lines were removed after that line). Hunk bodies are skipped by their counts, so
    a changed line that reads like a header is never taken for one."""
    out: dict[str, list[tuple[int, int]]] = {}
    current: str | None = None
    lines = diff.split("\n")
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        i += 1
        if line.startswith("diff --git "):
            current = None
        elif line.startswith("+++ ") and current is None:
            name = _unquote(line[4:].rstrip("\t"))
            current = name[2:] if name.startswith("b/") else None  # /dev/null: the file is gone
            if current is not None:
                out.setdefault(current, [])
        elif line.startswith("@@ ") and (m := _HUNK.match(line)):
            old = int(m.group(1)) if m.group(1) is not None else 1
            start = int(m.group(2))
            new = int(m.group(3)) if m.group(3) is not None else 1
            if current is not None:
                out[current].append((start, new))
            body = old + new
            while body and i < n:  # the hunk's lines ("\ No newline at end of file" is not counted)
                if not lines[i].startswith("\\"):
                    body -= 1
                i += 1
    return out


def touched_lines(change: Change, rows_starts: list[int], yaml_lines: int) -> dict[str, set[int]]:
    """path -> the lines of the working tree the change adds or rewrites; in
    native_functions.yaml every line of each entry (from its ``- func:`` to the next) that it
    adds to, rewrites or removes lines from."""
    out: dict[str, set[int]] = {}
    for path, hunks in change.hunks.items():
        lines = out.setdefault(path, set())
        for start, count in hunks:
            lines.update(range(start, start + count))
        if path != NATIVE_FUNCTIONS or not rows_starts:
            continue
        entries = set()
        for start, count in hunks:
            for line in range(start, start + count) if count else (start,):
                k = bisect.bisect_right(rows_starts, line) - 1
                if k >= 0:
                    entries.add(k)
        for k in entries:
            end = rows_starts[k + 1] - 1 if k + 1 < len(rows_starts) else yaml_lines
            lines.update(range(rows_starts[k], end + 1))
    return out


def on_touched_lines(f: Finding, touched: dict[str, set[int]]) -> bool:
    lines = touched.get(f.path)
    if lines and f.line in lines:
        return True
    return any(line in touched.get(path, ()) for path, line in f.locations)


def write_base_files(root: str, change: Change, folder: str) -> dict[str, str | None]:
    """The changed files' base versions, written under ``folder``: path -> file (None: the
    file is not in the base). One ``git cat-file --batch`` for all of them."""
    wanted = [rel for rel in sorted(change.status) if "\n" not in rel]
    out: dict[str, str | None] = {rel: None for rel in change.status}
    if not wanted or change.base is None:
        return out
    request = "".join(f"{change.base}:./{rel}\n" for rel in wanted).encode("utf-8", "surrogateescape")
    data = _git(root, "cat-file", "--batch", stdin=request)
    pos = 0
    for rel in wanted:
        eol = data.index(b"\n", pos)
        header = data[pos:eol].decode("utf-8", "surrogateescape")
        pos = eol + 1
        if header.endswith(" missing") or header.endswith(" ambiguous"):
            continue
        _sha, kind, size = header.rsplit(" ", 2)
        body = data[pos : pos + int(size)]
        pos += int(size) + 1
        if kind != "blob":
            continue
        dest = os.path.join(folder, *rel.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as fh:
            fh.write(body)
        out[rel] = dest
    return out


def new_errors(findings: list[Finding], base: list[Finding]) -> list[Finding]:
    """The errors of ``findings`` beyond those of the same kind the base had."""
    from mpsgen.check.baseline import finding_key, new_findings  # (local: a --changed run with no relevant change loads no json)

    return new_findings([f for f in findings if f.severity == ERROR], Counter(finding_key(f) for f in base))


def changed_check(tree, paths, cwd, *, ref: str, codes: frozenset[str] | None, strict: bool):
    """:func:`mpsgen.check.run_check` for the change against ``ref``: the findings it answers
    for (see the module's docstring); PATHS, when given, narrow the touched lines to theirs.
    The result's ``paths`` are the files the change touches (the files a fix may edit)."""
    selected = resolve_paths(tree, paths, cwd)
    root = tree.root_dir
    change = read_change(root, ref)
    if change.base is None:  # nothing to compare with: the whole tree is the change
        findings, notes, hidden = index_findings(Index(tree), codes, strict)
        return CheckResult(root, findings, selected, notes, hidden, f"whole tree: {ref} has no commit yet")
    files = change.files if selected is None else change.files & selected
    label = f"the change against {ref}: {len(files)} file{'s' if len(files) != 1 else ''}"
    if not any(RELEVANT.search(p) for p in change.files):
        return CheckResult(root, [], files, (), 0, label)
    collecting = gc.isenabled()
    gc.disable()  # as run_check does, for the same reason
    try:
        index = Index(tree)
        every: list[Finding] = []  # (an error the change causes is its own even where a partial tree hides the kind)
        findings, notes, hidden = index_findings(index, codes, strict, every)
        starts = [r.start_line for r in index.rows]
        yaml_lines = index.read(NATIVE_FUNCTIONS).count("\n") + 1
        touched = {p: lines for p, lines in touched_lines(change, starts, yaml_lines).items() if p in files}
        shown = {f for f in findings if on_touched_lines(f, touched)}
        with tempfile.TemporaryDirectory(prefix="mpsgen-base-") as folder:
            base_files = write_base_files(root, change, folder)
            try:
                before, _notes, _hidden = index_findings(Index(tree, overlay=base_files), codes, True)
            except (OSError, ValueError, BadInput):  # the base cannot be read as a tree: every error is the change's
                before = []
        shown.update(new_errors(every, before))
    finally:
        if collecting:
            gc.enable()
    ordered = sorted(shown, key=lambda f: (f.path, f.line, f.col, f.code, f.message))
    return CheckResult(root, ordered, files, notes, hidden, label)

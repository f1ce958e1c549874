"""``mpsgen check``: a fast, read-only lint of a tree's MPS dispatch consistency.

:func:`run_check` reads the tree once (:class:`~mpsgen.check.index.Index`), runs every
registered rule (:mod:`mpsgen.check.rules`) over the whole tree, and keeps the findings
that touch the given paths (all of them when no path is given). Nothing here prints.
"""

from __future__ import annotations

import gc
import os
import re
from typing import NamedTuple

from mpsgen.check import rules as _rules  # noqa: F401  (rules: registers the rules)
from mpsgen.check import rules_reductions as _rules_reductions  # noqa: F401  (MPS019)
from mpsgen.check.index import Index
from mpsgen.check.model import ERROR, RULES, WARNING, Finding, Rule
from mpsgen.check.rules import Facts
from mpsgen.errors import BadInput
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import read_bounded
from mpsgen.tree.walk import walk_files

__all__ = ["ERROR", "RULES", "WARNING", "CheckResult", "Finding", "Rule", "explain", "resolve_paths", "run_check"]

# files whose content the rules read; a run on other paths only has nothing to report
RELEVANT = re.compile(r"(^|/)(native_functions\.yaml|common_mps\.py|fallback_ops\.py)$|\.(mm|metal|cpp|h)$")


# a tree is partial (a sample of files, not a checkout) when at least this many MPS-only rows,
# and a quarter of them, name kernels no host source defines: a checkout mid-change misses a few
PARTIAL_MIN_MISSING = 20
# the findings a partial tree's missing host sources cause; listed only with strict=True
PARTIAL_CODES = ("MPS001", "MPS002")


class CheckResult(NamedTuple):
    root: str  # the tree's folder (PytorchTree.root_dir)
    findings: list[Finding]
    paths: frozenset[str] | None  # tree-relative paths reported on, None for the whole tree
    notes: tuple[str, ...] = ()  # about the run as a whole (a partial tree)
    hidden: int = 0  # findings left out because the tree is partial
    label: str = ""  # what was checked, when not the paths (check --changed: the change)

    @property
    def scope(self) -> str:
        if self.label:
            return self.label
        if self.paths is None:
            return "whole tree"
        return f"{len(self.paths)} path{'s' if len(self.paths) != 1 else ''}"


def _expand_argfiles(paths: list[str], cwd: str) -> list[str]:
    """``@FILE`` stands for the paths listed in FILE, one a line (lintrunner's PATHSFILE)."""
    out: list[str] = []
    for p in paths:
        if p.startswith("@") and len(p) > 1:
            listing = os.path.join(cwd, p[1:])  # (an absolute FILE stays itself)
            try:
                text = read_bounded(listing, "cannot read the path list").decode("utf-8")
                if "\x00" in text:
                    raise BadInput(f"the path list {p[1:]} holds a NUL byte: it is not a list of paths.")
                out += [ln.strip() for ln in text.splitlines() if ln.strip()]
            except (OSError, UnicodeDecodeError) as exc:
                raise BadInput(f"cannot read the path list {p[1:]}: {getattr(exc, 'strerror', None) or exc}.") from None
        else:
            out.append(p)
    return out


def resolve_paths(tree: PytorchTree, paths: list[str] | None, cwd: str | os.PathLike | None = None) -> frozenset[str] | None:
    """Tree-relative POSIX paths for PATHS given relative to ``cwd`` or absolute."""
    if not paths:
        return None
    cwd = os.path.realpath(os.fspath(cwd) if cwd is not None else os.getcwd())
    root = tree.root_dir
    inside = root.rstrip(os.sep) + os.sep
    out = set()
    for p in _expand_argfiles(list(paths), cwd):
        full = os.path.realpath(os.path.normpath(os.path.join(cwd, p)))
        if full != root and not full.startswith(inside):
            raise BadInput(
                f"{p} is outside the PyTorch tree {root}.",
                hint="Pass paths inside the tree (relative to the current directory or absolute), or point --root at the tree holding them.",
            )
        if not os.path.exists(full):
            raise BadInput(
                f"{p}: no such file or folder (looked for {full}).",
                hint="Pass existing paths inside the tree; to check the whole tree, pass no path.",
            )
        if full == root:
            return None  # the whole tree
        rel = full[len(inside) :].replace(os.sep, "/")
        if os.path.isdir(full):
            out.update(f for f, _ in walk_files(full, rel))
            continue
        out.add(rel)
    return frozenset(out)


def run_check(
    tree: PytorchTree,
    paths: list[str] | None = None,
    cwd: str | os.PathLike | None = None,
    *,
    codes: frozenset[str] | None = None,
    strict: bool = False,
) -> CheckResult:
    """Run the rules ``codes`` (all when None) over the tree; keep the findings located in
    ``paths`` (all when None). On a partial tree the findings its missing files cause are
    summed up in one note, unless ``strict``."""
    selected = resolve_paths(tree, paths, cwd)
    if selected is not None and not any(RELEVANT.search(p) for p in selected):
        return CheckResult(tree.root_dir, [], selected)
    # A run allocates tens of thousands of small objects (rows, statements, definitions) that
    # all live until it ends and form no reference cycles: the cyclic collector would only
    # traverse them, and the caller's whole heap with them, over and over (~10% of a run in
    # a bare process, 30-50% in one holding a big heap). It is off for the run and back on
    # after; whatever a run leaves is freed by reference counting.
    collecting = gc.isenabled()
    gc.disable()
    try:
        findings, notes, hidden = index_findings(Index(tree), codes, strict)
        if selected is not None:
            findings = [f for f in findings if f.touches(selected)]
    finally:
        if collecting:
            gc.enable()
    return CheckResult(tree.root_dir, findings, selected, notes, hidden)


def index_findings(
    index: Index, codes: frozenset[str] | None, strict: bool, every: list[Finding] | None = None
) -> tuple[list[Finding], tuple[str, ...], int]:
    """(findings, notes, hidden) of the rules ``codes`` (all when None) over an index: the
    whole tree's, sorted by place; on a partial tree without ``strict`` the findings its
    missing files cause are left out (``hidden`` of them) and summed up in a note. ``every``,
    when given, receives all of them, left out or not."""
    facts = Facts(index)
    rules = [r for c, r in RULES.items() if codes is None or c in codes]
    findings = sorted({f for r in rules for f in r.run(facts)}, key=lambda f: (f.path, f.line, f.col, f.code, f.message))
    if every is not None:
        every.extend(findings)
    notes: tuple[str, ...] = ()
    hidden = 0
    if not strict and (why := _partial_tree(facts)):
        kept = [f for f in findings if f.code not in PARTIAL_CODES]
        hidden = len(findings) - len(kept)
        findings = kept
        notes = (
            f"{why}; the {hidden} {'/'.join(PARTIAL_CODES)} finding(s) that follow from the missing files are not listed (--strict lists them)."
            if hidden
            else f"{why}.",
        )
    return findings, notes, hidden


def _partial_tree(facts: Facts) -> str | None:
    """Why the tree looks like a sample of files rather than a checkout, or None."""
    only = facts.mps_dispatch[0]
    missing = sum(1 for _e, d in only if d.kernel.rpartition("::")[2] not in facts.definitions)
    if missing < PARTIAL_MIN_MISSING or missing * 4 < len(only):
        return None
    hosts = len(facts.index.host_files)
    return (
        f"the tree looks partial: {missing} of {len(only)} MPS-only native_functions.yaml rows name kernels that no "
        f"file under aten/src/ATen/native/mps defines ({hosts} host source{'s' if hosts != 1 else ''} found)"
    )


def explain(code: str) -> str:
    rule = RULES.get(code.strip().upper())
    if rule is None:
        raise BadInput(f"--explain {code}: no such rule. Known codes: {', '.join(RULES)}.")
    return f"{rule.code} {rule.name} ({rule.severity}): {rule.summary}.\n\n{rule.explanation}\n"

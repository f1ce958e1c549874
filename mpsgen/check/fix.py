"""``mpsgen check --fix``: the mechanical fixes, made by the edits migrate already uses.

- MPS007 (dead MPSGraph impl): ``edits.mpsgraph.remove_impls`` takes out the impl, the
  static helpers and macros only it used, and the ``<op>_native.h`` include nothing needs.
- MPS009 (stale xfail): ``edits.common_mps.remove_op_entries`` takes out the entry, with its
  comment; an entry whose reason is not a missing kernel (numerics, a crash) stays.

Everything lands in one :class:`~mpsgen.patch.changeset.Changeset`: previewed as a diff or
applied all-or-nothing. What cannot be fixed mechanically is said, not guessed at.
"""

from __future__ import annotations

from collections import defaultdict

from mpsgen.patch.changeset import Changeset
from mpsgen.check.model import Finding
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import python_syntax_problem
from mpsgen.tree.xfails import read_xfail_entries

FIXABLE = ("MPS007", "MPS009")


def plan_fixes(tree: PytorchTree, findings: list[Finding]) -> tuple[Changeset, list[str]]:
    """The changeset fixing ``findings`` (those of FIXABLE codes), and why any was left."""
    changeset = Changeset(tree)
    skipped: list[str] = []
    by_path: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        if f.code in FIXABLE:
            by_path[(f.code, f.path)].append(f)
    for (code, rel), fs in sorted(by_path.items()):
        if code == "MPS007":
            _remove_dead_impls(tree, changeset, rel, fs, skipped)
        else:
            _remove_stale_xfails(tree, changeset, rel, fs, skipped)
    return changeset, skipped


def _op_names(kernel: str) -> set[str]:
    """``xlogy_out_mps`` -> {xlogy_out, xlogy}: the ops whose ``_native.h`` include may go."""
    base = kernel.removesuffix("_mps")
    names = {base}
    for suffix in ("_out", "_outf"):
        if base.endswith(suffix):
            names.add(base.removesuffix(suffix))
    return names


def _remove_dead_impls(tree: PytorchTree, changeset: Changeset, rel: str, fs: list[Finding], skipped: list[str]) -> None:
    from mpsgen.edits import mpsgraph as mpsgraph_edit  # (local: check --fix and its lintrunner output load no edit when nothing is fixable)
    from mpsgen.tree.mm import scan_mm  # (local: check --fix and its lintrunner output load no .mm scanner when nothing is fixable)

    src = tree.read(rel)
    kernels = {f.symbols[0] for f in fs if f.symbols}
    impls = [i for i in scan_mm(src.text).impls if i.kernel in kernels]
    for k in sorted(kernels - {i.kernel for i in impls}):
        line = next(f.line for f in fs if f.symbols and f.symbols[0] == k)
        skipped.append(f"{rel}:{line}: {k} is not in a form mpsgen removes (a TORCH_IMPL_FUNC block, a one-line macro instance or a function); remove it by hand")
    if not impls:
        return
    ops = set().union(*(_op_names(i.kernel) for i in impls))
    try:
        new_text, removal = mpsgraph_edit.remove_impls(src.text, sorted(impls, key=lambda i: i.start_line), ops)
    except mpsgraph_edit.StillUsed as exc:
        skipped.append(f"{rel}:{exc.line} still calls {exc.name}; nothing removed from {rel}")
        return
    changeset.add(src, new_text)
    changeset.notes.append(removal.describe(rel))


def _remove_stale_xfails(tree: PytorchTree, changeset: Changeset, rel: str, fs: list[Finding], skipped: list[str]) -> None:
    from mpsgen.edits import common_mps as common_mps_edit  # (local: check --fix and its lintrunner output load no edit when nothing is fixable)

    src = tree.read(rel)
    if (problem := python_syntax_problem(src)) is not None:
        raise problem
    at_line = {e.line: e for e in read_xfail_entries(src.text)}
    keys: set[str] = set()
    covered: set[str] = set()
    for f in fs:
        entry = at_line.get(f.line)
        if entry is None:
            skipped.append(f"{rel}:{f.line}: no xfail entry found there any more")
            continue
        keys.add(entry.key)
        covered |= set(entry.dtypes or ())
    kept: list[tuple[int, str]] = []
    new_text = common_mps_edit.remove_op_entries(src.text, keys, covered, kept=kept)
    skipped += [f"{rel}:{line}: {why}" for line, why in kept]
    if new_text != src.text:
        changeset.add(src, new_text)
        changeset.notes.append(f"{rel}: removed the stale entries of {', '.join(sorted(keys))}")

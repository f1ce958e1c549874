"""What the tree says about one op, and about MPS coverage as a whole: read-only, built from
the same scanners and cross-file facts as ``check`` (``tree.index`` / ``tree.facts.Facts``)
and the row -> stub resolver. Nothing here prints; the CLI renders.

A row's MPS status:

- ``metal``: MPS is on the shared CPU/CUDA kernel and its stub has an MPS REGISTER_DISPATCH;
- ``stub-unregistered``: MPS is on the shared kernel but the stub has no MPS kernel (broken);
- ``mps-kernel``: ``MPS: foo_mps`` names a kernel of its own (MPSGraph code, or a hand-written
  Metal host function), defined in an operations/*.mm file;
- ``composite``: the row has no kernels for dense tensors but composite ones (or no dispatch
  at all): it runs on MPS through the ops it is made of;
- ``missing``: CPU/CUDA kernels, no MPS one;
- ``other``: kernels for other backends only (sparse, quantized, nested...);
- (rows only) ``delegate``: no dispatch of its own, ``structured_delegate: foo.out``: it
  runs as that row does.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field, replace
from html import escape
from typing import TYPE_CHECKING

from mpsgen.core.errors import MpsgenError, Refused
from mpsgen.core.resources import resource_dir
from mpsgen.core.text import columns, shorten
from mpsgen.spec.op import FunctorSource, OpSpec, load_spec
from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.facts import Facts, mps_only, op_of, shared
from mpsgen.tree.index import Index
from mpsgen.tree.native_yaml import NativeFunction, NativeFunctions, read_native_functions, scanned_native_functions
from mpsgen.tree.op_facts import kind_and_dtypes_from_tree, opinfo_keys, schema_rows
from mpsgen.tree.opinfo import mps_decorators
from mpsgen.tree.resolver import StubResolver
from mpsgen.tree.schema import shape_problem
from mpsgen.tree.source import mask_c_comments_and_strings, match_close
from mpsgen.tree.xfails import read_xfail_entries, unedited_mentions

if TYPE_CHECKING:
    from mpsgen.plan.migrate import Candidate

STATUSES = ("metal", "mps-kernel", "composite", "missing", "stub-unregistered", "other")
_HOST_KEYS = frozenset({"CPU", "CUDA"})
_COMPOSITE = frozenset({"CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutogradNestedTensor"})
# dispatch keys of layouts and backends other than the dense tensors MPS runs
_NOT_DENSE = ("Sparse", "Quantized", "Nested", "Mkldnn", "Meta", "ZeroTensor")


def dense_keys(keys: set[str]) -> set[str]:
    """The keys that serve dense tensors (``SparseMPS`` or ``QuantizedCPU`` do not)."""
    return {k for k in keys if not k.startswith(_NOT_DENSE)}


@dataclass(frozen=True)
class RowReport:
    row: str
    line: int  # of the row's "- func:" in native_functions.yaml
    status: str
    kernel: str | None = None  # the MPS kernel (shared or own)
    where: str | None = None  # path:line of its MPS REGISTER_DISPATCH or definition
    stub: str | None = None
    stub_declared: str | None = None  # path:line of DECLARE_DISPATCH
    tags: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("row", "line", "status", "kernel", "where", "stub", "stub_declared")} | {"tags": list(self.tags)}


@dataclass(frozen=True)
class OpReport:
    op: str
    rows: tuple[RowReport, ...]
    metal: tuple[str, ...]  # path:line of the functor and registrations of the op's Metal kernels
    dtypes: tuple[str, ...]  # Metal input types registered for those kernels
    xfails: tuple[str, ...]  # "common_mps.py:LINE DICT[key] (dtypes)"
    decorators: tuple[str, ...]  # "file:LINE DecorateInfo(..., device_type='mps') ..."
    spec: str | None  # specs/<op>.yaml when mpsgen ships one
    next_step: str
    command: str | None = None  # the mpsgen command of the next step, as printed (None: there is none)

    @property
    def status(self) -> str:
        return overall_status([r.status for r in self.rows])

    def as_dict(self) -> dict:
        return {
            "op": self.op,
            "status": self.status,
            "rows": [r.as_dict() for r in self.rows],
            "metal": list(self.metal),
            "dtypes": list(self.dtypes),
            "xfails": list(self.xfails),
            "decorators": list(self.decorators),
            "spec": self.spec,
            "next_step": self.next_step,
            "command": self.command,
        }


def overall_status(statuses: list[str]) -> str:
    """An op's status from its rows': the least finished one that concerns MPS (a row that
    delegates to another, ``structured_delegate: foo.out``, follows that row)."""
    statuses = [s for s in statuses if s != "delegate"] or ["composite"]
    for s in ("stub-unregistered", "missing", "mps-kernel", "metal", "other", "composite"):
        if s in statuses:
            return s
    return "other"


@dataclass
class TreeFacts:
    """The tree read once: yaml rows (full), and the index and cross-file facts check reads too."""

    tree: PytorchTree
    rows: list[NativeFunction] = field(default_factory=list)
    facts: Facts | None = None

    @classmethod
    def read(cls, tree: PytorchTree) -> TreeFacts:
        rows = list(scanned_native_functions(tree)[1].entries)
        return cls(tree, rows, Facts(Index(tree)))


def row_report(tf: TreeFacts, e: NativeFunction) -> RowReport:
    f = tf.facts
    assert f is not None
    keys = {k for d in e.dispatch for k in d.keys}
    if not e.dispatch and e.structured_delegate:
        return RowReport(e.name, e.start_line, "delegate", e.structured_delegate, tags=e.tags)
    mps = [d for d in e.dispatch if d.has_mps]
    for d in mps:
        if shared(d, e):
            stub = f.tie_stub(e, d.kernel)
            declared = f.index.stubs.get(stub) if stub else None
            regs = f.dispatches.get(stub, []) if stub else []
            status = "metal" if regs else ("stub-unregistered" if stub else "metal")
            where = f"{regs[0].path}:{regs[0].line}" if regs else None
            return RowReport(e.name, e.start_line, status, d.kernel, where, stub, f"{declared[0]}:{declared[1]}" if declared else None, e.tags)
    for d in mps:
        if mps_only(d):
            kernel = d.kernel.rpartition("::")[2]
            defs = f.definitions.get(kernel, [])
            where = f"{defs[0].path}:{defs[0].line}" if defs else None
            stub = f.row_stub(e)
            declared = f.index.stubs.get(stub) if stub else None
            return RowReport(e.name, e.start_line, "mps-kernel", kernel, where, stub, f"{declared[0]}:{declared[1]}" if declared else None, e.tags)
    if not e.dispatch or (keys & _COMPOSITE and dense_keys(keys) <= _COMPOSITE):
        # no kernels, or for dense tensors only composite ones (sparse kernels beside them aside)
        return RowReport(e.name, e.start_line, "composite", tags=e.tags)
    if keys & _HOST_KEYS:
        stub = f.row_stub(e)
        declared = f.index.stubs.get(stub) if stub else None
        return RowReport(e.name, e.start_line, "missing", stub=stub, stub_declared=f"{declared[0]}:{declared[1]}" if declared else None, tags=e.tags)
    return RowReport(e.name, e.start_line, "other", tags=e.tags)


def explain_op(tree: PytorchTree, op: str, tf: TreeFacts | None = None) -> OpReport:
    """Everything the tree says about ``op`` (its rows, in-place and out variants included)."""
    tf = tf or TreeFacts.read(tree)
    f = tf.facts
    assert f is not None
    entries = [e for e in tf.rows if op_of(e) == op]
    if not entries:
        ops = sorted({op_of(e) for e in tf.rows})
        near = difflib.get_close_matches(op, ops, n=3) + sorted((o for o in ops if op in o), key=len)[:5]
        hint = f"Did you mean {', '.join(dict.fromkeys(near))}?" if near else "Check the op's aten name (the part before '(' in `- func:`)."
        raise Refused(f"op {op!r} is not in {NATIVE_FUNCTIONS}.", hint=hint)
    rows = tuple(row_report(tf, e) for e in entries)

    # Metal kernels: the names the registered stubs' host functions pass to exec_*_kernel
    names: list[str] = []
    for r in rows:
        if r.status == "metal" and r.stub:
            names += f.metal_kernel_names(r.stub) or []
    names = list(dict.fromkeys(names or ([op] if op in f.registered else [])))
    metal: list[str] = []
    dtypes: list[str] = []
    for n in names:
        for m in f.registered.get(n, ()):
            if n in m.functors:
                metal.append(f"{m.path}:{m.functors[n]} struct {n}_functor")
            for i in m.ops[n][:3]:
                st = m.statements[i]
                metal.append(f"{m.path}:{st.line} {st.macro}({', '.join(st.args)})")
        dtypes += [r.dtypes[0] for r in f.registrations(n) if r.dtypes]

    xfails, decorators = _tests_holding_back(tree, op, tf.rows)
    shipped = resource_dir("specs") / f"{op}.yaml"
    kernel_spec = resource_dir("specs") / "kernels" / f"{op}.yaml"
    spec_shown = f"specs/{op}.yaml" if shipped.is_file() else None
    if spec_shown is None and kernel_spec.is_file():
        spec_shown = f"specs/kernels/{op}.yaml (a custom kernel: mpsgen new-kernel)"
    report = OpReport(
        op, rows, tuple(dict.fromkeys(metal)), tuple(dict.fromkeys(dtypes)), tuple(xfails), tuple(decorators),
        spec_shown, "",
    )
    return _with_next_step(tree, report)


_XFAILS = "explain: xfail entries"  # in PytorchTree.memo


def _tests_holding_back(tree: PytorchTree, op: str, rows: list[NativeFunction]) -> tuple[list[str], list[str]]:
    """The common_mps.py xfail/skip entries and OpInfo MPS decorators naming the op."""
    extra: set[str] = set()
    kernel_spec = resource_dir("specs") / "kernels" / f"{op}.yaml"
    if kernel_spec.is_file():  # the OpInfos a shipped kernel spec names (nn.functional.pdist for _pdist_forward)
        from mpsgen.spec.kernel import load_kernel_spec  # (local: explain of an op with nothing to plan loads no yaml)

        extra = set(load_kernel_spec(kernel_spec).opinfo)
    targets = opinfo_keys(tree, op, NativeFunctions(tuple(rows)), extra=extra)
    keys = set(targets.keys)
    xfails = []
    common = tree.read_optional(COMMON_MPS)
    if common is not None:
        memo = tree.memo.get(_XFAILS)
        if memo is None or memo[0] is not common:  # parsed once per tree (coverage and tests explain every op)
            memo = tree.memo[_XFAILS] = (common, read_xfail_entries(common.text), unedited_mentions(common.text))
        for x in memo[1]:
            if x.key in keys:
                what = "every dtype" if x.dtypes is None else ", ".join(x.dtypes)
                xfails.append(f"{COMMON_MPS}:{x.line} {x.dict_name}[{x.key!r}] ({what})")
        for key in sorted(keys):
            xfails += [f"{COMMON_MPS}:{line} `{code}` (a form mpsgen does not edit)" for line, code in memo[2].get(key, ())]
    decorators = []
    for rel, spans in targets.spans:
        text = tree.read(rel).text
        for start, end in spans:
            for s, e in mps_decorators(text, start, end):
                decorators.append(f"{rel}:{text.count(chr(10), 0, s) + 1} {shorten(text[s:e], 110)}")
    return xfails, decorators


def _with_next_step(tree: PytorchTree, report: OpReport) -> OpReport:
    op = report.op
    status = report.status
    command = None
    if status == "stub-unregistered":
        step = "MPS is on the shared kernel but its stub has no MPS kernel: register one (see `mpsgen check --explain MPS002`), then `mpsgen check`"
    elif status in ("missing", "mps-kernel") and (kernel := _kernel_step(tree, report)) is not None:
        step, command = kernel
    elif status in ("missing", "mps-kernel") and (reduces := _reduction_step(tree, report)) is not None:
        step, command = reduces  # (never an elementwise kind's hint: its kernel is a reduction)
    elif status in ("missing", "mps-kernel"):
        # rows on MPSGraph code: migrating them registers the stub, and rows of the op with no MPS
        # kernel that run the same stub join in the same change
        migrate = any(r.status == "mps-kernel" for r in report.rows)
        step, command = planned_step(tree, op, migrate)
        if command is None and status == "missing" and _custom_kernel_fits(tree, op):
            step += (
                f" Its kernel may be a custom one: write a kernel spec of it (specs/kernels/README.md), then run "
                f"mpsgen new-kernel {op} --spec YOUR_SPEC --dry-run."
            )
    elif status == "metal":
        step = f"nothing to add: {op} runs on Metal; test it with `python test/test_mps.py -k {op}`"
        if report.xfails:
            command = "mpsgen check --select MPS009 --fix --diff"
            step = f"{op} runs on Metal but common_mps.py still holds entries for it: `{command}`"
    elif status == "composite":
        step = f"nothing to add: {op} is composite and runs on MPS through the ops it is made of"
    else:
        step = f"{op} has no CPU/CUDA kernel for MPS to share; nothing mpsgen can write"
    return replace(report, next_step=step, command=command)


def _kernel_step(tree: PytorchTree, report: OpReport) -> tuple[str, str | None] | None:
    """The next step of an op mpsgen ships a kernel spec for: new-kernel when the tree can take
    it (its row, schema and helpers checked, as new-kernel checks them first), else why not; or,
    once its host function is in the spec's file, that it runs on its own kernel."""
    path = resource_dir("specs") / "kernels" / f"{report.op}.yaml"
    if not path.is_file():
        return _custom_kernel_step(tree, report)
    from mpsgen.spec.kernel import load_kernel_spec  # (local: explain of an op with nothing to plan loads no yaml)
    from mpsgen.plan.newkernel import helper_problems, kernel_paths, kernel_target  # (local: explain of an op with nothing to plan loads no planner)

    spec = load_kernel_spec(path, display=f"specs/kernels/{report.op}.yaml")
    mm = kernel_paths(spec.file)[2]
    if report.status == "mps-kernel":
        src = tree.read_optional(mm)
        found = re.search(rf"\b{re.escape(report.op)}(?:_out)?_mps\b", src.text) if src is not None else None
        if found is not None:
            return f"nothing to add: {report.op} runs on its own Metal kernel ({found.group(0)} in {mm})", None
        return None
    try:
        kernel_target(tree, spec)
        missing = helper_problems(tree)
    except MpsgenError as exc:
        return f"none (mpsgen cannot add {report.op} here): {exc.message}", None
    if missing:
        return f"none (mpsgen cannot add {report.op} here): this tree's MPS headers lack {', '.join(missing)}", None
    command = f"mpsgen new-kernel {report.op}"
    return f"ready: `{command} --dry-run` shows the change (a custom kernel, whose body `try` runs here: mpsgen try {report.op})", command


def _reduction_step(tree: PytorchTree, report: OpReport) -> tuple[str, str | None] | None:
    """The next step of an op that reduces (no row of it tagged pointwise; a row runs a
    reduction stub, is tagged `reduction` or takes `reduction`/`keepdim`) and its command, or None."""
    from mpsgen.spec.reduction import reduction_evidence, shipped_reduction_spec  # (local: explain of an op with nothing to plan loads no yaml)

    rows = {e.name: e for e in read_native_functions(tree)[1].of_op(report.op)}
    if any("pointwise" in e.tags for e in rows.values()):
        return None
    why = None
    for r in report.rows:
        e = rows.get(r.row)
        if e is not None and (said := reduction_evidence(e.func, e.tags, r.stub, r.stub_declared)):
            why = f"row {r.row} ({NATIVE_FUNCTIONS}:{r.line}) {said}"
            break
    if why is None:
        return None
    spec = shipped_reduction_spec(report.op)
    if spec is not None:
        shown = f"specs/reductions/{spec.name}"
        if any(r.status == "mps-kernel" for r in report.rows):  # rows on MPSGraph code: migrate them
            return _reduction_migration_step(tree, report.op, spec, shown, why)
        return (
            f"none yet ({report.op} is a reduction: {why}): mpsgen's reduction spec {shown} writes its Metal kernel, which "
            f"try runs here against torch's CPU op (mpsgen try {report.op}); adding a reduction MPS lacks is not written yet",
            None,
        )
    verb = "migrate" if report.status == "mps-kernel" else "add"
    return (
        f"none (mpsgen cannot {verb} {report.op} here): {report.op} is a reduction ({why}); its kernel reduces, it is no "
        "elementwise functor, and mpsgen writes reduction kernels only for the stubs of specs/reductions/ (specs/kernels/README.md)",
        None,
    )


def _reduction_migration_step(tree: PytorchTree, op: str, path, shown: str, why: str) -> tuple[str, str | None]:
    """Plan the migration of a reduction: ready, ready at a loss of dtypes, or why not."""
    from mpsgen.spec.reduction import load_reduction_spec  # (local: explain of an op with nothing to plan loads no yaml)
    from mpsgen.plan.reduction import plan_reduction_migration  # (local: explain of an op with nothing to plan loads no planner)

    spec = load_reduction_spec(path, display=shown)
    base = f"mpsgen migrate-from-mpsgraph {op}"
    try:
        plan_reduction_migration(tree, spec, op)
        return f"ready: `{base} --dry-run` shows the change ({op} is a reduction; its kernel: {shown}, mpsgen try {op})", f"{base} --dry-run"
    except Refused as exc:
        refused = exc
    if "serve fewer dtypes" in refused.message:
        try:
            plan_reduction_migration(tree, spec, op, allow_dtype_loss=True)
        except Refused as exc:
            refused = exc
        else:
            command = f"{base} --allow-dtype-loss --dry-run"
            lost = refused.message.split(": ", 1)[-1]
            return (
                f"`{command}` shows the change ({op} is a reduction; its kernel: {shown}, mpsgen try {op}); "
                f"without the flag it is refused: {lost}",
                command,
            )
    return f"none yet ({op} is a reduction: {why}; its kernel: {shown}): {refused.message}", None


def _custom_kernel_fits(tree: PytorchTree, op: str) -> bool:
    """Whether new-kernel could write ``op``'s kernel, given a spec."""
    from mpsgen.plan.newkernel import not_a_kernel_op  # (local: explain of an op with nothing to plan loads no planner)

    return not_a_kernel_op(tree, op, read_native_functions(tree)[1]) is None


_MPSGRAPH_RUN = re.compile(r"\b(?:runMPSGraph|LookUpOrCreateCachedGraph)\b")


def _runs_metal(text: str, line: int) -> bool:
    """Whether the function defined at ``line`` of a host file asks the shader library for a
    pipeline (itself or through the file's functions it calls, a few calls deep) and runs no
    MPSGraph on the way: a file may hold both (2.14's ReduceOps.mm: Metal min/max beside
    MPSGraph prod and var)."""
    if "getPipelineStateForFunc" not in text:
        return False
    masked = mask_c_comments_and_strings(text)
    starts = [0] + [m.end() for m in re.finditer(r"\n", masked)]
    bodies = {}
    for m in re.finditer(r"^[A-Za-z_][^\n;{}]*?\b(\w+)\s*\([^;{]*?\)\s*(?:const\s*)?\{", masked, re.M):
        bodies.setdefault(m.group(1), (m.end() - 1, match_close(masked, m.end() - 1)))
    if line - 1 >= len(starts):
        return False
    brace = masked.find("{", starts[line - 1])
    if brace < 0:
        return False
    todo, seen, metal = [(brace, match_close(masked, brace), 0)], set(), False
    while todo:
        a, b, depth = todo.pop()
        body = masked[a:b]
        if _MPSGRAPH_RUN.search(body):
            return False
        metal = metal or "getPipelineStateForFunc" in body
        if depth < 3:
            for name in set(re.findall(r"\b(\w+)\s*\(", body)) - seen:
                seen.add(name)
                if name in bodies and bodies[name][1] > 0:
                    todo.append((*bodies[name], depth + 1))
    return metal


def _custom_kernel_step(tree: PytorchTree, report: OpReport) -> tuple[str, str | None] | None:
    """An op whose every MPS row runs a function of a host file that asks the shader library
    for pipelines by name runs on its own Metal kernel (new-kernel's, or written by hand): no
    migration to suggest."""
    if report.status != "mps-kernel":
        return None
    places = []
    for r in report.rows:
        if r.status != "mps-kernel":
            continue
        if not r.where:
            return None
        rel = r.where.rsplit(":", 1)[0]
        src = tree.read_optional(rel)
        if src is None or not _runs_metal(src.text, int(r.where.rsplit(":", 1)[1])):
            return None  # (MPSGraph code: a migration's candidate)
        places.append(f"{r.kernel} in {rel}")
    if not places:
        return None
    return f"nothing to add: {report.op} runs on its own Metal kernel ({'; '.join(dict.fromkeys(places))})", None


def bare_spec(tree: PytorchTree, op: str, migrate: bool) -> OpSpec:
    """The spec ``mpsgen new-op OP`` / ``migrate-from-mpsgraph OP`` runs with no flags: the
    shipped spec, else the kind from the rows' schemas, the dtypes from the OpInfo and no functor."""
    shipped = resource_dir("specs") / f"{op}.yaml"
    if shipped.is_file():
        return load_spec(shipped, display=f"specs/{op}.yaml")
    kind, groups, _how = kind_and_dtypes_from_tree(tree, op, migrate=migrate)
    return OpSpec(op, kind, FunctorSource(), groups)


def planned_step(tree: PytorchTree, op: str, migrate: bool) -> tuple[str, str | None]:
    """(the next step, the command in it): the command is planned as it would run, so it is only
    named when it goes through (a functor still to be given aside, which it announces);
    otherwise the step says why mpsgen cannot do the op."""
    from mpsgen.plan.migrate import plan_migrate  # (local: explain of an op with nothing to plan loads no planner)
    from mpsgen.plan.newop import plan_new_op  # (local: explain of an op with nothing to plan loads no planner)

    verb = "migrate" if migrate else "add"
    args = ["mpsgen", "migrate-from-mpsgraph" if migrate else "new-op", op]
    notes = []
    shipped = resource_dir("specs") / f"{op}.yaml"
    try:
        spec = bare_spec(tree, op, migrate)
        if shipped.is_file() and not migrate:
            args += ["--spec", str(shipped)]  # by its full path: the command works verbatim from the checkout
        guess = None if spec.stub else _guessed_stub(tree, spec, migrate)
        if guess is not None:
            stub, kernel = guess
            spec = replace(spec, stub=stub)
            args += ["--stub", stub]
            notes.append(f"{stub} is chosen by its name alone: no .cpp in this tree defines {kernel}; check that it calls {stub}")
        try:
            changeset = plan_migrate(tree, spec) if migrate else plan_new_op(tree, spec)
        except Refused:
            if not migrate:
                raise
            changeset = plan_migrate(tree, spec, partial=True)  # raises the same refusal if --partial does not help
            args.append("--partial")
            notes += [w.replace(" (--partial)", "") for w in changeset.warnings if w.startswith("left ")]
    except MpsgenError as exc:
        return f"none (mpsgen cannot {verb} {op} here): {exc}", None
    blockers = [b for b in changeset.blockers if not (not spec.has_functor and b.startswith(SCAFFOLD_BLOCKER))]
    if blockers:
        return f"none (mpsgen cannot {verb} {op} here): " + " ".join(blockers), None
    if changeset.empty:
        return f"nothing to add: {op} is already in place", None
    if not spec.has_functor:
        notes.append(
            f"{NO_FUNCTOR}: it shows the change with a scaffold functor and writes nothing until --expr or --functor-file gives one"
        )
    command = " ".join(args + ["--dry-run"])
    return command + (f"   ({'; '.join(notes)})" if notes else ""), command


# how a next step announces that its command refuses to write until a functor is given
NO_FUNCTOR = "no functor yet"
SCAFFOLD_BLOCKER = "no functor source for "  # newop.plan_new_op's blocker for a scaffold functor


def _guessed_stub(tree: PytorchTree, spec: OpSpec, migrate: bool) -> tuple[str, str] | None:
    """(stub, kernel) when the rows the command serves run a stub chosen by its name alone
    (no .cpp of the tree defines their kernel): the command must name it with --stub."""
    _src, table = read_native_functions(tree)
    rows = [e for e in schema_rows(table, spec.name, migrate) if shape_problem(e.func, spec.kind, spec.operands) is None]
    resolver = StubResolver.of(tree)
    guessed = {(r.stub, r.kernel) for r in map(resolver.resolve, rows) if r.stub and not r.verified}
    return guessed.pop() if len(guessed) == 1 else None


# ---------------------------------------------------------------------------------------------
# Coverage


@dataclass(frozen=True)
class Coverage:
    ops: dict[str, str]  # op -> status
    by_tag: dict[str, Counter]  # tag -> Counter of statuses
    candidates: list[dict]  # migration candidates, easiest first
    addable: tuple[dict, ...] = ()  # missing ops new-op can add (filled by addable_ops)

    @property
    def counts(self) -> Counter:
        return Counter(self.ops.values())

    def as_dict(self) -> dict:
        return {
            "counts": {s: self.counts.get(s, 0) for s in STATUSES},
            "total": len(self.ops),
            "by_tag": {t: {s: c.get(s, 0) for s in STATUSES} for t, c in sorted(self.by_tag.items())},
            "ops": dict(sorted(self.ops.items())),
            "migration_candidates": self.candidates,
            "addable_ops": list(self.addable),
            "statuses": dict(STATUS_MEANING),
        }


def migration_candidates(tree: PytorchTree) -> list[Candidate]:
    """``migrate.list_candidates``, each elementwise one that could move planned as its bare
    command would run (its blocker says why "ready" is not the word, or what command to run)."""
    from mpsgen.plan.migrate import list_candidates  # (local: explain of an op with nothing to plan loads no planner)

    out = list_candidates(tree)
    for c in out:
        if c.kind == "reduction" and c.migratable:
            # (planned by explain: the bare command may refuse a loss of dtypes, as prod's does)
            c.blocker = f"a reduction: `mpsgen explain {c.op}` plans its migration"
        if c.elementwise and c.migratable:  # "ready" means the bare command goes through: plan it
            step, command = planned_step(tree, c.op, migrate=True)
            if command is None:
                c.blocker = step.split("): ", 1)[-1]  # "none (mpsgen cannot ...): why"
            elif command != f"mpsgen migrate-from-mpsgraph {c.op} --dry-run":
                c.blocker = f"needs `{command}`" + step[len(command) :]
    return out


def coverage(tree: PytorchTree) -> Coverage:
    """Every op's MPS status, counts by tag, and the migration candidates ranked by ease."""
    tf = TreeFacts.read(tree)
    per_op: dict[str, list[str]] = {}
    tags_of: dict[str, set[str]] = {}
    for e in tf.rows:
        op = op_of(e)
        per_op.setdefault(op, []).append(row_report(tf, e).status)
        tags_of.setdefault(op, set()).update(e.tags)
    ops = {op: overall_status(st) for op, st in per_op.items()}
    by_tag: dict[str, Counter] = {}
    for op, status in ops.items():
        for t in tags_of[op] or {"(untagged)"}:
            by_tag.setdefault(t, Counter())[status] += 1
    ranked = sorted(migration_candidates(tree), key=lambda c: (not c.migratable, not c.elementwise, len(c.rows), c.op))
    candidates = [c.as_dict() | {"rank": i + 1} for i, c in enumerate(ranked)]
    return Coverage(ops, by_tag, candidates)


# one line each, within 45 characters: what a status means and what to do about it (coverage's
# legend, in every format)
STATUS_MEANING = {
    "metal": "runs a Metal kernel through its shared stub",
    "mps-kernel": "own `*_mps` kernel (MPSGraph code): migrate it",
    "composite": "made of other ops, which MPS runs",
    "missing": "no MPS kernel: `mpsgen new-op OP` adds one",
    "stub-unregistered": "shared stub has no MPS kernel (MPS002)",
    "other": "kernels of other backends only (sparse...)",
    "delegate": "(a row) runs as its structured_delegate row",
}


def addable_ops(tree: PytorchTree, c: Coverage) -> Coverage:
    """``c`` with the missing ops ``mpsgen new-op OP`` can add: those whose bare command
    (with the spec mpsgen ships, if any) plans through, each with its kind, spec, command and
    what it still needs (``--stub``, a functor). Only ops with a shipped spec or a kind their
    rows' schemas say (new-op's own rule) are planned; shipped specs come first."""
    specs = resource_dir("specs")
    found = []
    for op, status in sorted(c.ops.items()):
        if status != "missing":
            continue
        shipped = specs / f"{op}.yaml"
        try:
            kind = load_spec(shipped, display=f"specs/{op}.yaml").kind if shipped.is_file() else kind_and_dtypes_from_tree(tree, op, dtypes=False)[0]
        except MpsgenError:
            continue  # no kind mpsgen writes (not elementwise, several outputs, no CPU/CUDA kernel)
        step, command = planned_step(tree, op, migrate=False)
        if command is None:
            continue
        needs = "a functor (--expr)" if NO_FUNCTOR in step else "--stub" if " --stub " in command else "ready"
        found.append({"op": op, "kind": kind, "spec": f"specs/{op}.yaml" if shipped.is_file() else None, "needs": needs, "command": command})
    found += _addable_kernels(tree, c)
    found.sort(key=lambda x: (x["spec"] is None, x["op"]))
    return replace(c, addable=tuple(found))


def _addable_kernels(tree: PytorchTree, c: Coverage) -> list[dict]:
    """The missing ops mpsgen ships a kernel spec for (``specs/kernels/OP.yaml``) whose row,
    schema and helpers new-kernel can take: ``mpsgen new-kernel OP``."""
    found = []
    for path in sorted((resource_dir("specs") / "kernels").glob("*.yaml")):
        op = path.stem
        if c.ops.get(op) != "missing":
            continue
        step = _kernel_step(tree, OpReport(op, (), (), (), (), (), None, ""))  # (no rows: not "mps-kernel")
        if step is not None and step[1] is not None:
            found.append({"op": op, "kind": "kernel", "spec": f"specs/kernels/{op}.yaml", "needs": "ready", "command": step[1]})
    return found


# ---------------------------------------------------------------------------------------------
# Rendering (strings; the CLI prints them)


def op_text(r: OpReport) -> str:
    lines = [f"{r.op}: {r.status}"]
    lines.append(f"  rows ({NATIVE_FUNCTIONS}):")
    for row in r.rows:
        detail = []
        if row.status == "delegate":
            detail.append(f"runs as {row.kernel}")
        elif row.kernel:
            detail.append(f"MPS -> {row.kernel}")
        if row.where:
            detail.append(f"at {row.where}")
        if row.stub:
            detail.append(f"stub {row.stub}" + (f" ({row.stub_declared})" if row.stub_declared else ""))
        lines.append(f"    {row.row:<40} line {row.line:<6} {row.status:<18} {'; '.join(detail)}")
    if r.metal:
        lines.append("  Metal kernel:")
        lines += [f"    {m}" for m in r.metal]
        lines.append(f"  registered input types: {', '.join(r.dtypes) or '-'}")
    lines.append("  holding it back in tests:" if r.xfails or r.decorators else "  holding it back in tests: nothing")
    lines += [f"    {x}" for x in r.xfails]
    lines += [f"    {d}" for d in r.decorators]
    lines.append(f"  spec: {r.spec or 'none shipped (the functor is yours to write: --expr or --functor-file)'}")
    lines.append(f"  next: {r.next_step}")
    return "\n".join(lines) + "\n"


def _share(n: int, total: int) -> str:
    return f"{100 * n / max(total, 1):.1f}%"


def _tag_statuses(c: Coverage, width: int) -> list[str]:
    """The statuses the by-tag table shows within ``width``: all when they fit, else those
    that mean work (on Metal, on MPSGraph, missing, broken) first."""
    tag_w = max([len("tag"), *map(len, c.by_tag)])
    room = width - 2 - tag_w
    shown = []
    for s in ("metal", "mps-kernel", "missing", "stub-unregistered", "composite", "other"):
        w = 2 + max(len(s), *(len(str(k.get(s, 0))) for k in c.by_tag.values()))
        if w <= room:
            shown.append(s)
            room -= w
    return [s for s in STATUSES if s in shown]


def _candidate_rows(cands: list[dict]) -> list[tuple[str, ...]]:
    return [(str(x["rank"]), x["op"], x["kind"], str(len(x["rows"])), "ready" if x["migratable"] else "needs work", "yes" if x["spec"] else "-") for x in cands]


def coverage_table(c: Coverage, markdown: bool = False, *, width: int = 80, limit: int | None = 20) -> str:
    """Coverage for a terminal ``width`` columns wide (or, ``markdown``, for a PR or an
    issue): the counts with what each status means, the counts by tag, the first ``limit``
    migration candidates (all with None) and the missing ops new-op can add. Narrower than 80
    columns, it is laid out for 80 (the terminal wraps what passes)."""
    width = max(width, 80)
    counts = c.counts
    total = len(c.ops)
    cands = c.candidates if limit is None else c.candidates[:limit]
    adds = list(c.addable) if limit is None else list(c.addable[:limit])
    ready = sum(1 for x in c.candidates if x["migratable"])
    more_cands, more_adds = len(c.candidates) - len(cands), len(c.addable) - len(adds)
    if markdown:
        out = [f"MPS coverage of {total} ops in `{NATIVE_FUNCTIONS}`.", "", "| status | ops | share | meaning |", "|---|---:|---:|---|"]
        out += [f"| {s} | {counts.get(s, 0)} | {_share(counts.get(s, 0), total)} | {STATUS_MEANING[s]} |" for s in STATUSES]
        out += [f"| delegate | | | {STATUS_MEANING['delegate']} |", f"| total | {total} | | |"]
        out += ["", "| tag | " + " | ".join(STATUSES) + " |", "|---|" + "---:|" * len(STATUSES)]
        out += [f"| {t} | " + " | ".join(str(k.get(s, 0)) for s in STATUSES) + " |" for t, k in sorted(c.by_tag.items())]
        out += ["", f"Migration candidates, easiest first ({len(c.candidates)}; {ready} ready):", ""]
        out += ["| rank | op | kind | rows | state | spec |", "|---:|---|---|---:|---|---|"]
        out += [f"| {x['rank']} | {x['op']} | {x['kind']} | {len(x['rows'])} | {'ready' if x['migratable'] else 'needs work'} | {x['spec'] or ''} |" for x in cands]
        if more_cands:
            out.append(f"\n{more_cands} more (`mpsgen coverage --all`).")
        out += ["", f"Missing ops `mpsgen new-op` (or, kind kernel, `new-kernel`) can add ({len(c.addable)}):", "", "| op | kind | spec | state |", "|---|---|---|---|"]
        out += [f"| {x['op']} | {x['kind']} | {x['spec'] or ''} | {x['needs']} |" for x in adds]
        if more_adds:
            out.append(f"\n{more_adds} more (`mpsgen coverage --all`).")
        return "\n".join(out) + "\n"
    out = [f"MPS coverage of {total} ops in {NATIVE_FUNCTIONS}", ""]
    legend = [(s, str(counts.get(s, 0)), _share(counts.get(s, 0), total), STATUS_MEANING[s]) for s in STATUSES]
    legend.append(("delegate", "-", "-", STATUS_MEANING["delegate"]))
    out += columns(("status", "ops", "share", "meaning"), legend, width=width, right=frozenset({1, 2}))
    shown = _tag_statuses(c, width)
    out += ["", "ops by tag:"]
    out += columns(("tag", *shown), [(t, *(str(k.get(s, 0)) for s in shown)) for t, k in sorted(c.by_tag.items())], width=width, right=frozenset(range(1, len(shown) + 1)))
    if len(shown) < len(STATUSES):
        left = [s for s in STATUSES if s not in shown]
        out.append(f"  ({', '.join(left)}: in a wider terminal, or --format markdown)")
    out += ["", f"migration candidates, easiest first ({len(c.candidates)}; {ready} ready):"]
    out += columns(("#", "op", "kind", "rows", "state", "spec"), _candidate_rows(cands), width=width, name=1, right=frozenset({0, 3}))
    if more_cands:
        out.append(f"  ... {more_cands} more: --all lists them (migrate-from-mpsgraph --list: what each needs)")
    out += ["", f"missing ops new-op, or new-kernel (kind kernel), can add ({len(c.addable)}):"]
    if adds:
        out += columns(("op", "kind", "spec", "state"), [(x["op"], x["kind"], "yes" if x["spec"] else "-", x["needs"]) for x in adds], width=width)
    else:
        out.append("  none in this tree")
    if more_adds:
        out.append(f"  ... {more_adds} more: --all lists them")
    if (rest := c.counts.get("missing", 0) - len(c.addable)) > 0:
        out += textwrap.wrap(
            f"({rest} other missing op{'s' if rest != 1 else ''}: not a kind mpsgen writes, or a change that would not "
            "build here; `mpsgen explain OP` says why)", width, initial_indent="  ", subsequent_indent="   ",
            break_long_words=False, break_on_hyphens=False,
        )
    out += ["", "`mpsgen explain OP` tells all about one op and plans its command;", "`mpsgen coverage --format html -o FILE` writes a page with a filter."]
    return "\n".join(out) + "\n"


def coverage_html(c: Coverage) -> str:
    """One self-contained page (no network): counts with a legend, a bar chart, the missing
    ops new-op can add, and a sortable table of every op, both filtered by a search box."""
    counts = c.counts
    total = max(len(c.ops), 1)
    colors = {"metal": "#2e7d32", "mps-kernel": "#f9a825", "composite": "#90a4ae", "missing": "#c62828", "stub-unregistered": "#6a1b9a", "other": "#5d4037"}
    bars = []
    for i, s in enumerate(STATUSES):
        n = counts.get(s, 0)
        width = 600 * n / total
        bars.append(
            f'<g class="bar" data-status="{s}"><text x="0" y="{i * 26 + 17}">{s}</text>'
            f'<rect x="150" y="{i * 26 + 4}" width="{width:.1f}" height="18" fill="{colors[s]}"></rect>'
            f'<text x="{150 + width + 6:.1f}" y="{i * 26 + 17}" class="n">{n}</text></g>'
        )
    summary = "".join(
        f'<tr><td><span class="swatch" style="background:{colors[s]}"></span>{s}</td><td class="count" data-status="{s}">{counts.get(s, 0)}</td>'
        f'<td class="meaning">{escape(STATUS_MEANING[s])}</td></tr>'
        for s in STATUSES
    )
    summary += f'<tr><td>delegate</td><td></td><td class="meaning">{escape(STATUS_MEANING["delegate"])}</td></tr>'
    rank = {x["op"]: x["rank"] for x in c.candidates}
    rows = "".join(
        f'<tr><td>{escape(op)}</td><td data-status="{st}">{st}</td><td>{rank.get(op, "")}</td></tr>' for op, st in sorted(c.ops.items())
    )
    addable = "".join(
        f'<tr><td>{escape(x["op"])}</td><td>{escape(x["kind"])}</td><td>{escape(x["spec"] or "")}</td><td><code>{escape(x["command"])}</code></td></tr>'
        for x in c.addable
    ) or '<tr><td colspan="4">none in this tree</td></tr>'
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MPS coverage</title>
<style>
body {{ font: 14px system-ui, sans-serif; margin: 2em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; }}
th {{ cursor: pointer; background: #eee; }}
svg text {{ font: 12px system-ui, sans-serif; }}
.swatch {{ display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.4em; }}
#filter {{ font: inherit; padding: 2px 6px; width: 24em; }}
</style></head><body>
<h1>MPS coverage</h1>
<p id="total">{len(c.ops)} ops in native_functions.yaml</p>
<table id="summary"><tr><th>status</th><th>ops</th><th>meaning</th></tr>{summary}</table>
<svg id="chart" width="820" height="{len(STATUSES) * 26 + 8}" role="img" aria-label="ops by MPS status">{"".join(bars)}</svg>
<p><label>Filter: <input id="filter" type="search" placeholder="an op name or a status, e.g. special or missing" autocomplete="off"></label>
<span id="shown">{len(c.ops)}</span> of {len(c.ops)} ops shown</p>
<h2>Missing ops <code>mpsgen new-op</code> (or, kind kernel, <code>new-kernel</code>) can add</h2>
<table id="addable"><thead><tr><th>op</th><th>kind</th><th>shipped spec</th><th>command</th></tr></thead>
<tbody>{addable}</tbody></table>
<h2>Ops</h2>
<table id="ops"><thead><tr><th data-col="0">op</th><th data-col="1">status</th><th data-col="2">migration rank</th></tr></thead>
<tbody>{rows}</tbody></table>
<script>
document.querySelectorAll("#ops th").forEach(function (th) {{
  th.addEventListener("click", function () {{
    var col = +th.dataset.col, body = document.querySelector("#ops tbody");
    var asc = th.dataset.dir !== "asc"; th.dataset.dir = asc ? "asc" : "desc";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {{
      var x = a.cells[col].textContent, y = b.cells[col].textContent;
      if (x === "" || y === "") {{ return (x === "") - (y === ""); }}  // empty cells last, either way
      var nx = parseFloat(x), ny = parseFloat(y);
      var r = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return asc ? r : -r;
    }});
    rows.forEach(function (r) {{ body.appendChild(r); }});
  }});
}});
document.getElementById("filter").addEventListener("input", function (ev) {{
  var q = ev.target.value.trim().toLowerCase(), shown = 0;
  document.querySelectorAll("#ops tbody tr, #addable tbody tr").forEach(function (tr) {{
    var hit = q === "" || tr.textContent.toLowerCase().indexOf(q) >= 0;
    tr.hidden = !hit;
    if (hit && tr.parentNode.parentNode.id === "ops") {{ shown += 1; }}
  }});
  document.getElementById("shown").textContent = shown;
}});
</script>
</body></html>
"""

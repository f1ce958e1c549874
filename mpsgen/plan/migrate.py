"""Plan ``migrate-from-mpsgraph``: move an op whose MPS rows dispatch to a separate MPSGraph
kernel (``MPS: acosh_out_mps``) onto a Metal kernel behind the CPU/CUDA one, and list the
ops of a tree that could be moved.

The Metal side (functor, registrations, host kernel, xfail and OpInfo clean-up) is
``newop.plan_new_op`` with the yaml left to this module; the yaml rows move with
``edits.native_functions.migrate_rows`` and the MPSGraph code leaves the ``.mm`` files with
``edits.mpsgraph.remove_impls``. Everything lands in one changeset.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from mpsgen.patch.changeset import Changeset
from mpsgen.edits import add_include
from mpsgen.edits import mpsgraph as mpsgraph_edit
from mpsgen.edits import native_functions as yaml_edit
from mpsgen.core.errors import Refused
from mpsgen.plan.newop import plan_new_op
from mpsgen.tree.op_facts import no_host_kernel_refusal, rows_of_op
from mpsgen.spec.reduction import reduction_evidence
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import OpSpec
from mpsgen.core.text import columns, shorten
from mpsgen.tree import NATIVE_FUNCTIONS, OPERATIONS_DIR, PytorchTree
from mpsgen.tree.host import host_file
from mpsgen.tree.mm import MPSGraphImpl, mpsgraph_definitions, scan_mm
from mpsgen.tree.resolver import StubResolver, host_kernel
from mpsgen.tree.source import close_bracket, match_close
from mpsgen.tree.schema import guess_kind, shape_problem
from mpsgen.tree.schema import schema_args as _args
from mpsgen.tree.legacy import LegacyRow, legacy_rows
from mpsgen.tree.native_yaml import NativeFunction, NativeFunctions, read_native_functions, scanned_native_functions

# ---------------------------------------------------------------------------------------------
# Rows with a separate MPS kernel


def mps_on_host_kernel(e: NativeFunction) -> bool:
    """MPS runs the CPU/CUDA kernel: ``CPU, CUDA, MPS: k``, or ``MPS: k`` beside ``CPU: k`` / ``CUDA: k``."""
    host = {d.kernel for d in e.dispatch if "CPU" in d.keys or "CUDA" in d.keys}
    return any(d.has_mps and (d.shared_cpu_cuda or d.kernel in host) for d in e.dispatch)


# ---------------------------------------------------------------------------------------------
# Finding the MPSGraph implementations


@dataclass(frozen=True)
class FoundImpl:
    path: str
    impl: MPSGraphImpl

    @property
    def where(self) -> str:
        return f"{self.path}:{self.impl.start_line + 1}"


_TORCH_CHECK = re.compile(r"\bTORCH_CHECK\s*\(")


def input_checks(text: str, impl: MPSGraphImpl) -> list[tuple[int, str]]:
    """(1-based line, text) of each TORCH_CHECK in an MPSGraph implementation's lines."""
    lines = text.split("\n")
    body = "\n".join(lines[impl.start_line : impl.end_line + 1])
    out = []
    for m in _TORCH_CHECK.finditer(body):
        close = close_bracket(body, m.end() - 1)
        end = close + 1 if close >= 0 else len(body)
        out.append((impl.start_line + body.count("\n", 0, m.start()) + 1, " ".join(body[m.start() : end].split())))
    return out


def mm_files(tree: PytorchTree) -> list[str]:
    return tree.list_files(OPERATIONS_DIR, (".mm",), recursive=True)


def remove_mpsgraph_impls(changeset: Changeset, rel: str, text: str, impls, op_names) -> str:
    """``text`` (the .mm ``rel``) without the MPSGraph kernels ``impls`` and what only they
    used, the removal noted in ``changeset``; refused when other code of the file still calls one."""
    try:
        new_text, removal = mpsgraph_edit.remove_impls(text, sorted(impls, key=lambda i: i.start_line), op_names)
    except mpsgraph_edit.StillUsed as exc:
        raise Refused(
            f"{rel}:{exc.line} still calls {exc.name}, the MPSGraph kernel this migration removes.",
            hint="Make that code call the op (at::...) instead, then run again.",
        ) from None
    changeset.notes.append(removal.describe(rel))
    return new_text


def find_impls(tree: PytorchTree, kernels: set[str]) -> dict[str, list[FoundImpl]]:
    """kernel -> its MPSGraph definitions under mps/operations, with their extents: the files
    whose host facts define one (as :func:`find_impl_sites` reads them) are scanned whole (``scan_mm``)."""
    found: dict[str, list[FoundImpl]] = {}
    for rel in mm_files(tree) if kernels else ():
        text = tree.read(rel, what="MPSGraph source").text
        if not any(d.name in kernels for d, _form in mpsgraph_definitions(host_file(rel, text))):
            continue
        for impl in scan_mm(text).impls:
            if impl.kernel in kernels:
                found.setdefault(impl.kernel, []).append(FoundImpl(rel, impl))
    return found


@dataclass(frozen=True)
class ImplSite:
    """Where an MPSGraph kernel is defined, as a listing shows it (its extent, which a removal
    needs, is :func:`find_impls`'s to read)."""

    path: str
    kernel: str
    form: str  # as MPSGraphImpl.form
    line: int  # 1-based


def find_impl_sites(tree: PytorchTree, kernels: set[str]) -> dict[str, list[ImplSite]]:
    """kernel -> where its MPSGraph definitions are under mps/operations, from the host facts
    check's index reads too (no extents: ``migrate --list`` and coverage name the place only)."""
    found: dict[str, list[ImplSite]] = {}
    for rel in mm_files(tree) if kernels else ():
        for d, form in mpsgraph_definitions(host_file(rel, tree.read(rel, what="MPSGraph source").text)):
            if d.name in kernels:
                found.setdefault(d.name, []).append(ImplSite(rel, d.name, form, d.line))
    return found


# ---------------------------------------------------------------------------------------------
# The planner


def _already_on_metal(tree: PytorchTree, spec: OpSpec, table: NativeFunctions, of_op: list[NativeFunction]) -> Changeset:
    """No row of the op has a separate MPS kernel: nothing to do if mpsgen's Metal parts are all
    in place (a re-run after a migration), else refuse."""
    on_shared = [e for e in of_op if mps_on_host_kernel(e)]
    if not on_shared:
        raise Refused(
            f"{spec.name} has no MPS kernel to migrate: no row of it in {NATIVE_FUNCTIONS} dispatches MPS.",
            hint=f"Use `mpsgen new-op {spec.name}` to add a Metal kernel.",
        )
    first = on_shared[0]
    mps_line = next(d for d in first.dispatch if d.has_mps)
    where = f"{NATIVE_FUNCTIONS}:{mps_line.line}"
    try:  # what new-op's Metal, host and test edits would still do here
        fitting = [e for e in on_shared if shape_problem(e.func, spec.kind, spec.operands) is None]
        check = plan_new_op(tree, spec, yaml_mode="migrate", table=table, rows=fitting)
    except Refused:
        check = None
    if check is not None and check.empty:
        return Changeset(tree)  # nothing to do
    stale = find_impls(tree, {f"{e.base}_out_mps" for e in on_shared} | {f"{spec.name}_out_mps"})
    leftovers = [f.where for fs in stale.values() for f in fs]
    extra = f" {', '.join(leftovers)} still define(s) an MPSGraph kernel nothing dispatches to; delete it by hand." if leftovers else ""
    raise Refused(
        f"{spec.name} is already on Metal: row {first.name} dispatches MPS to the shared kernel "
        f"{mps_line.kernel} ({where}); there is no MPSGraph kernel to migrate.{extra}",
        hint="Run `mpsgen check` to see what else is inconsistent.",
    )


def plan_migrate(
    tree: PytorchTree, spec: OpSpec, *, partial: bool = False, allow_dtype_loss: bool = False
) -> Changeset:
    if spec.selector is not None:
        return _plan_selector_migration(tree, spec)
    yaml_src, table = read_native_functions(tree)
    of_op = rows_of_op(table, spec.name)  # refuses a name that is no op, with close matches
    if not any(host_kernel(e) for e in of_op):
        raise no_host_kernel_refusal(spec.name, of_op)
    legacy = legacy_rows(of_op)
    names = {e.name for e in of_op}
    for r in spec.rows or ():
        if r not in names:
            raise Refused(f"row {r!r} is not a row of {spec.name} in {NATIVE_FUNCTIONS}.", hint=f"Rows of {spec.name}: {', '.join(sorted(names))}.")
    if not legacy:  # (no row to migrate, whichever rows the spec names: the op is new-op's, or done)
        return _already_on_metal(tree, spec, table, of_op)
    if spec.rows is not None:
        by_name = {r.name: r for r in legacy}
        picked = []
        for r in spec.rows:
            if r not in by_name:
                raise Refused(
                    f"row {r} has no MPS kernel of its own to migrate.",
                    hint=f"Rows with one: {', '.join(sorted(by_name)) or 'none'}.",
                )
            picked.append(by_name[r])
        legacy = picked
    # a row whose schema does not fit the kernel's kind cannot be served by it
    legacy = [
        LegacyRow(r.entry, r.mps, f"its schema does not fit a `{spec.kind}` kernel: {why}")
        if r.problem is None and (why := shape_problem(r.entry.func, spec.kind, spec.operands))
        else r
        for r in legacy
    ]

    blocked = [r for r in legacy if not r.migratable]
    movable = [r for r in legacy if r.migratable]
    if blocked and not partial:
        names = "; ".join(f"{r.name}: {r.problem}" for r in blocked)
        raise Refused(
            f"{len(blocked)} row(s) of {spec.name} cannot be migrated by moving MPS onto the shared kernel line: {names}.",
            hint=(
                f"Fix them by hand and run again, or pass --partial to migrate only "
                f"{', '.join(r.name for r in movable)}." if movable else "Fix them by hand and run again."
            ),
        )
    if not movable:
        names = "; ".join(f"{r.name}: {r.problem}" for r in blocked)
        if any(mps_on_host_kernel(e) for e in of_op):
            # a --partial re-run: the rows that could move did; nothing to do if the Metal side is whole
            done = _already_on_metal(tree, spec, table, of_op)
            done.warnings.extend(f"left {r.name} on {r.mps.kernel} (--partial): {r.problem}." for r in blocked)
            return done
        raise Refused(f"no row of {spec.name} can be migrated ({names}).")

    # -- the MPSGraph implementations, before anything is planned ------------------------
    kernels = {r.mps.kernel for r in movable}
    found = find_impls(tree, kernels)
    missing = sorted(kernels - set(found))
    if missing:
        files = mm_files(tree)
        shown = ", ".join(files) if files else f"(no .mm files under {OPERATIONS_DIR})"
        raise Refused(
            f"cannot find the MPSGraph implementation of {', '.join(missing)} (row "
            f"{', '.join(r.name for r in movable if r.mps.kernel in missing)}): no TORCH_IMPL_FUNC block, "
            f"macro instance or `Tensor& {missing[0]}(...)` function in {shown}.",
            hint="Point --root at the right checkout, or remove the MPS line and its code by hand.",
        )

    companions = _companion_rows(tree, spec, of_op, movable)

    # -- Metal kernel, host kernel and tests: new-op's planner, yaml left to us ----------
    checks = [(f.path, line, check) for fs in found.values() for f in fs for line, check in input_checks(tree.read(f.path).text, f.impl)]
    changeset = plan_new_op(
        tree,
        spec,
        yaml_mode="migrate",
        table=table,
        rows=[r.entry for r in movable] + companions,
        allow_dtype_loss=allow_dtype_loss,
        mpsgraph_checks=tuple(c for _p, _l, c in checks),
    )
    shared = _shared_kernel_bodies(tree, [r.entry for r in movable])
    for path, line, check in checks:
        said = re.findall(r'"((?:[^"\\]|\\.){8,})"', check)  # the check's message, as the shared kernel would word it
        if said and any(said[0] in body for body in shared.values()):
            where = next(w for w, body in shared.items() if said[0] in body)
            changeset.notes.append(f"{path}:{line}: the removed check `{shorten(check, 60)}` is the shared kernel's too ({where})")
            continue
        changeset.warnings.append(
            f"{path}:{line}: the removed MPSGraph code checks `{check}`; carry it over to the Metal path "
            "(or the op's meta function) if it still applies."
        )

    # -- native_functions.yaml ------------------------------------------------------------
    rows = [r.name for r in movable]
    text = yaml_src.text
    if companions:  # a line changes in place: the table's line numbers still hold for migrate_rows
        text = yaml_edit.add_mps_to_rows(text, [e.name for e in companions], table)
    changeset.add(yaml_src, yaml_edit.migrate_rows(text, rows, table))
    changeset.notes.insert(
        0, f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(rows)}; its own MPS line is gone"
    )
    if companions:
        changeset.notes.insert(
            1,
            f"{NATIVE_FUNCTIONS}: MPS joins the shared kernel line of {', '.join(e.name for e in companions)} too "
            "(no MPS kernel before; its CPU/CUDA kernel runs the stub this change registers)",
        )
    for r in blocked:
        changeset.warnings.append(f"left {r.name} on {r.mps.kernel} (--partial): {r.problem}.")

    # -- the MPSGraph code ----------------------------------------------------------------
    by_file: dict[str, list[MPSGraphImpl]] = {}
    for fs in found.values():
        for f in fs:
            by_file.setdefault(f.path, []).append(f.impl)
    op_names = {spec.name} | {e.base for e in of_op}
    for rel in sorted(by_file):
        src = tree.read(rel)
        current = changeset.current_text(src)
        impls = by_file[rel]
        if current != src.text:  # another edit of this plan touched the file: find them again
            impls = [i for i in scan_mm(current).impls if i.kernel in kernels]
        changeset.add(src, remove_mpsgraph_impls(changeset, rel, current, impls, op_names))
    # rows whose MPS dispatch came or went (companions) may change the AOTI shim header
    from mpsgen.plan.aoti import sync_c_shim  # (local: explain loads the AOTI shim's machinery only when a plan gets this far)

    sync_c_shim(changeset)
    return changeset


def _companion_rows(tree: PytorchTree, spec: OpSpec, of_op: list[NativeFunction], movable: list[LegacyRow]) -> list[NativeFunction]:
    """Rows of the op with a shared ``CPU, CUDA: k`` line and no MPS kernel at all (logit's
    in-place ``logit_``) whose kernel runs the same stub as the rows being migrated: once that
    stub has an MPS kernel they run on MPS by joining their line, as new-op would have them.
    Only with the default rows, and only where the stub is read the same for every row."""
    if spec.rows is not None:
        return []
    candidates = [e for e in of_op if e.shared_entry is not None and not e.mps_entries and shape_problem(e.func, spec.kind, spec.operands) is None]
    if not candidates:
        return []
    resolver = StubResolver.of(tree)
    stubs = {resolver.resolve(r.entry).stub for r in movable if host_kernel(r.entry)}
    if len(stubs) != 1 or None in stubs:
        return []
    return [e for e in candidates if resolver.resolve(e).stub in stubs]


# ---------------------------------------------------------------------------------------------
# Candidates (--list)

_REDUCING = {"dim", "dims", "reduction", "keepdim"}
_INHERITS = re.compile(r"^  structured_inherits:\s*TensorIteratorBase", re.M)


@dataclass
class Candidate:
    op: str
    kind: str
    elementwise: bool
    structured: bool
    tags: tuple[str, ...]
    spec: str | None
    rows: list[dict] = field(default_factory=list)
    # why the bare `mpsgen migrate-from-mpsgraph OP` would not go through although every row
    # could move (or the command that would): from planning it
    blocker: str | None = None

    @property
    def migratable(self) -> bool:
        return self.blocker is None and all(r["problem"] is None and r["impl"] is not None for r in self.rows)

    def as_dict(self) -> dict:
        return {
            "op": self.op,
            "kind": self.kind,
            "elementwise": self.elementwise,
            "structured": self.structured,
            "tags": list(self.tags),
            "spec": self.spec,
            "migratable": self.migratable,
            "blocker": self.blocker,
            "rows": self.rows,
        }


def _op_of(base: str, bases: set[str]) -> str:
    return base[:-1] if base.endswith("_") and base[:-1] in bases else base


def _plan_selector_migration(tree: PytorchTree, spec: OpSpec) -> Changeset:
    """An op whose CPU and CUDA kernels differ (gelu_out_cpu, gelu_out_cuda) keeps its own
    ``MPS: <x>_mps`` row; its MPSGraph body becomes a call of the stub (``GeluKernel(kMPS,
    *this, get_gelutype_enum(approximate))``), whose Metal kernel the selector picks, as
    upstream migrated gelu. The yaml stays; what only the old body used goes."""
    _yaml_src, table = read_native_functions(tree)
    of_op = rows_of_op(table, spec.name)
    own = [e for e in of_op if any(not d.shared_cpu_cuda for d in e.mps_entries)]
    if not own:
        raise Refused(
            f"{spec.name} has no MPS kernel of its own in {NATIVE_FUNCTIONS} (no `MPS: {spec.name}_out_mps` row): "
            "nothing to migrate.",
            hint=f"`mpsgen explain {spec.name}` shows how it runs on MPS.",
        )
    kernels = {d.kernel for e in own for d in e.mps_entries if not d.shared_cpu_cuda}
    found = find_impls(tree, kernels)
    missing = sorted(kernels - set(found))
    if missing:
        raise Refused(
            f"cannot find the MPS implementation of {', '.join(missing)} under {OPERATIONS_DIR}.",
            hint="Point --root at the right checkout.",
        )
    call = f"{spec.stub}(kMPS, *this, {spec.selector.parse}({spec.selector.argument}));"
    by_file: dict[str, list[MPSGraphImpl]] = {}
    for fs in found.values():
        for f in fs:
            if f.impl.form != "impl_func":
                raise Refused(
                    f"{f.where}: {f.impl.kernel} is a {f.impl.form.replace('_', ' ')}, not a TORCH_IMPL_FUNC block: "
                    f"only a structured kernel (an iterator, *this) can call {spec.stub}.",
                    hint="Migrate it by hand.",
                )
            by_file.setdefault(f.path, []).append(f.impl)
    text_of = {rel: tree.read(rel).text for rel in by_file}
    if all(call in text_of[rel] for rel in by_file):
        return Changeset(tree)  # already migrated (a re-run)
    changeset = plan_new_op(tree, spec, yaml_mode="migrate", table=table, rows=own)
    stub_header = StubResolver.of(tree).stubs.get(spec.stub, ("",))[0]
    for rel, impls in by_file.items():
        text = text_of[rel]
        replacements = {i.kernel: mpsgraph_edit.impl_header(text, i) + f"\n  {call}\n}}" for i in impls}
        new, removal = mpsgraph_edit.remove_impls(text, impls, set(), replacements)
        if stub_header.startswith("aten/src/"):
            new = add_include(new, stub_header[len("aten/src/") :])
        changeset.add(tree.read(rel), new)
        extra = "; ".join(p for p in (", ".join(removal.helpers), ", ".join(removal.macros)) if p)
        changeset.notes.append(
            f"{rel}: {', '.join(i.kernel for i in impls)} now calls {spec.stub}" + (f"; removed {extra}" if extra else "")
        )
    return changeset


def _shared_kernel_bodies(tree: PytorchTree, rows: list[NativeFunction]) -> dict[str, str]:
    """``path:line`` -> body of the CPU/CUDA kernel each row's MPS dispatch joins, where a
    .cpp of the tree defines it (what it checks itself need not move to the Metal path)."""
    out = {}
    resolver = StubResolver.of(tree)
    for e in rows:
        d = resolver.resolve(e).definition
        if d is None or d.where in out:
            continue
        text = tree.read(d.path).text
        start = sum(len(ln) + 1 for ln in text.split("\n")[: d.line - 1])
        brace = text.find("{", start)
        end = match_close(text, brace) if brace >= 0 else -1
        if end > 0:
            out[d.where] = text[brace:end]
    return out


def list_candidates(tree: PytorchTree) -> list[Candidate]:
    """Ops with a row whose MPS dispatch is a separate kernel beside a CPU/CUDA one (whether the
    bare command goes through is ``explain.migration_candidates``'s to say: it plans each)."""
    yaml_src, table = scanned_native_functions(tree)
    text = yaml_src.text
    bases = {e.base for e in table.entries}
    groups: dict[str, list[NativeFunction]] = {}
    for e in table.entries:
        groups.setdefault(_op_of(e.base, bases), []).append(e)
    lines = text.split("\n")
    specs_dir = None
    try:
        specs_dir = resource_dir("specs")
    except FileNotFoundError:  # pragma: no cover
        pass

    picked: list[tuple[str, list[NativeFunction], list[LegacyRow]]] = []
    kernels: set[str] = set()
    for op, rows in groups.items():
        legacy = legacy_rows(rows)
        if legacy:
            picked.append((op, rows, legacy))
            kernels.update(r.mps.kernel for r in legacy)
    impls = find_impl_sites(tree, kernels)

    out = []
    for op, rows, legacy in picked:
        # the tags of the legacy rows and of the rows that delegate to them (not of every overload:
        # max.other is pointwise, max.dim_max is a reduction)
        names = {r.name for r in legacy}
        family = [e for e in rows if e.name in names or e.structured_delegate in names]
        tags = tuple(dict.fromkeys(t for e in family for t in e.tags))
        inherits = any(_INHERITS.search("\n".join(lines[r.entry.start_line - 1 : r.entry.end_line])) for r in legacy)
        # a TensorIterator op is elementwise unless it reduces over a dim (mse_loss, glu)
        reduces = any(n in _REDUCING for r in legacy for _t, n in _args(r.entry.func))
        elementwise = ("pointwise" in tags or (inherits and not reduces)) and "reduction" not in tags
        kinds = [guess_kind(r.entry.func) for r in legacy]
        kind = next((k for k in kinds if k != "other"), "other") if elementwise else "other"
        if not elementwise and "pointwise" not in tags and any(reduction_evidence(e.func, e.tags) for e in family):
            kind = "reduction"  # (its kernel reduces: mpsgen try runs the reduction specs of specs/reductions/)
        spec = f"specs/{op}.yaml" if specs_dir is not None and (specs_dir / f"{op}.yaml").is_file() else None
        selector = False
        if spec is not None and elementwise:  # the shipped spec knows better (threshold's iterator is binary)
            spec_text = (specs_dir / f"{op}.yaml").read_text(encoding="utf-8")
            said = re.search(r"^kind:\s*(\w+)", spec_text, re.M)
            kind = said.group(1) if said else kind
            # a selector op keeps its own row and calls its stub: its CPU and CUDA kernels may differ
            selector = re.search(r"^selector:", spec_text, re.M) is not None
        c = Candidate(op, kind, elementwise, any(r.entry.structured for r in legacy), tags, spec)
        for r, k in zip(legacy, kinds):
            found = impls.get(r.mps.kernel, [])
            c.rows.append(
                {
                    "row": r.name,
                    "line": r.entry.start_line,
                    "shared": r.entry.shared_entry.kernel if r.entry.shared_entry else None,
                    "mps": r.mps.kernel,
                    "kind": k,
                    "structured": r.entry.structured,
                    "problem": None if selector and r.problem and r.problem.startswith("CPU and CUDA use different") else r.problem,
                    "impl": {"file": found[0].path, "line": found[0].line, "form": found[0].form}
                    if found
                    else None,
                }
            )
        out.append(c)
    out.sort(key=lambda c: (not c.elementwise, c.op))
    return out


def _impl_text(c: Candidate) -> str:
    """Where the MPSGraph code is: the first place, and how many more (``--format json`` has them)."""
    shown = []
    for r in c.rows:
        if r["impl"] is None:
            shown.append("(not found)")
        else:
            shown.append(f"{r['impl']['file'].rsplit('/', 1)[-1]}:{r['impl']['line']}")
    shown = list(dict.fromkeys(shown))
    return shown[0] + (f" +{len(shown) - 1}" if len(shown) > 1 else "") if shown else "-"


def _note(c: Candidate) -> str:
    notes = []
    if not c.structured:
        notes.append("not structured")
    for r in c.rows:
        if r["problem"]:
            notes.append(f"{r['row']}: {r['problem'].split(' (')[0].split(';')[0]}")
        elif r["impl"] is None:
            notes.append(f"{r['row']}: MPSGraph code not found")
    if c.blocker:
        notes.append(c.blocker.split("   (")[0])
    return "; ".join(notes) or "ready"


def format_table(candidates: list[Candidate], width: int = 100) -> str:
    """Aligned columns within ``width``, one op a line (a name too long for its column on a
    line of its own), what an op needs on the line below it, then counts. The row names and
    tags are in ``--format json``."""
    header = ("OP", "KIND", "ROWS", "MPSGRAPH", "SPEC", "STATE")
    body = [
        (c.op, c.kind, str(len(c.rows)), _impl_text(c), "yes" if c.spec else "-", _state(c))
        for c in candidates
    ]
    table = columns(header, body, width=width, right=frozenset({2}), indent=0)
    lines = table[:1]
    rest = iter(table[1:])
    for c in candidates:
        line = next(rest)
        lines.append(line)
        if line == c.op:  # the name stood on its own line: its row follows
            lines.append(next(rest))
        note = _note(c)
        if note != "ready":
            lines += textwrap.wrap(note, width, initial_indent="    ", subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
    lines.append("")
    lines += textwrap.wrap(summary(candidates), width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(line.rstrip() for line in lines)


def _state(c: Candidate) -> str:
    if c.kind == "reduction":
        return "a reduction"
    if not c.elementwise:
        return "not elementwise"
    return "ready" if c.migratable and not c.blocker else "needs work"


def summary(candidates: list[Candidate]) -> str:
    elementwise = [c for c in candidates if c.elementwise]
    kinds: dict[str, int] = {}
    for c in elementwise:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    ready = sum(1 for c in candidates if c.migratable and c.elementwise)
    return (
        f"{len(candidates)} candidate(s): {len(elementwise)} elementwise ({by_kind or 'none'}), "
        f"{len(candidates) - len(elementwise)} not elementwise; {ready} elementwise op(s) ready to migrate."
    )

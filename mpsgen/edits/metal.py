"""Edit a ``kernels/*Kernel.metal`` file: add an op's functor and its registrations.

Placement follows the file: the functor goes after a related functor (same name prefix)
or after the last functor before the registration block, never inside a definition;
bulk-macro lines are appended to the macro body with its backslashes re-aligned;
registration statements join the block of statements that use the same macros.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.edits import backslashes_aligned, insert_lines, metal_statement, realign_backslashes
from mpsgen.spec.registrations import VEC2, RegistrationPlan
from mpsgen.tree.metal import MacroCall, MetalSource, scan_metal


@dataclass(frozen=True)
class MetalAddition:
    op: str
    functor: str | None  # the whole ``struct <op>_functor {...};`` text, or None to keep an existing one
    registrations: RegistrationPlan


def _related_functor(op: str, source: MetalSource, before_line: int) -> int | None:
    """End line of the last functor that shares the op's leading name token."""
    head = op.split("_")[0]
    if len(head) < 3:
        return None
    best = None
    for name, f in source.functors.items():
        if name == op or f.end_line >= before_line:
            continue
        if name.split("_")[0] == head or name.startswith(op) or op.startswith(name):
            if best is None or f.end_line > best:
                best = f.end_line
    return best


def _is_registration(call: MacroCall, macro_names: set[str]) -> bool:
    return call.macro.startswith("REGISTER_") or call.macro in macro_names


def _group_end(calls: list[MacroCall], idx: int) -> int:
    """Index of the last call in the run of consecutive statements registering the same op."""
    op = calls[idx].args[0] if calls[idx].args else None
    j = idx
    while (
        j + 1 < len(calls)
        and calls[j + 1].start_line == calls[j].end_line + 1
        and calls[j + 1].args
        and calls[j + 1].args[0] == op
    ):
        j += 1
    return j


def _group_start(calls: list[MacroCall], idx: int) -> int:
    op = calls[idx].args[0] if calls[idx].args else None
    j = idx
    while j > 0 and calls[j - 1].end_line == calls[j].start_line - 1 and calls[j - 1].args and calls[j - 1].args[0] == op:
        j -= 1
    return j


def _anchor(calls: list[MacroCall], wanted_macros: set[str], want_complex: bool, lines: list[str]) -> tuple[int, bool] | None:
    """(line after which to insert, whether the file separates op groups by blank lines)."""
    candidates = [
        i
        for i, c in enumerate(calls)
        if c.macro in wanted_macros and bool(set(c.args[1:]) & VEC2) == want_complex and c.args
    ]
    if not candidates:
        return None
    # prefer a run of several lines for one op (a real block, not a stray line)
    multi = [i for i in candidates if _group_end(calls, _group_start(calls, i)) > _group_start(calls, i)]
    idx = (multi or candidates)[-1]
    first, last = _group_start(calls, idx), _group_end(calls, idx)
    start, end = calls[first].start_line, calls[last].end_line
    grouped = (
        last > first
        and (start == 0 or not lines[start - 1].strip() or lines[start - 1].lstrip().startswith("//"))
        and (end + 1 >= len(lines) or not lines[end + 1].strip())
    )
    return end, grouped


def add_op(text: str, addition: MetalAddition) -> str:
    source = scan_metal(text)
    lines = text.split("\n")
    plan = addition.registrations
    insertions: list[tuple[int, int, list[str]]] = []
    calls = list(source.calls)
    reg_calls = [c for c in calls if _is_registration(c, set(source.macros))]
    reg_defs = [
        d.start_line
        for d in source.macros.values()
        if d.name.startswith(("REGISTER_", "INSTANTIATE_")) and d.params is not None
    ]
    first_reg = min([c.start_line for c in reg_calls] + reg_defs + [len(lines)])

    # -- the functor ------------------------------------------------------------------------
    if addition.functor is not None and addition.op not in source.functors:
        block = addition.functor.rstrip("\n").split("\n")
        after = _related_functor(addition.op, source, first_reg)
        if after is None:
            before = [f.end_line for f in source.functors.values() if f.end_line < first_reg]
            after = max(before) if before else None
        if after is None:
            # no functor yet: just above the registration block and the comment that heads it
            at = first_reg
            while at > 0 and lines[at - 1].lstrip().startswith("//"):
                at -= 1
            insertions.append((at - 1, 0, block + [""]))
        else:
            insertions.append((after, 0, [""] + block))

    # -- lines inside bulk macros -------------------------------------------------------------
    for macro_name, body_line in plan.bulk_lines:
        d = source.macros[macro_name]
        old = lines[d.start_line : d.end_line + 1]
        indent = old[-1][: len(old[-1]) - len(old[-1].lstrip())] or "  "
        last = old[-1].rstrip()
        if not last.endswith(";"):
            last += ";"
        new = old[:-1] + [last + " \\", indent + body_line]
        if backslashes_aligned(old):
            new = realign_backslashes(new)
        # keep line indices stable for the other insertions: the old last line carries the new one
        for k in range(len(old) - 1):
            lines[d.start_line + k] = new[k]
        lines[d.end_line] = new[-2] + "\n" + new[-1]

    # -- top-level statements -----------------------------------------------------------------
    def macros_of(stmts: tuple[str, ...]) -> set[str]:
        return {s.split("(", 1)[0] for s in stmts}

    def place(stmts: tuple[str, ...], want_complex: bool, seq: int) -> int | None:
        if not stmts:
            return None
        found = _anchor(calls, macros_of(stmts), want_complex, lines)
        if found is None:
            found = _anchor(calls, {c.macro for c in reg_calls}, want_complex, lines)
        if found is None:
            return None
        end, grouped = found
        insertions.append((end, seq, ([""] if grouped else []) + list(stmts)))
        return end

    plan = RegistrationPlan(
        tuple(metal_statement(s) for s in plan.statements),
        tuple(metal_statement(s) for s in plan.complex_statements),
        plan.bulk_lines,
        plan.already,
    )
    real_at = place(plan.statements, False, 1)
    complex_at = place(plan.complex_statements, True, 2)
    if plan.complex_statements and complex_at is None:
        if real_at is not None:
            insertions.append((real_at, 2, list(plan.complex_statements)))
        else:
            plan_lines = list(plan.complex_statements)
            insertions.append((len(lines) - 1 if lines[-1] else len(lines) - 2, 2, [""] + plan_lines))
    if plan.statements and real_at is None:
        tail = len(lines) - 1 if lines[-1] else len(lines) - 2
        insertions.append((tail, 1, [""] + list(plan.statements)))

    return "\n".join(insert_lines(lines, insertions))

"""Rules on the AOTInductor C shim: ``c_shim_mps.h`` against what torchgen generates from the
fallback ops and native_functions.yaml (MPS014; the facts are :mod:`mpsgen.tree.aoti`'s).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from mpsgen.check.model import ERROR, Finding, rule
from mpsgen.tree import aoti
from mpsgen.tree.facts import Facts


# -- MPS014 -------------------------------------------------------------------------------
@rule(
    "MPS014",
    "stale-aoti-c-shim",
    ERROR,
    "c_shim_mps.h does not declare what torchgen generates for the AOTInductor fallback ops",
    """
torchgen writes `torch/csrc/inductor/aoti_torch/generated/c_shim_mps.h` from
`torchgen/aoti/fallback_ops.py` and native_functions.yaml, and the build fails when the
checked-in header differs from what it generates. For each op of `inductor_fallback_ops`
whose row dispatches MPS, or delegates (`structured_delegate:`) to a structured out row that
does, torchgen declares `aoti_torch_mps_<op>[_<overload>]` (and `_v<N>` for each later
version of the entry, inside `#if TORCH_FEATURE_VERSION >= <since>` when the entry says
`since`); without an MPS kernel it falls back to the op's composite kernel
(CompositeExplicitAutograd, ...NonFunctional, CompositeImplicitAutograd, or no dispatch table
at all), and declares nothing for an op with neither, or whose schema has no C form (a
`Tensor[]` return, a `Dimname` argument). Reported: a declaration missing for such an op
(usually: MPS was just given to a fallback op), at the yaml line that gives it the kernel;
a declaration torchgen would not write (the op lost its MPS kernel, or left the list), or
one under another version guard, at the header line.

Fix: run `python torchgen/gen.py --update-aoti-c-shim` at the top of the checkout and commit
the header with the change (`mpsgen new-op` does this itself for the ops it adds).
""",
)
def stale_aoti_shim(f: Facts) -> Iterator[Finding]:
    tree = f.index.tree
    if not (tree.exists(aoti.FALLBACK_OPS) and tree.exists(aoti.C_SHIM_MPS)):
        return
    fallback = aoti.read_fallback_ops(f.index.read(aoti.FALLBACK_OPS))
    if fallback is None:
        return
    header = aoti.C_SHIM_MPS
    declarations = aoti.read_declarations(f.index.read(header))
    declared = {d.name: d for d in declarations}
    owners: dict[str, tuple[aoti.Expected, str | None]] = {}
    for e in aoti.expected_shims(fallback, f.index.read(f.yaml)):
        for name, since in e.functions:
            owners[name] = (e, since)
        if not e.declared:
            continue
        for name, since in e.functions:
            d = declared.get(name)
            where = (f.yaml, e.site) if e.backend == "MPS" else (aoti.FALLBACK_OPS, e.op.line)
            sites = partial(_lines_at, ((f.yaml, e.site), (aoti.FALLBACK_OPS, e.op.line), (header, d.line if d else 0)))
            if d is None:
                yield Finding(
                    *where, 0, "MPS014", ERROR,
                    f"{e.op.key} ({aoti.FALLBACK_OPS}:{e.op.line}) {_runs_on(e)}, but {header} does not declare "
                    f"aoti_torch_mps_{name}: the build fails until `{aoti.REGENERATE}` adds it",
                    symbols=(e.op.key, f"aoti_torch_mps_{name}"),
                    locate=sites,
                )
            elif d.guard != since:
                yield Finding(
                    header, d.line, 0, "MPS014", ERROR,
                    f"aoti_torch_mps_{name} is declared {_guard(d.guard)}, but torchgen writes it {_guard(since)} "
                    f"({e.op.key} in {aoti.FALLBACK_OPS}:{e.op.line})",
                    symbols=(e.op.key, f"aoti_torch_mps_{name}"),
                    locate=sites,
                )
    whole = not any(aoti.shim_functions(op) is None and aoti.row_name(op.key) for op in fallback.values())
    for d in declarations:
        e, _since = owners.get(d.name, (None, None))
        if e is None:
            if whole:
                yield Finding(
                    header, d.line, 0, "MPS014", ERROR,
                    f"aoti_torch_mps_{d.name} is declared, but no op of inductor_fallback_ops ({aoti.FALLBACK_OPS}) "
                    "makes it: torchgen does not generate it",
                    symbols=(f"aoti_torch_mps_{d.name}",),
                )
            continue
        if e.declared is not False:
            continue
        if e.row is None:
            why = f"{e.op.key} is no op of {f.yaml}"
        elif e.backend is None:
            through = f", nor does {e.row.delegate}, which it delegates to," if e.row.delegate else ""
            why = f"{e.row.name} dispatches no MPS{through} and has no composite kernel"
        else:
            why = f"torchgen cannot write {e.row.name}'s schema in C"
        yield Finding(
            header, d.line, 0, "MPS014", ERROR,
            f"aoti_torch_mps_{d.name} is declared, but {why}: torchgen does not generate it "
            f"(`{aoti.REGENERATE}` removes it)",
            symbols=(e.op.key, f"aoti_torch_mps_{d.name}"),
            locate=partial(_lines_at, (((f.yaml, e.site),) if e.row else ()) + ((aoti.FALLBACK_OPS, e.op.line),)),
        )


def _lines_at(sites: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    return list(sites)


def _runs_on(e) -> str:
    """How the fallback op of ``e`` gets the kernel its MPS shim calls."""
    row = e.row
    if e.backend != "MPS":
        made = " (generated by its autogen:)" if e.generated else ""
        return f"has a {e.backend} kernel{made}, which torchgen's MPS shim calls"
    if "MPS" in row.keys:
        return f"has an MPS kernel (its row {row.name} dispatches MPS)"
    return f"has an MPS kernel (its row {row.name} delegates to {row.delegate}, which dispatches MPS)"


def _guard(since: str | None) -> str:
    return f"under `#if TORCH_FEATURE_VERSION >= {since}`" if since else "without a version guard"

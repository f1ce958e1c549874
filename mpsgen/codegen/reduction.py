"""The Metal side of a reduction spec: the params struct, the general kernel (one threadgroup
per output element) and its ``host_name`` registrations, written against the reduction
helpers the tree's ``c10/metal/reduction_utils.h`` has.

The helpers are read from the tree, not assumed: the SIMD-group helper an own op names
(``simd_prod``), an op struct the spec names (``MaxOp``), ``welford_combine`` and the
signature of ``threadgroup_welford_combine`` (2.13.0: ``(data, size)``, every thread folding
the partials in turn; 2.14.1: ``(data, idx, size)``, a tree over the threads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.core.errors import Refused
from mpsgen.core.render import render
from mpsgen.metal import SCALAR_TYPES
from mpsgen.spec.reduction import OwnOp, ReductionSpec
from mpsgen.tree.source import mask_c_comments_and_strings

REDUCTION_UTILS = "c10/metal/reduction_utils.h"


@dataclass(frozen=True)
class ReductionHelpers:
    """What a tree's ``c10/metal/reduction_utils.h`` offers a reduction kernel."""

    functions: frozenset[str]  # simd_sum, simd_prod, welford_combine, threadgroup_sum, ...
    structs: frozenset[str]  # MaxOp, MinOp (SumOp, ProdOp where the tree has them)
    welford_takes_index: bool | None  # threadgroup_welford_combine(data, idx, size)? None: absent


def read_helpers(text: str) -> ReductionHelpers:
    masked = mask_c_comments_and_strings(text)
    # definitions: a name, its parameter list, then a body (a call is followed by ; or ) instead)
    functions = frozenset(re.findall(r"(?<![\w:.])(simd_\w+|threadgroup_\w+|welford_\w+)\s*\((?:[^()]|\([^()]*\))*\)\s*\{", masked))
    structs = frozenset(re.findall(r"^struct\s+(\w+Op)\s*\{", masked, re.M))
    m = re.search(r"\bthreadgroup_welford_combine\s*\(([^)]*)\)\s*\{", masked)
    takes_index = None
    if m:
        params = [p.strip() for p in m.group(1).split(",") if p.strip()]
        takes_index = len(params) == 3
    return ReductionHelpers(functions, structs, takes_index)


def helper_problems(spec: ReductionSpec, helpers: ReductionHelpers, where: str) -> list[str]:
    """What the spec needs that the tree's header lacks (each a sentence naming the header)."""
    problems = []
    if isinstance(spec.reduce, OwnOp) and spec.reduce.simd not in helpers.functions:
        problems.append(f"{where} has no {spec.reduce.simd}, the SIMD-group helper the spec's op reduces with")
    elif isinstance(spec.reduce, str) and not spec.welford and spec.reduce not in helpers.structs:
        known = ", ".join(sorted(helpers.structs)) or "none"
        problems.append(f"{where} has no op struct {spec.reduce} (it has: {known}); give the op's identity and combine in the spec instead")
    if spec.welford:
        if "welford_combine" not in helpers.functions or helpers.welford_takes_index is None:
            problems.append(f"{where} has no welford_combine / threadgroup_welford_combine to reduce Welford partials with")
    return problems


def params_header(spec: ReductionSpec) -> str:
    return render("reduction/params.h.j2", spec=spec)


def kernel_source(spec: ReductionSpec, helpers: ReductionHelpers, where: str = REDUCTION_UTILS) -> str:
    """The op struct (an own op), the offset helper and the kernel template (no registrations)."""
    problems = helper_problems(spec, helpers, where)
    if problems:
        raise Refused(f"{spec.source or spec.stub}: " + "; ".join(problems) + ".")
    welford_args = "shared, tid, nsimd" if helpers.welford_takes_index else "shared, nsimd"
    return render(
        "reduction/kernel.metal.j2", spec=spec, own_op=spec.reduce if isinstance(spec.reduce, OwnOp) else None,
        welford_args=welford_args, finalize_lines=[ln.strip() for ln in spec.finalize.splitlines() if ln.strip()],
    )


def registration_macro(spec: ReductionSpec) -> str:
    return f"REGISTER_{spec.kernel.upper()}_REDUCTION"


def registrations(spec: ReductionSpec) -> str:
    return render("reduction/registrations.metal.j2", spec=spec, macro=registration_macro(spec))


def threadgroup_size(reduction_size: int, limit: int = 1024) -> int:
    """Threads per threadgroup as the host picks them: enough whole SIMD-groups to give every
    thread one element, at most ``limit`` (the pipeline's maxTotalThreadsPerThreadgroup)."""
    return max(32, min(limit, (reduction_size + 31) // 32 * 32))


def host_function_name(spec: ReductionSpec) -> str:
    return f"{spec.kernel}_mps_kernel"


def accepted_dtypes(spec: ReductionSpec) -> list[tuple[str, str]]:
    """(input ScalarType, the C++ condition on ``output`` its registered pairs make) per input
    dtype of ``spec.dtypes``: the host's check that a kernel exists for the pair asked for (a
    pair the spec leaves out, as ``--allow-dtype-loss`` allows, is refused with its dtypes,
    not left to a pipeline lookup that fails on the Mac)."""
    outs: dict[str, list[str]] = {}
    for ti, to in spec.dtypes:
        outs.setdefault(SCALAR_TYPES[ti], []).append(f"output == {SCALAR_TYPES[to]}")
    return [(ti, " || ".join(conditions)) for ti, conditions in outs.items()]


def host_text(spec: ReductionSpec, metal_name: str = "ReduceOps.metal") -> str:
    """The host kernel of the stub (in ``namespace mps``) and its ``REGISTER_DISPATCH``: it
    takes the stub's reduction iterator (``iter.input(0)``, ``iter.output(k)``: keepdim-shaped,
    the reduced dims those whose sizes differ), fills what the shared CPU path fills for an empty
    reduction, refuses offsets past 32 bits with an explicit error, and dispatches one
    threadgroup of whole SIMD-groups per output element, as ``try`` runs the kernel. A second
    output is bound (and written) only when the iterator has one: the first is bound twice
    otherwise."""
    outputs = len(spec.outputs)
    types = {"double": "double", "bool": "bool", "int64_t": "int64_t"}
    parameters = ", ".join(["TensorIterator& iter", *(f"{types[p.type]} {p.name}" for p in spec.params)])
    bound = ", ".join(["output"] + [f"output{o}" for o in range(1, outputs)])
    empty = {"nan": "std::numeric_limits<double>::quiet_NaN()", "inf": "std::numeric_limits<double>::infinity()",
             "-inf": "-std::numeric_limits<double>::infinity()"}.get(spec.empty, spec.empty)
    return render(
        "reduction/host.mm.j2", spec=spec, function=host_function_name(spec), parameters=parameters, outputs=outputs,
        accepted=accepted_dtypes(spec),
        bound=bound, empty=empty, metal_name=metal_name,
    )

"""A tree's own reduction dispatcher, and what mpsgen writes to use it instead of a second one.

torch 2.14's ``operations/ReduceOps.mm`` picks the kernels of its Metal reductions by shape in one
function, ``static void reduction_dispatch_mps(TensorIterator& iter, const ReductionDispatch& opts)``:
kernels named ``{prefix}reduction_{variant}_{TI}_{TO}`` (``prefix`` is ``opts.prefix``), every
variant of a prefix and pair registered by one macro of ``kernels/ReduceOps.metal``
(``REGISTER_VALUE_REDUCTION_IMPL(TI, TO, NAME, OP, LOAD)``: the file's value-kernel templates
instantiated with an op struct and a load struct). 2.13's file has none.

Where the tree has one and the spec fits it (one output, the identity load, no stub arguments, no
finalize, an op of one value), mpsgen writes the op struct (an own op: identity, combine, the
tree's SIMD-group helper, and a threadgroup reduction that pads the first SIMD-group's idle lanes
with the identity), one registration line a pair, and a host that calls the tree's dispatcher.
Everything is read from the tree: the function and options struct (and its fields), the
registration macro (and the variants it registers), the identity load struct, and whether the
value kernels accumulate in their output type (2.14.1: ``using TA = TO``; a half or bfloat output
is then reduced into float through the (TI, float) kernels and rounded once).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.codegen.reduction import accepted_dtypes, host_function_name
from mpsgen.core.errors import Refused
from mpsgen.core.render import render
from mpsgen.metal import SCALAR_TYPES
from mpsgen.spec.reduction import OwnOp, ReductionSpec
from mpsgen.tree.source import mask_c_comments_and_strings, match_close

# the options a caller must set (the rest keep the struct's defaults)
REQUIRED_FIELDS = ("prefix", "input_kernel_dtype", "output_kernel_dtype", "partial_dtype", "pass2_prefix")
NARROW = ("half", "bfloat")
_EMPTY = {"nan": "std::numeric_limits<double>::quiet_NaN()", "inf": "std::numeric_limits<double>::infinity()",
          "-inf": "-std::numeric_limits<double>::infinity()"}
_FUNCTION = re.compile(r"^static\s+void\s+(\w+)\s*\(\s*TensorIterator\s*&\s*\w+\s*,\s*const\s+(\w+)\s*&\s*\w+\s*\)\s*\{", re.M)
_HOST_NAME = re.compile(r'(\w+)\s*"_reduction_((?:\w+_)?)"\s*#\s*(\w+)\s*"_"\s*#\s*(\w+)')
_INSTANCE = re.compile(r"kernel\s+void\s+(\w+)\s*<\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)")


@dataclass(frozen=True)
class Dispatcher:
    """What a tree's reduction dispatcher asks of an op's kernels, and how to call it."""

    function: str  # reduction_dispatch_mps
    options: str  # ReductionDispatch
    fields: tuple[str, ...]  # its fields, in order
    macro: str  # REGISTER_VALUE_REDUCTION_IMPL
    params: tuple[str, ...]  # the macro's parameters: (TI, TO, NAME, OP, LOAD) in the tree's order
    variants: tuple[str, ...]  # "", "inner", "flat", ...: what the macro registers for a prefix
    load: str  # IdentityLoad
    accumulates_in_output: bool  # the value kernels' TA is TO
    where: str  # "operations/ReduceOps.mm:123"

    def kernel_names(self, prefix: str, ti: str, to: str) -> list[str]:
        return [f"{prefix}reduction_{v + '_' if v else ''}{ti}_{to}" for v in self.variants]


def _macros(text: str) -> dict[str, tuple[tuple[str, ...], str]]:
    """``#define NAME(params) body`` of a C file, continuation lines joined."""
    found = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)", text, re.M):
        found[m.group(1)] = (tuple(p.strip() for p in m.group(2).split(",")), m.group(3).replace("\\\n", "\n"))
    return found


def read_dispatcher(mm_text: str, metal_text: str | None, mm_rel: str, metal_rel: str) -> Dispatcher | None:
    """The tree's reduction dispatcher (None: the file has none, as 2.13's); refused, naming the
    line, where it has one mpsgen cannot call as it reads it."""
    masked = mask_c_comments_and_strings(mm_text)
    m = _FUNCTION.search(masked)
    if m is None:
        return None
    function, options = m.group(1), m.group(2)
    where = f"{mm_rel}:{mm_text.count(chr(10), 0, m.start()) + 1}"
    s = re.search(rf"^struct\s+{re.escape(options)}\s*\{{", masked, re.M)
    if s is None:
        raise Refused(f"{where}: {function} takes a {options}, which {mm_rel} does not define; mpsgen cannot tell what to pass it.")
    body = masked[s.end() : match_close(masked, s.end() - 1)]
    fields = re.findall(r"^\s*([\w:<>, ]+?)\s+(\w+)\s*(=[^;]*)?;", body, re.M)
    names = tuple(n for _t, n, _d in fields)
    missing = [f for f in REQUIRED_FIELDS if f not in names]
    # (omitted from a designated initializer, a field of class type is default-constructed: an
    # empty std::optional, std::string; a scalar or enum one would be zero, so it must be known)
    unknown = [n for t, n, d in fields if not d and n not in REQUIRED_FIELDS and not re.match(r"(?:std|c10)::(?:optional|string|vector)\b", t)]
    if missing or unknown:
        why = (f"lacks {', '.join(missing)}" if missing else "") + ("; " if missing and unknown else "") + (
            f"has {', '.join(unknown)} without a default, which mpsgen does not know how to set" if unknown else "")
        raise Refused(f"{where}: {function}'s {options} {why}; mpsgen calls it only as the value reductions of 2.14 do.",
                      hint="Write the op's kernels and host by hand, or teach mpsgen this dispatcher's options.")
    if metal_text is None:
        raise Refused(f"{where} dispatches reductions by kernel prefix ({function}), but this tree has no {metal_rel}, where their kernels are registered.")
    macros = _macros(metal_text)
    best = None
    for name, (params, own) in macros.items():
        if len(params) != 5:
            continue
        text = own  # with the macros it expands (one level), passing its parameters on
        for inner, (inner_params, inner_text) in macros.items():
            if inner != name and len(inner_params) == 5 and re.search(rf"\b{inner}\s*\(", own):
                text += "\n" + inner_text
        inst = _INSTANCE.search(text)
        if inst is None or not set(inst.groups()[1:]) <= set(params):  # (an op and a load of its parameters)
            continue
        variants = [v.rstrip("_") for _n, v, _ti, _to in _HOST_NAME.findall(text)]
        if "" in variants and (best is None or len(variants) > len(best[2])):
            best = (name, params, variants, inst)
    if best is None:
        raise Refused(f"{where} dispatches reductions by kernel prefix ({function}), but {metal_rel} has no macro registering "
                      "an op's kernels with an op struct and a load (REGISTER_VALUE_REDUCTION_IMPL(TI, TO, NAME, OP, LOAD) in 2.14).")
    macro, params, variants, inst = best
    op_param, load_param, ti_param, to_param = inst.group(2), inst.group(3), inst.group(4), inst.group(5)
    asked = set(re.findall(r'"\{\}reduction_([a-z_]+?)_\{\}_\{\}"', mm_text[m.start() : match_close(masked, m.end() - 1)]))
    unregistered = sorted(v for v in asked - set(variants) if "strided" not in v)
    if unregistered:
        raise Refused(f"{where}: {function} asks for {', '.join(unregistered)} kernels that {macro} in {metal_rel} does not register; "
                      "mpsgen cannot tell which kernels an op needs.")
    metal_masked = mask_c_comments_and_strings(metal_text)
    load = re.search(r"struct\s+(\w+)\s*\{\s*template\s*<\s*typename\s+(\w+)\s*,\s*typename\s+(\w+)\s*>\s*static\s+inline\s+\2\s+load\s*\(\s*\3\s+(\w+)\s*\)"
                     r"\s*\{\s*return\s+static_cast\s*<\s*\2\s*>\s*\(\s*\4\s*\)\s*;", metal_masked)
    if load is None:
        raise Refused(f"{metal_rel} has no load struct passing the element through (IdentityLoad in 2.14); mpsgen registers {macro} with one.")
    template = re.search(rf"kernel\s+void\s+{re.escape(inst.group(1))}\s*\(", metal_masked)
    brace = metal_masked.find("{", template.end()) if template else -1
    kernel_body = metal_masked[brace : match_close(metal_masked, brace)] if brace >= 0 else ""
    return Dispatcher(
        function=function, options=options, fields=names, macro=macro,
        params=tuple({ti_param: "TI", to_param: "TO", op_param: "OP", load_param: "LOAD"}.get(p, "NAME") for p in params),
        variants=tuple(dict.fromkeys(variants)), load=load.group(1),
        accumulates_in_output=re.search(r"\busing\s+TA\s*=\s*TO\s*;", kernel_body) is not None, where=where,
    )


def misfit(spec: ReductionSpec) -> str | None:
    """Why the tree's dispatcher cannot run the spec's reduction (None: it can)."""
    if spec.welford:
        return ("its Welford partials are (mean, m2, count), not one value of the output type, and the dispatcher's kernels "
                "fold values of one type with an op struct")
    if spec.params:
        return f"the stub's arguments ({', '.join(p.name for p in spec.params)}) have no field in the dispatcher's options"
    if len(spec.outputs) > 1 or spec.outputs[0].strip() != "acc" or spec.finalize:
        return "its kernels write the folded value as it is: one output, no finalize"
    if spec.load.strip() != "x":
        return "its kernels load the element through a load struct; mpsgen registers the identity load only"
    return None


def dispatch_pairs(spec: ReductionSpec, pairs: tuple[tuple[str, str], ...], disp: Dispatcher) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(the pairs registered with the tree's macro, the pairs served through a float output and
    rounded: half or bfloat outputs where the value kernels accumulate in their output type)."""
    widened = tuple(p for p in pairs if disp.accumulates_in_output and p[1] in NARROW and spec.accumulate == "opmath")
    registered = tuple(p for p in pairs if p not in widened)
    for ti, _to in widened:
        if (ti, "float") not in registered:
            raise Refused(f"{disp.where}: the value kernels accumulate in their output type, so mpsgen reduces a {ti} output "
                          f"into float and rounds it; the spec does not register {ti}->float for that.")
    outs = {to for _ti, to in registered}
    lacking = sorted(to for to in outs if (to, to) not in registered)
    if lacking:  # (a two-pass reduction folds its partials, of the output type, with the same prefix)
        raise Refused(f"{disp.where}: {disp.function}'s second pass folds partials with the {', '.join(f'{t}->{t}' for t in lacking)} "
                      "kernels of the same prefix, which the spec does not register.")
    return registered, widened


def op_struct_name(spec: ReductionSpec) -> str:
    return spec.op_struct.removeprefix("c10::metal::")


def op_struct(spec: ReductionSpec) -> str:
    """The op struct an own op gets for the tree's value kernels ("" for one of the tree's)."""
    if not isinstance(spec.reduce, OwnOp):
        return ""
    return render("reduction/dispatch_op.metal.j2", spec=spec, op=spec.reduce, name=op_struct_name(spec))


def registration_lines(spec: ReductionSpec, disp: Dispatcher, pairs: tuple[tuple[str, str], ...]) -> str:
    args = {"TI": None, "TO": None, "NAME": f'"{spec.kernel}"', "OP": op_struct_name(spec), "LOAD": disp.load}
    lines = []
    for ti, to in pairs:
        args.update(TI=ti, TO=to)
        lines.append(f"{disp.macro}({', '.join(args[p] for p in disp.params)});")
    return "\n".join(lines)


def host_text(spec: ReductionSpec, disp: Dispatcher, widened: tuple[tuple[str, str], ...], metal_name: str = "ReduceOps.metal") -> str:
    values = {"prefix": f'"{spec.kernel}_"', "input_kernel_dtype": "input.scalar_type()",
              "output_kernel_dtype": "output.scalar_type()", "partial_dtype": "output.scalar_type()",
              "pass2_prefix": f'"{spec.kernel}_"'}
    options = [(f, values[f]) for f in disp.fields if f in values]
    narrow = sorted({to for _ti, to in widened})
    return render(
        "reduction/dispatch_host.mm.j2", spec=spec, disp=disp, function=host_function_name(spec), options=options,
        narrow=[SCALAR_TYPES[t] for t in narrow], metal_name=metal_name,
        empty=_EMPTY.get(spec.empty, spec.empty), op=op_struct_name(spec), accepted=accepted_dtypes(spec),
    )

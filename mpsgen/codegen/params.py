"""The params kinds (``unary_params``, ``binary_params``): an op whose stub takes arguments
after its iterator (softplus's beta and threshold) gets a params struct, shared by the
``.metal`` and the ``.mm`` through a ``kernels/*.h`` header, with one field per argument in
the input's opmath type (bools and ``has_<name>`` presence flags last). The kernel is
registered with ``REGISTER_*_ALPHA_OP(op, T, <Struct>_T, T)`` (the struct as the "alpha"), and
the host fills the struct from the stub's arguments and calls
``exec_*_kernel_with_params(iter, "op", params, "<Struct>_<metal type>")``, as upstream's
ELU and nan_to_num kernels do.

Here: the decisions (fields, initialisers, dispatch macro, the check against the stub's
function type); the code shapes are in ``templates/``.
"""

from __future__ import annotations

import re

from mpsgen.edits import METAL_COLUMN_LIMIT, one_per_line
from mpsgen.core.render import render
from mpsgen.spec.op import OPERANDS, OpSpec, Param

# what each param type is in the stub's function type (spaces and `c10::`/`std::`/`const`
# normalised away)
_CPP = {
    "scalar": ("Scalar&", "Scalar"),
    "float": ("double",),
    "optional_float": ("optional<double>",),
    "bool": ("bool",),
}


def param_type_of(cpp: str) -> str | None:
    """The param type a stub parameter is (``const c10::Scalar&`` -> scalar), or None."""
    bare = re.sub(r"\b(?:const|c10::|std::|at::)\s*", "", cpp).strip()
    bare = re.sub(r"^(.*?[&>\w])\s+[A-Za-z_]\w*$", r"\1", bare).replace(" ", "")  # (a parameter name after the type)
    for kind, spellings in _CPP.items():
        if bare in spellings:
            return kind
    return None


def value_fields(spec: OpSpec) -> list[str]:
    return [p.name for p in spec.params if p.type != "bool"]


def bool_fields(spec: OpSpec) -> list[str]:
    return [p.name if p.type == "bool" else f"has_{p.name}" for p in spec.params if p.type in ("bool", "optional_float")]


def render_struct(spec: OpSpec) -> str:
    return render("metal/params_struct.h.j2", struct=spec.params_struct, value_fields=value_fields(spec), bool_fields=bool_fields(spec))


def render_typedefs(spec: OpSpec, types: list[str]) -> str:
    lines = []
    for t in dict.fromkeys(types):  # clang-format's layout: the name on its own line when it does not fit
        line = f"typedef {spec.params_struct}<c10::metal::opmath_t<{t}>> {spec.params_struct}_{t};"
        lines.append(line if len(line) <= METAL_COLUMN_LIMIT else line.replace("> ", ">\n    ", 1))
    return render("metal/params_typedefs.metal.j2", lines=lines)


def render_expr_functor(spec: OpSpec, expr: str) -> str:
    args = [f"const T {p}" for p in OPERANDS[spec.kind]] + [f"const {spec.params_struct}<c10::metal::opmath_t<T>> params"]
    return render(
        "metal/functor_params_expr.metal.j2",
        op=spec.name, signature=one_per_line("inline T operator()(", args, ") {", indent=2),
        fields=value_fields(spec) + bool_fields(spec), expr=expr,
    )


def host_inits(spec: OpSpec) -> list[str]:
    """The struct's initialisers from the stub's arguments, in field order."""
    values = []
    for p in spec.params:
        if p.type == "scalar":
            values.append(f"{p.name}.to<opmath_t>()")
        elif p.type == "float":
            values.append(f"static_cast<opmath_t>({p.name})")
        elif p.type == "optional_float":
            values.append(f"static_cast<opmath_t>({p.name}.value_or(0.0))")
    flags = [p.name if p.type == "bool" else f"{p.name}.has_value()" for p in spec.params if p.type in ("bool", "optional_float")]
    return values + flags


def dispatch_head(spec: OpSpec) -> str:
    """The AT_DISPATCH macro covering the registered input types, up to the dtype argument."""
    groups = set(spec.dtypes)
    if "integer" in groups:
        return "AT_DISPATCH_ALL_TYPES_AND3(kBool, kHalf, kBFloat16, "
    if "integer_no_bool" in groups:
        return "AT_DISPATCH_ALL_TYPES_AND2(kHalf, kBFloat16, "
    return "AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, "


def stub_mismatch(spec: OpSpec, parameters: list[str], where: str) -> str | None:
    """Why the spec's params do not match the stub's function type (``parameters`` as its
    header writes them, the iterator first), or None."""
    if not parameters or "TensorIteratorBase" not in parameters[0]:
        return (
            f"{spec.stub or 'the stub'} ({where}) takes {parameters[0] if parameters else 'nothing'} first, not a "
            "TensorIteratorBase&: exec_*_kernel_with_params runs on an iterator."
        )
    rest = parameters[1:]
    got = [param_type_of(p) for p in rest]
    want = [p.type for p in spec.params]
    if got != want:
        shown = ", ".join(rest) or "nothing"
        return (
            f"the stub's function type ({where}) takes {shown} after the iterator, but the spec's params are "
            + (", ".join(f"{p.name}: {p.type}" for p in spec.params) or "none")
            + (f"; unsupported argument type(s): {', '.join(r for r, g in zip(rest, got) if g is None)}" if None in got else "")
            + "."
        )
    return None


def stub_arguments(spec: OpSpec, parameters: list[str]) -> list[tuple[str, str]]:
    """(type as the stub writes it, param name) for the host function's signature."""
    return [(cpp, p.name) for cpp, p in zip(parameters[1:], spec.params)]


def params_from_schema(arguments: list[tuple[str, str]]) -> tuple[Param, ...]:
    """Params from an op schema's non-tensor arguments ((type, name), ``Scalar beta``)."""
    kinds = {"Scalar": "scalar", "float": "float", "float?": "optional_float", "bool": "bool"}
    return tuple(Param(name, kinds[t]) for t, name in arguments if t in kinds)

"""Which ``REGISTER_*`` statements an op needs, expressed with the macros this tree defines.

An op's need is a set of *base calls*: a base macro of ``c10/metal/indexing.h`` and its
dtype arguments (``REGISTER_BINARY_OP(op, float, float)``). The target file's own helper
macros (``REGISTER_FLOAT_BINARY_OP(NAME)``) and bulk macros (``INSTANTIATE_UNARY_KERNELS2``
with one ``REGISTER_UNARY_OP(<op>, DTYPE1, DTYPE0)`` line per op) are expanded into the same
base calls, and a greedy cover picks the file's own idiom wherever it fits exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mpsgen.core.errors import Refused
from mpsgen.tree.clike import parse_calls
from mpsgen.tree.dtypes import TORCH_DTYPES
from mpsgen.tree.metal import MacroDef, MetalSource

if TYPE_CHECKING:
    from mpsgen.spec.op import OpSpec

BaseCall = tuple[str, tuple[str, ...]]  # (macro, dtype args after NAME)

FLOATS = ("float", "half", "bfloat")
INTS = ("long", "int", "short", "uchar", "char")
COMPLEX = ("float2", "half2")
VEC2 = frozenset(COMPLEX)

BULK_MIN_OPS = 4  # a dtype-parameterised macro listing fewer ops is a topical group, not the bulk list


def input_dtypes(spec: OpSpec) -> list[tuple[str, str]]:
    """(input, output) Metal types the op is registered for, in upstream's order."""
    pairs: list[tuple[str, str]] = [(t, t) for t in FLOATS]
    groups = spec.dtypes
    if "int2float" in groups:
        pairs += [(t, "float") for t in INTS + ("bool",)]
    if "integer" in groups:
        pairs += [(t, t) for t in INTS + ("bool",)]
    if "integer_no_bool" in groups:
        pairs += [(t, t) for t in INTS]
    if "complex" in groups:
        pairs += [(t, t) for t in COMPLEX]
    if "bool_out" in groups:  # predicates (signbit, logical_*): every input type gives a bool
        pairs = [(i, "bool") for i, _o in pairs]
    return pairs


# c10::ScalarType enumerator of each Metal type (the host passes it for a fixed alpha type)
SCALAR_TYPES = {
    "float": "Float",
    "half": "Half",
    "bfloat": "BFloat16",
    "long": "Long",
    "int": "Int",
    "short": "Short",
    "uchar": "Byte",
    "char": "Char",
    "bool": "Bool",
    "float2": "ComplexFloat",
    "half2": "ComplexHalf",
}


def alpha_scalar_type(spec: OpSpec) -> str | None:
    """The ``ScalarType::X`` the host must pass so ``exec_*_kernel`` looks up the host names
    the alpha registrations make (``<op>_dense_half_half_float``), or None when every
    registration's alpha type is its input type (the library's default). Refuses a mix that
    one host call cannot name."""
    if not spec.has_alpha:
        return None
    pairs = [(args[0], args[1]) for _m, args in required_calls(spec)]
    if all(i == a for i, a in pairs):
        return None
    fixed = {a for _i, a in pairs}
    if len(fixed) == 1:
        return f"ScalarType::{SCALAR_TYPES[fixed.pop()]}"
    raise Refused(
        f"the alpha of {spec.name} would be registered as {', '.join(sorted(fixed))} depending on the input, but one "
        "exec_*_kernel call passes a single ScalarType for it: the other host names would never be found.",
        hint="Set `alpha_type:` in the spec to one Metal type (e.g. float), or drop the dtype group that needs another.",
    )


def covered_torch_dtypes(spec: OpSpec) -> set[str]:
    return {TORCH_DTYPES[i] for i, _ in input_dtypes(spec)}


def base_macro_for(spec: OpSpec, in_type: str) -> str:
    opmath = "opmath" in spec.dtypes and (in_type in FLOATS or in_type in VEC2)
    return {
        "unary": "REGISTER_UNARY_OP",
        "unary_alpha": "REGISTER_UNARY_ALPHA_OP",
        "binary": "REGISTER_OPMATH_BINARY_OP" if opmath else "REGISTER_BINARY_OP",
        "binary_alpha": "REGISTER_BINARY_ALPHA_OP",
        "ternary": "REGISTER_OPMATH_TERNARY_OP" if opmath else "REGISTER_TERNARY_OP",
        # the params struct goes where the alpha goes (upstream's ELU, nan_to_num)
        "unary_params": "REGISTER_UNARY_ALPHA_OP",
        "binary_params": "REGISTER_BINARY_ALPHA_OP",
    }[spec.kind]


def required_calls(spec: OpSpec) -> list[BaseCall]:
    calls: list[BaseCall] = []
    for i, o in input_dtypes(spec):
        macro = base_macro_for(spec, i)
        if spec.kind == "unary_alpha":
            calls.append((macro, (i, spec.alpha_type or ("float2" if i in VEC2 else "float"), o)))
        elif spec.kind == "binary_alpha":
            calls.append((macro, (i, spec.alpha_type or i, o)))
        elif spec.has_params:
            calls.append((macro, (i, f"{spec.params_struct}_{i}", o)))
        else:
            calls.append((macro, (i, o)))
    return calls


def expand(macro: str, args: list[str], macros: dict[str, MacroDef], base: set[str], depth: int = 0) -> list[tuple[str, list[str]]] | None:
    """Expand a call down to base-macro calls; None if it uses anything else."""
    if macro in base:
        return [(macro, args)]
    definition = macros.get(macro)
    if definition is None or definition.params is None or len(definition.params) != len(args) or depth > 8:
        return None
    result = []
    for inner, inner_args in parse_calls(definition.expand(args)):
        sub = expand(inner, inner_args, macros, base, depth + 1)
        if sub is None:
            return None
        result += sub
    return result


@dataclass(frozen=True)
class BulkMacro:
    """A dtype-parameterised macro listing one registration line per op."""

    name: str
    pattern_macro: str
    pattern_args: tuple[str, ...]  # args after NAME, in terms of the macro's params
    instances: tuple[tuple[str, ...], ...]
    ops: tuple[str, ...]

    def calls_for(self, params: tuple[str, ...]) -> set[BaseCall]:
        out = set()
        for inst in self.instances:
            values = dict(zip(params, inst))
            dt = []
            for a in self.pattern_args:
                a = re.sub(r"\b([A-Za-z_]\w*)\b", lambda m: values.get(m.group(1), m.group(1)), a)
                dt.append(re.sub(r"\s*##\s*", "", a))
            out.add((self.pattern_macro, tuple(dt)))
        return out


@dataclass(frozen=True)
class RegistrationPlan:
    statements: tuple[str, ...]  # top-level lines for real-typed registrations
    complex_statements: tuple[str, ...]  # lines registering vec2 (complex) types
    bulk_lines: tuple[tuple[str, str], ...]  # (bulk macro, body line without ';')
    already: tuple[BaseCall, ...]  # required calls the file already has


def op_helpers(macros: dict[str, MacroDef], base: set[str]) -> dict[str, frozenset[BaseCall]]:
    """Single-parameter macros of the file that register exactly a set of base calls for NAME."""
    helpers: dict[str, frozenset[BaseCall]] = {}
    for name, d in macros.items():
        if name in base or d.params is None or len(d.params) != 1:
            continue
        expanded = expand(name, ["__OP__"], macros, base)
        if not expanded or any(not a or a[0] != "__OP__" for _, a in expanded):
            continue
        helpers[name] = frozenset((m, tuple(a[1:])) for m, a in expanded)
    return helpers


def bulk_macros(source: MetalSource, base: set[str]) -> list[BulkMacro]:
    found = []
    for name, d in source.macros.items():
        if d.params is None or not d.params or name in base:
            continue
        body_calls = parse_calls(d.body)
        if not body_calls or any(m not in base for m, _ in body_calls):
            continue
        ops = [a[0] for _, a in body_calls if a]
        if any(op in d.params for op in ops) or len(set(ops)) < BULK_MIN_OPS:
            continue
        instances = tuple(c.args for c in source.calls if c.macro == name and len(c.args) == len(d.params))
        if not instances:
            continue
        first_macro, first_args = body_calls[0]
        found.append(BulkMacro(name, first_macro, tuple(first_args[1:]), instances, tuple(ops)))
    return found


def existing_calls(op: str, source: MetalSource, helpers: dict[str, frozenset[BaseCall]], bulks: list[BulkMacro], base: set[str]) -> set[BaseCall]:
    have: set[BaseCall] = set()
    for c in source.calls:
        if not c.args or c.args[0] != op:
            continue
        if c.macro in base:
            have.add((c.macro, tuple(c.args[1:])))
        elif c.macro in helpers:
            have |= helpers[c.macro]
    for b in bulks:
        d = source.macros[b.name]
        for m, a in parse_calls(d.body):
            if a and a[0] == op and m in base:
                have |= BulkMacro(b.name, m, tuple(a[1:]), b.instances, b.ops).calls_for(d.params or ())
    return have


def plan_registrations(spec: OpSpec, source: MetalSource, base_macros: set[str], metal_path: str) -> RegistrationPlan:
    required = required_calls(spec)
    missing_base = sorted({m for m, _ in required} - base_macros)
    if missing_base:
        raise Refused(
            f"this tree defines no {', '.join(missing_base)} (looked in c10/metal/indexing.h and {metal_path}).",
            hint="Update the checkout, or register the kernels by hand for this kind of op.",
        )
    helpers = op_helpers(source.macros, base_macros)
    bulks = bulk_macros(source, base_macros)
    have = existing_calls(spec.name, source, helpers, bulks, base_macros)
    remaining = [c for c in required if c not in have]
    statements: list[tuple[int, str]] = []
    complex_statements: list[tuple[int, str]] = []
    bulk_lines: list[tuple[str, str]] = []
    order = {c: i for i, c in enumerate(required)}
    while remaining:
        rem = set(remaining)
        best: tuple[int, int, str, object] | None = None
        for name, calls in helpers.items():
            if calls <= rem and (best is None or len(calls) > best[0]):
                best = (len(calls), 0, name, calls)
        for b in bulks:
            params = source.macros[b.name].params or ()
            if b.pattern_macro not in {m for m, _ in remaining}:
                continue
            calls = b.calls_for(params)
            if len(calls) >= 2 and calls <= rem and (best is None or len(calls) > best[0]):
                best = (len(calls), 1, b.name, b)
        if best is None:
            break
        size, is_bulk, name, obj = best
        if is_bulk:
            b = obj  # type: ignore[assignment]
            calls = b.calls_for(source.macros[b.name].params or ())
            bulk_lines.append((b.name, f"{b.pattern_macro}({', '.join((spec.name,) + b.pattern_args)})"))
        else:
            calls = obj  # type: ignore[assignment]
            first = min(order[c] for c in calls)
            target = complex_statements if all(set(dt) & VEC2 for _, dt in calls) else statements
            target.append((first, f"{name}({spec.name});"))
        remaining = [c for c in remaining if c not in calls]
    for c in remaining:
        macro, dts = c
        target = complex_statements if set(dts) & VEC2 else statements
        target.append((order[c], f"{macro}({', '.join((spec.name,) + dts)});"))
    statements.sort()
    complex_statements.sort()
    return RegistrationPlan(
        tuple(s for _, s in statements),
        tuple(s for _, s in complex_statements),
        tuple(bulk_lines),
        tuple(c for c in required if c in have),
    )

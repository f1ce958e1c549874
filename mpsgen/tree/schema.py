"""What a ``func:`` schema of native_functions.yaml says about an op's shape: its tensor and
scalar inputs, its outputs, and the elementwise kind that fits them."""

from __future__ import annotations

import re

ARG_SPLIT = re.compile(r",\s*(?![^\[]*\])")

# a Scalar-like parameter of an elementwise op (torch passes it to the stub as a Scalar/double)
_SCALAR_LIKE = {"Scalar", "Scalar?", "float", "float?", "int", "int?", "bool"}

KIND_SHAPES = {
    "unary": "one tensor input",
    "unary_alpha": "one tensor and one scalar input",
    "binary": "two tensor inputs",
    "binary_alpha": "two tensors and one scalar input",
    "ternary": "three tensor inputs",
    "unary_params": "one tensor input and two or more Scalar, float, float? or bool arguments",
    "binary_params": "two tensor inputs and two or more Scalar, float, float? or bool arguments",
}
# what a params kind's struct can hold (mpsgen.spec.op.PARAM_TYPES), by schema type
PARAM_SCHEMA_TYPES = {"Scalar": "scalar", "float": "float", "float?": "optional_float", "bool": "bool"}


def split_schema(func: str) -> tuple[str, str]:
    """(argument list, return part) of a schema."""
    # the return arrow, outside the brackets (`Tensor(a -> *)` is an alias set)
    end = func.find("->")
    while end >= 0 and func.count("(", 0, end) != func.count(")", 0, end):
        end = func.find("->", end + 2)
    if end < 0:
        return func[func.index("(") + 1 : func.rindex(")")], ""
    return func[func.index("(") + 1 : func.rindex(")", 0, end)], func[end + 2 :].strip()


def schema_args(func: str) -> list[tuple[str, str]]:
    """(type, name) of a schema's inputs: keyword-only ``Tensor(a!)`` out arguments are left
    out, an in-place ``Tensor(a!) self`` counts as a plain ``Tensor``."""
    inner, _ = split_schema(func)
    out = []
    keyword_only = False
    for raw in ARG_SPLIT.split(inner):
        raw = raw.strip()
        if raw == "*":
            keyword_only = True
            continue
        raw = raw.split("=", 1)[0].strip()
        if " " not in raw:
            continue
        typ, name = raw.rsplit(" ", 1)
        if "!" in typ:
            if keyword_only:
                continue
            typ = re.sub(r"\(\w+!\)", "", typ)
        out.append((typ, name))
    return out


def output_count(func: str) -> int:
    """How many tensors the schema returns (``-> (Tensor(a!) mantissa, Tensor(b!) exponent)``: 2)."""
    _, ret = split_schema(func)
    ret = ret.strip().strip("()")
    if not ret:
        return 0
    return sum(1 for part in ARG_SPLIT.split(ret) if part.strip().startswith("Tensor") and "[]" not in part)


def guess_kind(func: str) -> str:
    """unary / unary_alpha / binary / binary_alpha / ternary / other, from a schema."""
    args = schema_args(func)
    tensors = [n for t, n in args if t == "Tensor"]
    scalars = [n for t, n in args if t in _SCALAR_LIKE]
    if len(tensors) + len(scalars) != len(args) or not args or args[0][0] != "Tensor":
        return "other"
    n, s = len(tensors), len(scalars)
    if n == 1 and s == 0:
        return "unary"
    if n == 1 and s == 1:
        return "unary_alpha"
    if n == 2 and s == 0:
        return "binary"
    if n == 2 and s == 1:
        return "binary_alpha"
    if n == 3 and s <= 1:
        return "ternary"
    if n in (1, 2) and s >= 2 and all(t in PARAM_SCHEMA_TYPES for t, _n in args if t != "Tensor"):
        return "unary_params" if n == 1 else "binary_params"
    return "other"


def describe_inputs(func: str) -> str:
    """``2 tensors, 1 scalar`` for messages."""
    args = schema_args(func)
    t = sum(1 for ty, _ in args if ty == "Tensor")
    s = sum(1 for ty, _ in args if ty in _SCALAR_LIKE)
    other = len(args) - t - s
    parts = [f"{t} tensor{'s' if t != 1 else ''}"]
    if s:
        parts.append(f"{s} scalar{'s' if s != 1 else ''}")
    if other:
        parts.append(f"{other} other argument{'s' if other != 1 else ''}")
    return " and ".join(parts)


def shape_problem(func: str, kind: str, operands: tuple[str, ...] | None = None) -> str | None:
    """Why a row of this schema cannot get a kernel of ``kind`` (None if it can). ``operands``:
    the schema tensors a params kind's iterator runs on, when it says (threshold's (self, self))."""
    n_out = output_count(func)
    if n_out > 1:
        return f"it returns {n_out} tensors; mpsgen's kernels write one output (multi-output ops need a hand-written kernel)"
    if operands and kind.endswith("_params"):
        args = schema_args(func)
        tensors = {n for t, n in args if t == "Tensor"}
        if not set(operands) <= tensors:
            return f"its tensors are {', '.join(sorted(tensors)) or 'none'}, not the spec's operands {', '.join(operands)}"
        others = [t for t, _n in args if t != "Tensor"]
        if not all(t in PARAM_SCHEMA_TYPES for t in others):
            return f"it takes {', '.join(others)}, which a params struct cannot hold"
        return None
    found = guess_kind(func)
    if found != kind:
        return f"it takes {describe_inputs(func)}, not {KIND_SHAPES.get(kind, kind)} (`{kind}`)"
    return None

"""Edit an ``operations/*Kernel.mm`` file: add the op's host kernel and its REGISTER_DISPATCH.

Where the file has a helper macro that produces both (``REGISTER_UNARY_TI_DISPATCH(NAME)``),
one instance line is added next to the others. Otherwise a ``static void <op>_mps_kernel``
goes after the last kernel function of ``namespace at::native`` and the
``REGISTER_DISPATCH`` line joins the block of them, copying the file's ``&``/``;`` habits.
Output is laid out as PyTorch's clang-format does (120 columns for .mm).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpsgen.core.errors import Refused
from mpsgen.edits import insert_lines
from mpsgen.core.render import render
from mpsgen.tree.mm import scan_mm
from mpsgen.tree.source import line_of, line_starts, mask_c_comments_and_strings, match_close

COLUMN_LIMIT = 120
# the closing line of the file's `namespace at::native`, before which host functions go
NAMESPACE_END = re.compile(r"^\}\s*//\s*namespace at::native\s*$", re.M)
# a shader library the file already has (declared, or used: a second `lib` would not compile)
_LIBRARY_THERE = re.compile(r"\blib\.getPipelineStateForFunc\b|^static auto& lib\b|MetalShaderLibrary lib\b", re.M)


def add_shader_library(text: str, rel: str, library: str) -> str:
    """``text`` with ``library`` (its declaration lines, ending as they should stand) after the
    `namespace at::native {` line, unless the file has a shader library already."""
    if _LIBRARY_THERE.search(text):
        return text
    opening = re.search(r"^namespace at::native \{\n", text, re.M)
    if opening is None:
        raise Refused(f"{rel} has no `namespace at::native {{` line for the shader library's declaration.")
    return text[: opening.end()] + "\n" + library + text[opening.end() :]


def before_namespace_end(text: str, function: str) -> str:
    """``text`` with ``function`` before its last `} // namespace at::native` line (which the
    caller has made sure is there), a blank line on each side."""
    end = list(NAMESPACE_END.finditer(text))[-1]
    return text[: end.start()].rstrip("\n") + "\n\n" + function + "\n\n" + text[end.start() :]


@dataclass(frozen=True)
class ParamsHost:
    """The host side of a params-kind op: the stub's arguments, the struct they fill."""

    struct: str  # SoftplusParams
    arguments: tuple[tuple[str, str], ...]  # (C++ type as the stub's function type writes it, name)
    inits: tuple[str, ...]  # the struct's field initialisers, in field order (opmath_t is the field type)
    dispatch: str  # the AT_DISPATCH macro's head, up to the dtype: "AT_DISPATCH_FLOATING_TYPES_AND2(kHalf, kBFloat16, "


@dataclass(frozen=True)
class KernelAddition:
    op: str  # the Metal kernel name passed to exec_*_kernel
    stub: str
    kind: str  # unary | binary | ternary
    alpha: bool
    helper_macro: str | None  # use this helper macro instead of an explicit function
    alpha_scalar_type: str | None = None  # ``ScalarType::Float``: the registered alpha type, when not the input's
    params: ParamsHost | None = None  # a params kind: exec_*_kernel_with_params
    # a selector: (parameter type, name, ((enumerator, kernel), ...)): the stub's enum picks the
    # kernel, the last case's when no other matches
    selector: tuple[str, str, tuple[tuple[str, str], ...]] | None = None


def call_arguments(head: str, args: list[str], tail: str, indent: int) -> str:
    """``head(args)tail`` laid out as clang-format does a call in PyTorch's .mm files: on one
    line; else every argument on the next line, 4 columns in; else one argument a line there."""
    pad = " " * indent
    if len(pad + head) + len(", ".join(args)) + len(tail) <= COLUMN_LIMIT:
        return pad + head + ", ".join(args) + tail
    inner = " " * (indent + 4)
    if len(inner) + len(", ".join(args)) + len(tail) <= COLUMN_LIMIT:
        return f"{pad}{head}\n{inner}" + ", ".join(args) + tail
    return f"{pad}{head}\n" + ",\n".join(inner + a for a in args) + tail


def kernel_function_name(op: str) -> str:
    return f"{op}_mps_kernel"


def wrap_arguments(head: str, args: list[str], tail: str, indent: int = 0) -> str:
    """Lay out ``head(args)tail`` as clang-format does with PyTorch's style: one line if it
    fits, else one argument a line aligned after the open bracket, else broken after it."""
    if indent + len(head) + len(", ".join(args)) + len(tail) <= COLUMN_LIMIT:
        return ", ".join(args)
    width = indent + len(head)
    ends = [","] * (len(args) - 1) + [tail]
    if all(width + len(a) + len(end) <= COLUMN_LIMIT for a, end in zip(args, ends)):
        return (",\n" + " " * width).join(args)
    pad = " " * (indent + 4)
    return "\n" + pad + (",\n" + pad).join(args)


def _declarator(function: str) -> str:
    """``static void name`` -- with the name on its own line when even ``static void name(``
    overflows, as clang-format breaks it."""
    if len(f"static void {function}(") > COLUMN_LIMIT:
        return f"static void\n{function}"
    return f"static void {function}"


def _signature(function: str, alpha: bool) -> str:
    params = ["TensorIteratorBase& iter"] + (["const Scalar& alpha"] if alpha else [])
    return wrap_arguments(f"{_declarator(function).split(chr(10))[-1]}(", params, ") {")


def render_kernel_function(addition: KernelAddition, library: str) -> str:
    function = kernel_function_name(addition.op)
    if addition.selector is not None:
        enum_type, name, cases = addition.selector
        head = _declarator(function).split("\n")[-1] + "("
        picked = f'"{cases[-1][1]}"'
        for enumerator, kernel in reversed(cases[:-1]):
            picked = f'{name} == {enumerator} ? "{kernel}" : {picked}'
        return render(
            "mm/kernel_function.mm.j2",
            declarator=_declarator(function),
            signature=wrap_arguments(head, ["TensorIteratorBase& iter", f"{enum_type} {name}"], ") {"),
            call_args=wrap_arguments(f"{library}.exec_{addition.kind}_kernel(", ["iter", picked], ");", indent=2),
            library=library,
            kind=addition.kind,
        )
    if addition.params is not None:
        p = addition.params
        head = _declarator(function).split("\n")[-1] + "("
        return render(
            "mm/params_kernel_function.mm.j2",
            declarator=_declarator(function),
            signature=wrap_arguments(head, ["TensorIteratorBase& iter"] + [f"{t} {n}" for t, n in p.arguments], ") {"),
            dispatch=p.dispatch,
            function=function,
            struct=p.struct,
            inits=wrap_arguments(f"const {p.struct}<opmath_t> params{{", list(p.inits), "};", indent=4),
            call=call_arguments(
                f"{library}.exec_{addition.kind}_kernel_with_params(",
                ["iter", f'"{addition.op}"', "params",
                 f'fmt::format("{p.struct}_{{}}", mps::scalarToMetalTypeString(iter.common_dtype()))'],
                ");",
                indent=4,
            ),
        )
    return render(
        "mm/kernel_function.mm.j2",
        declarator=_declarator(function),
        signature=_signature(function, addition.alpha),
        call_args=wrap_arguments(
            f"{library}.exec_{addition.kind}_kernel(",
            ["iter", f'"{addition.op}"']
            + (["alpha"] if addition.alpha else [])
            + ([addition.alpha_scalar_type] if addition.alpha and addition.alpha_scalar_type else []),
            ");",
            indent=2,
        ),
        library=library,
        kind=addition.kind,
    )


def _mps_namespace_spans(text: str) -> list[tuple[int, int]]:
    masked = mask_c_comments_and_strings(text)
    starts = line_starts(text)
    spans = []
    for m in re.finditer(r"^namespace\s+mps\s*\{", masked, re.M):
        close = match_close(masked, masked.find("{", m.start()))
        if close > 0:
            spans.append((line_of(starts, m.start()), line_of(starts, close)))
    return spans


def _conventions(lines: list[str], dispatch_lines: list[int]) -> tuple[bool, bool]:
    """(ampersand, semicolon) as most REGISTER_DISPATCH lines of the file write them."""
    amp = semi = 0
    for i in dispatch_lines:
        ln = lines[i].strip()
        amp += 1 if re.search(r",\s*&", ln) else -1
        semi += 1 if ln.endswith(";") else -1
    return amp >= 0, semi >= 0


def add_kernel(text: str, addition: KernelAddition) -> str:
    source = scan_mm(text)
    if any(d.stub == addition.stub for d in source.dispatches):
        return text
    lines = text.split("\n")
    insertions: list[tuple[int, int, list[str]]] = []

    if addition.helper_macro:
        instances = [line for macro, _op, line in source.helper_instances if macro == addition.helper_macro]
        line = render("mm/helper_instance.mm.j2", macro=addition.helper_macro, op=addition.op)
        if instances:
            insertions.append((max(instances), 0, [line]))
        else:
            d = source.macros[addition.helper_macro]
            insertions.append((d.end_line, 0, ["", line]))
        return "\n".join(insert_lines(lines, insertions))

    spans = _mps_namespace_spans(text)
    outside = [
        k for k in source.kernel_functions if not any(a <= k.start_line <= b for a, b in spans)
    ]
    literal = [d for d in source.dispatches if d.via_macro is None]
    function_block = render_kernel_function(addition, source.library).split("\n")
    function_name = kernel_function_name(addition.op)
    amp, semi = _conventions(lines, [d.line for d in literal])
    target = ("&" if amp else "") + function_name
    register = render(
        "mm/register_dispatch.mm.j2",
        arguments=wrap_arguments("REGISTER_DISPATCH(", [addition.stub, target], ")" + (";" if semi else "")),
        semicolon=semi,
    )

    if outside:
        insertions.append((max(k.end_line for k in outside), 0, [""] + function_block))
    elif literal:
        first = min(d.line for d in literal)
        insertions.append((first - 1, 0, function_block + [""]))
    elif source.namespace_end is not None:
        insertions.append((source.namespace_end - 1, 0, [""] + function_block))
    else:
        insertions.append((len(lines) - 1, 0, [""] + function_block))

    if literal:
        insertions.append((max(d.line for d in literal), 1, [register]))
    elif source.helper_instances:
        insertions.append((max(line for _m, _o, line in source.helper_instances), 1, ["", register]))
    elif source.namespace_end is not None:
        insertions.append((source.namespace_end - 1, 1, ["", register]))
    else:
        insertions.append((len(lines) - 1, 1, ["", register]))
    return "\n".join(insert_lines(lines, insertions))

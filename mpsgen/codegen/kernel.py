"""The text of a custom kernel, shared by new-kernel (which writes it into a tree) and ``try``
(which compiles and runs it on the host): what the op's schema gives the kernel (its
signature), the params struct, and the kernel with its registration macro."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from mpsgen.edits import METAL_COLUMN_LIMIT, realign_backslashes
from mpsgen.core.errors import BadInput, Refused
from mpsgen.core.render import render
from mpsgen.spec.kernel import KernelSpec
from mpsgen.tree.native_yaml import NativeFunction
from mpsgen.tree.schema import ARG_SPLIT, split_schema

# schema scalar type -> (Metal struct field type, host parameter type, host value of `name`)
SCALAR_TYPES = {
    "float": ("float", "double", "static_cast<float>({})"),
    "int": ("long", "int64_t", "{}"),
    "bool": ("bool", "bool", "{}"),
}


@dataclass(frozen=True)
class KernelScalar:
    """A non-tensor argument of the op, passed in the params struct."""

    name: str
    schema_type: str

    @property
    def metal_type(self) -> str:
        return SCALAR_TYPES[self.schema_type][0]

    @property
    def host_type(self) -> str:
        return SCALAR_TYPES[self.schema_type][1]

    @property
    def host_value(self) -> str:
        return SCALAR_TYPES[self.schema_type][2].format(self.name)


@dataclass(frozen=True)
class KernelSignature:
    """What the op's schema gives the kernel: its tensors (in schema order), the ones the
    kernel reads, and its scalars."""

    row: NativeFunction
    tensors: tuple[str, ...]
    inputs: tuple[str, ...]
    scalars: tuple[KernelScalar, ...]
    # spec input name -> the schema's name for it, where a release renamed the argument
    # (2.14.1's `grad_output` of _pdist_backward is 2.13's `grad`)
    renamed: tuple[tuple[str, str], ...] = ()
    out: str | None = None  # a structured row's out= argument (its TORCH_IMPL_FUNC writes it)
    input_types: tuple[tuple[str, str], ...] = ()  # inputs of a fixed Metal type (long indices)

    @property
    def structured(self) -> bool:
        return self.out is not None

    @property
    def host_function(self) -> str:
        """``<op>_mps``, or a structured row's ``<op>_out_mps`` (its TORCH_IMPL_FUNC)."""
        return f"{self.row.base}_out_mps" if self.structured else f"{self.row.base}_mps"

    def metal_type(self, name: str) -> str:
        """``T``, or the fixed Metal type of ``name``."""
        return dict(self.input_types).get(name, "T")

    def schema_name(self, name: str) -> str:
        return dict(self.renamed).get(name, name)

    def spec_name(self, name: str) -> str:
        return {b: a for a, b in self.renamed}.get(name, name)

    def host_parameters(self) -> list[str]:
        out = []
        for typ, name in schema_arguments(self.row.func):
            out.append(f"const Tensor& {name}" if typ.startswith("Tensor") else f"{SCALAR_TYPES[typ][1]} {name}")
        return out

    @property
    def all_tensors(self) -> tuple[str, ...]:
        """Every Tensor argument (not out=), by the spec's names: what torch's op takes."""
        return tuple(self.spec_name(t) for t in self.tensors)

    @property
    def struct_tensors(self) -> tuple[str, ...]:
        """The tensors whose sizes and strides the params struct carries: the output, then the
        inputs the kernel reads."""
        return ("output", *self.inputs)


def schema_arguments(func: str) -> list[tuple[str, str]]:
    """(type, name) of each argument of a schema, out= ones (``Tensor(a!)``) included."""
    return [(typ, name) for typ, name, _default in schema_parameters(func)]


def schema_parameters(func: str) -> list[tuple[str, str, str | None]]:
    """(type, name, default text or None) of each argument of a schema (split as the schema
    module splits them: a list default's commas stay inside it)."""
    inner, _ = split_schema(func)
    out = []
    for raw in (a.strip() for a in ARG_SPLIT.split(inner)):
        if not raw or raw == "*":
            continue
        head, eq, default = raw.partition("=")
        typ, _, name = head.strip().rpartition(" ")
        out.append((typ, name, default.strip() if eq else None))
    return out


def kernel_signature(spec: KernelSpec, row: NativeFunction, where: str, allocation: bool = True) -> KernelSignature:
    """The tensors and scalars of ``row``'s schema, refused where the kernel cannot take them."""
    tensors, scalars, outs = [], [], []
    for typ, name in schema_arguments(row.func):
        if typ.startswith("Tensor(") and typ.endswith("!)"):
            outs.append(name)
        elif typ == "Tensor":
            tensors.append(name)
        elif typ in SCALAR_TYPES:
            scalars.append(KernelScalar(name, typ))
        else:
            raise Refused(
                f"{where}: {row.name}'s argument `{typ} {name}` is not one new-kernel passes (it passes Tensor, float, "
                "int and bool arguments); the host function would not match the schema.",
                hint="Write this op's host code by hand, or ask for the argument type in an issue.",
            )
    if not tensors:
        raise Refused(f"{where}: {row.name} takes no Tensor; a kernel has nothing to read.")
    inputs = spec.inputs if spec.inputs is not None else tuple(tensors)
    renamed = []
    if spec.inputs is not None and len(inputs) == len(tensors):  # a renamed argument, in its place
        for mine, theirs in zip(inputs, tensors):
            if mine != theirs and mine not in tensors and theirs not in inputs:
                renamed.append((mine, theirs))
    for name in inputs:
        if name not in tensors and name not in dict(renamed):
            raise BadInput(
                f"{spec.source or 'the spec'}: input {name!r} is not a Tensor argument of {row.name} "
                f"({', '.join(tensors)}).",
                hint="List the schema's Tensor arguments the kernel reads under 'inputs'.",
            )
    if spec.output_like is not None and spec.output_like not in tensors and spec.output_like not in dict(renamed):
        raise BadInput(f"{spec.source or 'the spec'}: output.like {spec.output_like!r} is not a Tensor argument of {row.name}.")
    known = set(inputs) | set(tensors)
    for key in {k for shape in spec.try_shapes for k in shape} - known:
        raise BadInput(f"{spec.source or 'the spec'}: try_shapes names {key!r}, which is not a Tensor argument of {row.name} ({', '.join(tensors)}).")
    for key in {k for values in spec.try_params for k in values} - {s.name for s in scalars}:
        raise BadInput(f"{spec.source or 'the spec'}: try_params names {key!r}, which is not a scalar argument of {row.name}.")
    for name in spec.input_types:
        if name not in inputs:
            raise BadInput(f"{spec.source or 'the spec'}: input_types names {name!r}, which is not an input of the kernel ({', '.join(inputs)}).")
    if len(outs) > 1:
        raise Refused(f"{where}: {row.name} writes {len(outs)} outputs ({', '.join(outs)}); new-kernel writes one output per thread.")
    if not [t for t in inputs if t not in spec.input_types]:
        raise BadInput(f"{spec.source or 'the spec'}: every input has a fixed type (input_types); the kernel's T is the type of one input at least.")
    if outs and spec.output_like is not None or outs and spec.output_sizes is not None:
        raise BadInput(f"{spec.source or 'the spec'}: {row.name} is structured: its meta function shapes the output; leave 'output' out.")
    if allocation and not outs and spec.output_like is None and spec.output_sizes is None:
        raise BadInput(
            f"{spec.source or 'the spec'}: {row.name} allocates its output: give 'output' ({{like: <input>}} or {{sizes: \"{{...}}\"}}).",
        )
    return KernelSignature(
        row, tuple(tensors), tuple(inputs), tuple(scalars), tuple(renamed), outs[0] if outs else None,
        tuple(spec.input_types.items()),
    )


def struct_text(spec: KernelSpec, sig: KernelSignature) -> str:
    """The params struct, as the stem's header holds it."""
    said = (
        f"{spec.name}: what the host passes its kernel ({spec.file}.metal, one thread per output "
        "element). Sizes and strides are in elements, narrowed to 32 bits (the host checks they fit)."
    )
    comment = "\n".join("// " + ln for ln in textwrap.wrap(said, 77, break_long_words=False, break_on_hyphens=False))
    return render("kernel/params.h.j2", spec=spec, tensors=sig.struct_tensors, scalars=sig.scalars, comment=comment).rstrip("\n")


def body_text(spec: KernelSpec) -> str:
    lines = (spec.body.body or "").strip("\n").split("\n")
    indent = min((len(ln) - len(ln.lstrip(" ")) for ln in lines if ln.strip()), default=0)
    return "\n".join(("  " + ln[indent:]).rstrip() for ln in lines)


def kernel_text(spec: KernelSpec, sig: KernelSignature) -> str:
    args = ", ".join([*sig.inputs, "params", "index"])
    call = f"{spec.element_function}({args})"
    store = f"  output[index] = static_cast<T>({call});"
    if len(store) > METAL_COLUMN_LIMIT:  # as clang-format breaks it
        if len(f"      {call});") <= METAL_COLUMN_LIMIT:
            store = f"  output[index] = static_cast<T>(\n      {call});"
        else:
            store = f"  output[index] = static_cast<T>({spec.element_function}(\n      {args}));"
    types = {t: sig.metal_type(t) for t in sig.inputs}
    # in the registration macro clang-format tells a declaration from a product by a known
    # type: `constant long* indices` binds the `*` (and then the params' `&`), `DTYPE * x` not
    declared = any(t != "T" for t in types.values())
    head = f'  template [[host_name("{spec.kernel}_" #DTYPE)]] kernel void'
    whole = f"{head} {spec.kernel}<DTYPE>("
    # (clang-format keeps the declarator on the template's line when it fits, backslash included)
    template_line = f"{whole} \\" if len(whole) + 2 <= METAL_COLUMN_LIMIT else f"{head} \\\n  {spec.kernel}<DTYPE>( \\"
    text = render(
        "kernel/kernel.metal.j2", spec=spec, inputs=sig.inputs, types=types, body=body_text(spec), macro=register_macro(spec),
        store=store, params_ref="<>&" if declared else "<> &", template_line=template_line,
    )
    lines = text.rstrip("\n").split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#define "))
    end = next(i for i in range(start, len(lines)) if not lines[i].endswith("\\"))
    lines[start : end + 1] = realign_backslashes(lines[start : end + 1])
    return "\n".join(lines)


def register_macro(spec: KernelSpec) -> str:
    return f"REGISTER_{spec.kernel.upper()}_OP"

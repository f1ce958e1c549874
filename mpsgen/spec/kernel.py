"""The kernel spec: what ``mpsgen new-kernel`` generates for one custom (non-elementwise) op.

A custom kernel runs one GPU thread per output element (``[[thread_position_in_grid]]``); the
spec gives what that thread computes, as the body of a Metal function of the inputs, the params
struct and the output index. Everything around it (params header, kernel template, one
``host_name`` registration per dtype, host function, dispatch, test lists) is generated.

Schema (``specs/kernels/README.md``)::

    name: _pdist_forward          # the aten op (a row of the tree's native_functions.yaml)
    kind: kernel
    file: Distance                # kernels/Distance.{h,metal}, operations/Distance.mm
    kernel: pdist_forward         # the Metal kernel; host names pdist_forward_<dtype>
    dtypes: [float, half, bfloat]
    inputs: [self]                # the Tensor arguments the kernel reads (default: all)
    output: {like: self}          # or {sizes: "{self.size(0) * (self.size(0) - 1) / 2}"}
    checks:                       # TORCH_CHECKs of the host function, as the CPU op makes them
      - {require: "self.dim() == 2", message: "pdist only supports 2D tensors, got: {self.dim()}D"}
    body: |                       # returns output element `index` (in opmath_t<T>)
      ...
    opinfo: [nn.functional.pdist] # OpInfos testing the op, when their names do not say it
    try_shapes: [{self: [5, 3]}, {self: [1, 4]}, {self: [0, 3]}]
    try_params: [{p: 2.0}, {p: 1.0}]

Loading reports every problem as ``file:line:col``; a loaded :class:`KernelSpec` is valid.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mpsgen.core.errors import Location
from mpsgen.metal import NOT_METAL, SCALAR_TYPES
from mpsgen.spec.op import FunctorSource, node_location, scalar_value, scalar_text_start, check_name, load_spec_file, field_string, spec_fields, spec_mapping
from mpsgen.tree.source import mask_c_comments_and_strings

KERNEL_KIND = "kernel"
KERNEL_SPEC_KEYS = (
    "name", "kind", "file", "kernel", "dtypes", "inputs", "output", "checks", "body", "opinfo",
    "try_shapes", "try_params", "try_inputs", "max_dims", "input_types",
)
# the Metal types an input of a fixed dtype may have (indices: long), and their torch dtypes
FIXED_INPUT_TYPES = {t: SCALAR_TYPES[t] for t in ("long", "int", "short", "char", "uchar", "bool", "float")}
# the Metal types a custom kernel may be registered for (its body computes in opmath_t<T>)
KERNEL_DTYPES = ("float", "half", "bfloat")
MAX_DIMS = 4  # default length of the sizes/strides arrays of the params struct
FILE_STEM = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
# a host-side C++ expression of a check or an output size: names, numbers, calls, operators
_HOST_EXPR = re.compile(r"[A-Za-z0-9_ .,()+\-*/%<>=!&|?:\[\]{}']+\Z")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


@dataclass(frozen=True)
class HostCheck:
    """``TORCH_CHECK(require, message...)``: the message's ``{expr}`` parts are streamed values."""

    require: str
    message: str

    def message_parts(self) -> list[str]:
        """The TORCH_CHECK message arguments: C++ string literals and the ``{expr}`` values."""
        parts: list[str] = []
        at = 0
        for m in _PLACEHOLDER.finditer(self.message):
            if m.start() > at:
                parts.append(_c_string(self.message[at : m.start()]))
            parts.append(m.group(1).strip())
            at = m.end()
        if at < len(self.message):
            parts.append(_c_string(self.message[at:]))
        return parts


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class KernelSpec:
    name: str
    file: str
    kernel: str
    body: FunctorSource
    dtypes: tuple[str, ...] = KERNEL_DTYPES
    inputs: tuple[str, ...] | None = None  # None: every Tensor argument of the schema
    output_like: str | None = None  # the input the output is shaped like
    output_sizes: str | None = None  # or a C++ braced list of its sizes
    checks: tuple[HostCheck, ...] = ()
    opinfo: tuple[str, ...] = ()
    try_shapes: tuple[dict[str, tuple[int, ...]], ...] = ()
    try_params: tuple[dict[str, float | int | bool], ...] = ()
    # inputs `try` computes from the others with a torch op (a backward's forward result):
    # {input: (aten op, (argument names...))}
    try_inputs: dict[str, tuple[str, tuple, int | None]] = field(default_factory=dict)
    # inputs whose dtype is fixed rather than the kernel's T (max pooling's long indices)
    input_types: dict[str, str] = field(default_factory=dict)
    max_dims: int = MAX_DIMS
    source: str | None = None  # the spec file, when there is one
    kind: str = KERNEL_KIND

    @property
    def params_struct(self) -> str:
        """``PdistForwardParams``: the kernel name in CamelCase."""
        return "".join(p[:1].upper() + p[1:] for p in self.kernel.split("_") if p) + "Params"

    @property
    def element_function(self) -> str:
        return f"{self.kernel}_element"

    def host_names(self) -> list[str]:
        return [f"{self.kernel}_{t}" for t in self.dtypes]


def is_kernel_spec_text(text: str) -> bool:
    """Whether a spec file's text is a kernel spec (``kind: kernel`` at its top level)."""
    return re.search(r"^kind:\s*['\"]?kernel['\"]?\s*(?:#.*)?$", text, re.M) is not None


def load_kernel_spec(path: Path | str, *, display: str | None = None) -> KernelSpec:
    return load_spec_file(path, parse_kernel_spec_text, display=display)


def _identifiers(node, shown: str, key: str, problems: list, words: bool = False) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        problems.append((node_location(shown, node), f"'{key}' must be a non-empty list."))
        return ()
    out = []
    for item in node.value:
        v = scalar_value(item)
        if v is None or (not words and (why := check_name(v, f"'{key}' entry"))) or (words and not (why := f"{v!r} is not a name").startswith("x") and not re.fullmatch(r"\w+", v)):
            problems.append((node_location(shown, item), why if v is not None else f"each '{key}' entry is a name."))
        else:
            out.append(v)
    if len(set(out)) != len(out):
        problems.append((node_location(shown, node), f"'{key}' names an entry twice."))
    return tuple(out)


def host_expr_problem(expr: str) -> str | None:
    """Why a host-side expression (a check, an output size) cannot be one, or None."""
    if not expr.strip():
        return "is empty"
    if not _HOST_EXPR.match(expr) or ";" in expr or "//" in expr or "/*" in expr:
        return "must be one C++ expression of the op's arguments (no statements, comments or strings)"
    depth = 0
    for c in expr:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return "has an unbalanced bracket"
    return "has an unbalanced bracket" if depth else None


def body_problem(body: str) -> tuple[int, str] | None:
    """(line of the body, why) for what Metal cannot compile in a kernel body, found without a
    compiler (the gate compiles it), or None."""
    def line_of(at: int) -> int:
        return body.count("\n", 0, at) + 1

    if "\t" in body:
        return line_of(body.index("\t")), "the body holds a tab; PyTorch's .metal files indent and align with spaces"
    masked = mask_c_comments_and_strings(body)
    if "return" not in masked:
        return 1, "the body must return the output element's value (`return ...;`)"
    for pattern, why in NOT_METAL:
        if m := pattern.search(masked):
            return line_of(m.start()), why
    together = re.search(r"\b(threadgroup|threadgroup_barrier|simdgroup_barrier|simd_\w+|quad_\w+|atomic_\w+)\b", masked)
    if together:
        return line_of(together.start()), (
            f"it uses `{together.group(1)}`, but the body runs once per output element with no threadgroup of its own: "
            "threadgroup memory, barriers, SIMD-group and atomic functions need a kernel written by hand"
        )
    return None


def parse_kernel_spec_text(text: str, shown: str) -> tuple[KernelSpec | None, list[tuple[Location, str]]]:
    root, refused = spec_mapping(text, shown, "a kernel spec is a YAML mapping with at least 'name', 'kind: kernel', 'file' and 'body'.")
    if root is None:
        return None, refused
    problems: list[tuple[Location, str]] = []
    fields = spec_fields(root, KERNEL_SPEC_KEYS, f"a kernel spec knows {', '.join(KERNEL_SPEC_KEYS)}", shown, problems)

    def string(key: str) -> str | None:
        return field_string(fields, key, shown, problems)

    for key, why in (("name", "the aten op, e.g. _pdist_forward"), ("file", "the file stem, e.g. Distance"), ("body", "the kernel body")):
        if key not in fields:
            problems.append((Location(shown, 1, 1), f"missing required key '{key}' ({why})."))
    if string("kind") != KERNEL_KIND and "kind" in fields:
        problems.append((node_location(shown, fields["kind"][1]), "a kernel spec says 'kind: kernel' (elementwise kinds are new-op's: specs/README.md)."))
    name = string("name")
    if name is not None and (why := check_name(name, "'name'")):
        problems.append((node_location(shown, fields["name"][1]), why))
        name = None
    stem = string("file")
    if stem is not None and not FILE_STEM.match(stem):
        problems.append((node_location(shown, fields["file"][1]), f"'file' is a file stem like Distance (CamelCase letters and digits), not {stem!r}."))
        stem = None
    kernel = string("kernel") or (name.lstrip("_") if name else None)
    if "kernel" in fields and kernel and (why := check_name(kernel, "'kernel'")):
        problems.append((node_location(shown, fields["kernel"][1]), why))
    dtypes = KERNEL_DTYPES
    if "dtypes" in fields:
        node = fields["dtypes"][1]
        got = _identifiers(node, shown, "dtypes", problems, words=True)
        bad = [d for d in got if d not in KERNEL_DTYPES]
        if bad:
            problems.append((node_location(shown, node), f"unknown kernel dtype {bad[0]!r}; a custom kernel registers {', '.join(KERNEL_DTYPES)}."))
        elif got:
            dtypes = tuple(d for d in KERNEL_DTYPES if d in got)
    inputs = _identifiers(fields["inputs"][1], shown, "inputs", problems) if "inputs" in fields else None
    like = sizes = None
    if "output" in fields:
        node = fields["output"][1]
        got = {scalar_value(k): v for k, v in node.value} if isinstance(node, yaml.MappingNode) else {}
        if set(got) not in ({"like"}, {"sizes"}):
            problems.append((node_location(shown, node), "'output' is {like: <input>} or {sizes: \"{<C++ sizes>}\"}."))
        elif "like" in got:
            like = scalar_value(got["like"])
            if not like or check_name(like, "output.like"):
                problems.append((node_location(shown, got["like"]), "output.like names a Tensor input."))
        else:
            sizes = scalar_value(got["sizes"])
            why = host_expr_problem(sizes or "") or (None if (sizes or "").strip().startswith("{") else "must be a braced list like {n, m}")
            if why:
                problems.append((node_location(shown, got["sizes"]), f"output.sizes {why}."))

    checks = []
    if "checks" in fields:
        node = fields["checks"][1]
        if not isinstance(node, yaml.SequenceNode):
            problems.append((node_location(shown, node), "'checks' is a list of {require: <condition>, message: <text>}."))
        else:
            for item in node.value:
                got = {scalar_value(k): scalar_value(v) for k, v in item.value} if isinstance(item, yaml.MappingNode) else {}
                if set(got) != {"require", "message"} or not got["require"] or not got["message"]:
                    problems.append((node_location(shown, item), "each check is {require: <C++ condition>, message: <text with {expr} values>}."))
                    continue
                why = host_expr_problem(got["require"]) or next(
                    (f"message value {{{p}}} {w}" for p in _PLACEHOLDER.findall(got["message"]) if (w := host_expr_problem(p))), None
                )
                leftover = _PLACEHOLDER.sub("", got["message"])
                if not why and ("{" in leftover or "}" in leftover):
                    why = "message has an unbalanced { or }: a value is {expr}"
                if why or re.search(r'[\\"\n]', got["message"]):
                    problems.append((node_location(shown, item), f"check {why or 'message must be one line without quotes or backslashes'}."))
                    continue
                checks.append(HostCheck(got["require"].strip(), got["message"]))
    body = FunctorSource()
    if "body" in fields:
        node = fields["body"][1]
        value = scalar_value(node)
        if value and (found := body_problem(value)):
            first, _col = scalar_text_start(node, text)
            problems.append((Location(shown, first + found[0] - 1), f"'body': {found[1]}."))
        elif value:
            line, col = scalar_text_start(node, text)
            body = FunctorSource(body=value, origin=shown, line=line, column=col)
        else:
            problems.append((node_location(shown, node), "'body' must be the Metal code of the per-element function (a string)."))
    opinfo: tuple[str, ...] = ()
    if "opinfo" in fields:
        node = fields["opinfo"][1]
        if not isinstance(node, yaml.SequenceNode) or not all(re.fullmatch(r"[\w.]+", scalar_value(i) or "") for i in node.value):
            problems.append((node_location(shown, node), "'opinfo' lists OpInfo names like nn.functional.pdist."))
        else:
            opinfo = tuple(scalar_value(i) for i in node.value)
    max_dims = MAX_DIMS
    if "max_dims" in fields:
        v = scalar_value(fields["max_dims"][1]) or ""
        if not v.isdigit() or not 1 <= int(v) <= 16:
            problems.append((node_location(shown, fields["max_dims"][1]), "'max_dims' is a whole number from 1 to 16 (c10::metal::max_ndim)."))
        else:
            max_dims = int(v)
    def entries(key: str, read, what: str) -> list:
        """Each entry of the list under ``key`` read by ``read`` (a problem where it gives None)."""
        if key not in fields:
            return []
        node, out = fields[key][1], []
        for item in node.value if isinstance(node, yaml.SequenceNode) else [node]:
            value = read(item)
            if value is None:
                problems.append((node_location(shown, item), f"each {key} entry {what}."))
            else:
                out.append(value)
        return out

    try_shapes = entries("try_shapes", _shapes, "maps inputs to shapes, like {self: [5, 3]}")
    try_params = entries("try_params", _values, "maps arguments to numbers or booleans, like {p: 2.0}")
    try_inputs: dict[str, tuple[str, tuple, int | None]] = {}
    if "try_inputs" in fields:
        node = fields["try_inputs"][1]
        for k, v in node.value if isinstance(node, yaml.MappingNode) else []:
            derived = _derived_input(v)
            if derived is None:
                problems.append((node_location(shown, v), "each try_inputs entry is {op: <aten op>, args: [<argument names or numbers>], output: <n>} (output: which result of a tuple)."))
                continue
            try_inputs[scalar_value(k)] = derived
        if not isinstance(node, yaml.MappingNode):
            problems.append((node_location(shown, node), "'try_inputs' maps an input to {op: <aten op>, args: [...]}."))
    input_types: dict[str, str] = {}
    if "input_types" in fields:
        node = fields["input_types"][1]
        got = {scalar_value(k): (scalar_value(v), v) for k, v in node.value} if isinstance(node, yaml.MappingNode) else None
        if got is None:
            problems.append((node_location(shown, node), "'input_types' maps inputs to fixed Metal types, like {indices: long}."))
        else:
            for key, (value, vnode) in got.items():
                if value not in FIXED_INPUT_TYPES or not key:
                    problems.append((node_location(shown, vnode), f"input_types: {value!r} is not one of {', '.join(FIXED_INPUT_TYPES)}."))
                else:
                    input_types[key] = value
    if problems or name is None or stem is None or kernel is None:
        return None, problems
    return KernelSpec(
        name=name, file=stem, kernel=kernel, body=body, dtypes=dtypes, inputs=inputs, output_like=like, output_sizes=sizes,
        checks=tuple(checks), opinfo=opinfo, try_shapes=tuple(try_shapes), try_params=tuple(try_params), try_inputs=try_inputs,
        input_types=input_types, max_dims=max_dims,
        source=shown,
    ), []


def _derived_input(node) -> tuple[str, tuple, int | None] | None:
    """{op, args, output?}: args are argument names, numbers or lists of numbers."""
    got = {scalar_value(a): b for a, b in node.value} if isinstance(node, yaml.MappingNode) else {}
    op = scalar_value(got["op"]) if "op" in got else None
    if not set(got) <= {"op", "args", "output"} or not op or check_name(op, "op") or not isinstance(got.get("args"), yaml.SequenceNode):
        return None
    args: list = []
    for a in got["args"].value:
        if isinstance(a, yaml.SequenceNode):
            items = [scalar_value(x) for x in a.value]
            if not all(x is not None and re.fullmatch(r"-?\d+", x) for x in items):
                return None
            args.append(tuple(int(x) for x in items))
            continue
        text = scalar_value(a)
        if text is None:
            return None
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            args.append(text)
        elif re.fullmatch(r"-?\d+", text):
            args.append(int(text))
        else:
            try:
                args.append(float(text))
            except ValueError:
                return None
    output = None
    if "output" in got:
        text = scalar_value(got["output"]) or ""
        if not text.isdigit():
            return None
        output = int(text)
    return op, tuple(args), output


def _shapes(node) -> dict[str, tuple[int, ...]] | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    out = {}
    for k, v in node.value:
        key = scalar_value(k)
        if not key or not isinstance(v, yaml.SequenceNode):
            return None
        dims = [scalar_value(d) for d in v.value]
        if not all(d is not None and d.isdigit() and int(d) <= 4096 for d in dims):
            return None
        out[key] = tuple(int(d) for d in dims)
    return out or None


def _values(node) -> dict | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    out: dict = {}
    for k, v in node.value:
        key, text = scalar_value(k), scalar_value(v)
        if not key or text is None:
            return None
        if text in ("true", "false"):
            out[key] = text == "true"
            continue
        low = text.lower()
        if low in (".inf", "+.inf", "-.inf", "inf", "-inf"):
            out[key] = -math.inf if low.startswith("-") else math.inf
            continue
        try:
            out[key] = int(text) if re.fullmatch(r"-?\d+", text) else float(text)
        except ValueError:
            return None
    return out

"""The reduction spec: what mpsgen generates for a reduction stub (``prod_stub``,
``std_var_stub``) and how ``mpsgen try`` checks it.

A reduction runs one threadgroup per output element: its threads stride over the reduced
elements, each folding its share into an accumulator (padding threads keep the op's
identity), then a SIMD-group reduction and a threadgroup reduction through threadgroup memory
collapse the partials, and thread 0 writes the output(s). The spec gives the parts that differ
from op to op; everything else is the kernel template's (``templates/reduction/``).

Schema (``specs/kernels/README.md``, "Reduction specs")::

    stub: prod_stub               # the CPU stub the host kernel registers (DECLARE_DISPATCH in ReduceOps.h)
    kind: reduction
    ops: [prod]                   # the aten ops that reach the stub (try, explain)
    file: ReduceOps               # kernels/ReduceOps.metal (default)
    kernel: prod                  # host names prod_reduction_general_<TI>_<TO>
    reduce: {identity: "1", combine: "a * b", simd: simd_prod}   # or MaxOp / MinOp (the tree's), or welford
    load: x                       # per element, x in the accumulation type
    accumulate: opmath            # TA = opmath_t<TO> (float for half/bfloat), or float
    params: []                    # the stub's arguments after the TensorIterator
    finalize: ""                  # Metal statements thread 0 runs before storing (of acc / mean, m2, n, params)
    outputs: [acc]                # one or two output values
    dtypes: [[float, float], [int, long], ...]   # (input, output) pairs
    empty: "1"                    # what the shared CPU path fills when nothing is reduced
    try: [{call: prod}]           # torch calls try compares with (dims: one | list)
    complex: parts                # (optional) the shared path hands the stub a complex input's real and
                                  # imaginary parts, never the complex tensor (ReduceOps.cpp's std_var_out)

Loading reports every problem as ``file:line:col``; a loaded :class:`ReductionSpec` is valid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from mpsgen.core.errors import Location
from mpsgen.core.resources import resource_dir
from mpsgen.metal import TORCH_NAMES
from mpsgen.spec.op import node_location, check_name, load_spec_file, spec_fields, spec_mapping
from mpsgen.tree.schema import schema_args
from mpsgen.tree.stubs import REDUCTION_STUB_HEADERS  # (a reduction stub's headers: check reads them too)

REDUCTION_KIND = "reduction"
REDUCTION_KEYS = (
    "stub", "kind", "ops", "file", "kernel", "reduce", "load", "accumulate", "params", "finalize", "outputs",
    "dtypes", "empty", "try", "max_dims", "complex",
)
# the Metal types a reduction registers, with the torch dtype each stands for
REDUCTION_DTYPES = {t: TORCH_NAMES[t] for t in ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool")}
# the stub arguments a reduction may take, and the Metal type the params struct holds each in
PARAM_TYPES = {"double": "float", "bool": "bool", "int64_t": "long"}
TREE_OPS = ("MaxOp", "MinOp", "SumOp", "ProdOp")  # c10::metal op structs a tree may have
WELFORD = "welford"
_STEM = re.compile(r"[A-Z][A-Za-z0-9]*\Z")
# a Metal expression or statement of a spec: no preprocessor, comments, strings, braces or
# what a kernel cannot do (the template owns control flow, memory and synchronisation)
_FORBIDDEN = re.compile(r"#|//|/\*|\"|\bthreadgroup\w*|\bsimd_\w+|\bdevice\b|\batomic\w*|\bwhile\b|\bfor\b|\bgoto\b|\breturn\b")


@dataclass(frozen=True)
class OwnOp:
    """An op struct the spec defines: identity, combine of ``a`` and ``b``, and the tree's
    SIMD-group helper that reduces it (``simd_prod``)."""

    identity: str
    combine: str
    simd: str


@dataclass(frozen=True)
class ReductionParam:
    name: str
    type: str  # the stub's C++ type: double, bool, int64_t

    @property
    def metal_type(self) -> str:
        return PARAM_TYPES[self.type]


@dataclass(frozen=True)
class TryCall:
    """A torch call ``try`` compares the kernel with: ``torch.<call>(x, dim=..., keepdim=..., **kwargs)``
    and the stub arguments the host would pass for it."""

    call: str
    kwargs: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    dims: str = "list"  # "one": the op takes one dim (prod), several are reduced as one flattened dim


@dataclass(frozen=True)
class ReductionSpec:
    stub: str
    ops: tuple[str, ...]
    kernel: str
    reduce: str | OwnOp  # a tree op struct's name, "welford", or the spec's own op
    outputs: tuple[str, ...]
    dtypes: tuple[tuple[str, str], ...]  # (input, output) Metal types, one registration each
    empty: str
    file: str = "ReduceOps"
    load: str = "x"
    accumulate: str = "opmath"
    params: tuple[ReductionParam, ...] = ()
    finalize: str = ""
    try_calls: tuple[TryCall, ...] = ()
    max_dims: int = 8
    complex: str = ""  # "parts": complex inputs reach the stub as their real and imaginary parts
    source: str | None = None
    kind: str = REDUCTION_KIND

    @property
    def params_struct(self) -> str:
        return "".join(p[:1].upper() + p[1:] for p in self.kernel.split("_") if p) + "ReductionParams"

    @property
    def op_struct(self) -> str:
        if isinstance(self.reduce, OwnOp):
            return "".join(p[:1].upper() + p[1:] for p in self.kernel.split("_") if p) + "ReduceOp"
        return f"c10::metal::{self.reduce}"

    @property
    def kernel_function(self) -> str:
        return f"{self.kernel}_reduction_general"

    def host_name(self, ti: str, to: str) -> str:
        return f"{self.kernel_function}_{ti}_{to}"

    @property
    def welford(self) -> bool:
        return self.reduce == WELFORD


def is_reduction_spec_text(text: str) -> bool:
    return re.search(r"^kind:\s*['\"]?reduction['\"]?\s*(?:#.*)?$", text, re.M) is not None


def load_reduction_spec(path: Path | str, *, display: str | None = None) -> ReductionSpec:
    return load_spec_file(path, parse_reduction_spec_text, display=display)


def shipped_reduction_spec(op: str) -> Path | None:
    """``specs/reductions/<stub>.yaml`` serving ``op`` (prod; var, std, var_mean, std_mean)."""
    folder = resource_dir("specs") / "reductions"
    direct = folder / f"{op}.yaml"
    if direct.is_file():
        return direct
    for path in sorted(folder.glob("*.yaml")):
        m = re.search(r"^ops:\s*\[([^\]]*)\]", path.read_text(encoding="utf-8"), re.M)
        if m and op in [s.strip() for s in m.group(1).split(",")]:
            return path
    return None


# what says a row reduces (its kernel is a reduction, never an elementwise functor): a loss's
# `int reduction`, a `bool keepdim`, the `reduction` tag, a stub declared in these headers
REDUCING_ARGUMENTS = {"reduction": "int reduction", "keepdim": "bool keepdim"}


def reduction_evidence(func: str, tags: tuple[str, ...] = (), stub: str | None = None, stub_declared: str | None = None) -> str | None:
    """Why a row of native_functions.yaml reduces (a phrase), or None."""
    if stub and stub_declared and stub_declared.rsplit(":", 1)[0].rsplit("/", 1)[-1] in REDUCTION_STUB_HEADERS:
        return f"runs {stub}, a reduction stub ({stub_declared})"
    if "reduction" in tags:
        return "is tagged `reduction`"
    names = {n for _t, n in schema_args(func)}
    backward = func.split("(", 1)[0].split(".", 1)[0].endswith("_backward")  # (a loss's backward spreads, it does not reduce)
    for name, shown in REDUCING_ARGUMENTS.items():
        if name in names and not (backward and name == "reduction"):
            return f"takes `{shown}`"
    return None


def _expr_problem(text: str, names: set[str]) -> str | None:
    """Why a spec's Metal expression or statements cannot be one (None: fine)."""
    if not text.strip():
        return "is empty"
    if "\t" in text:
        return "holds a tab (PyTorch's .metal files indent with spaces)"
    if m := _FORBIDDEN.search(text):
        return f"uses {m.group(0)!r}; the kernel template owns control flow, memory and synchronisation"
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return "has an unbalanced bracket"
    if depth:
        return "has an unbalanced bracket"
    if "{" in text:
        return "holds a brace; give expressions and plain statements"
    return None


def parse_reduction_spec_text(text: str, shown: str) -> tuple[ReductionSpec | None, list[tuple[Location, str]]]:
    root, refused = spec_mapping(
        text, shown, "a reduction spec is a YAML mapping with 'stub', 'kind: reduction', 'ops', 'reduce', 'outputs', 'dtypes' and 'empty'."
    )
    if root is None:
        return None, refused
    problems: list[tuple[Location, str]] = []
    fields = spec_fields(root, REDUCTION_KEYS, f"a reduction spec knows {', '.join(REDUCTION_KEYS)}", shown, problems)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:  # (a tag the safe loader does not construct)
        return None, [(Location(shown, 1, 1), f"not a plain YAML mapping: {str(exc).splitlines()[0]}.")]

    def at(key: str) -> Location:
        return node_location(shown, fields[key][1]) if key in fields else Location(shown, 1, 1)

    def bad(key: str, why: str) -> None:
        problems.append((at(key), why))

    for key, why in (("stub", "the CPU stub, e.g. prod_stub"), ("ops", "the aten ops reaching the stub"), ("reduce", "the op"),
                     ("outputs", "the output values"), ("dtypes", "input type: output type"), ("empty", "what an empty reduction gives")):
        if key not in fields:
            problems.append((Location(shown, 1, 1), f"missing required key '{key}' ({why})."))
    if value.get("kind") != REDUCTION_KIND:
        bad("kind", "a reduction spec says 'kind: reduction'.")
    stub = value.get("stub")
    if "stub" in fields and (not isinstance(stub, str) or check_name(stub, "stub") or not stub.endswith("_stub")):
        bad("stub", f"'stub' names a DECLARE_DISPATCH stub like prod_stub, not {stub!r}.")
    ops = value.get("ops")
    if "ops" in fields and (not isinstance(ops, list) or not ops or not all(isinstance(o, str) and not check_name(o, "op") for o in ops)):
        bad("ops", "'ops' lists aten op names, like [var, std, var_mean, std_mean].")
        ops = []
    stem = value.get("file", "ReduceOps")
    if not isinstance(stem, str) or not _STEM.match(stem):
        bad("file", f"'file' is a file stem like ReduceOps, not {stem!r}.")
    kernel = value.get("kernel") or (stub.removesuffix("_stub") if isinstance(stub, str) else None)
    if not isinstance(kernel, str) or check_name(kernel, "kernel"):
        bad("kernel", f"'kernel' is a C identifier, not {kernel!r}.")
    params: list[ReductionParam] = []
    if not isinstance(value.get("params") or [], list):
        bad("params", "'params' lists {name: <stub argument>, type: <C++ type>} entries, in the stub's order.")
    for p in value.get("params") if isinstance(value.get("params"), list) else []:
        if not isinstance(p, dict) or set(p) != {"name", "type"} or p.get("type") not in PARAM_TYPES or check_name(str(p.get("name")), "param"):
            bad("params", f"each param is {{name: <stub argument>, type: {' | '.join(PARAM_TYPES)}}}, in the stub's order; not {p!r}.")
            continue
        params.append(ReductionParam(p["name"], p["type"]))
    names = {p.name for p in params}
    reduce = value.get("reduce")
    op: str | OwnOp | None = None
    if isinstance(reduce, str) and (reduce in TREE_OPS or reduce == WELFORD):
        op = reduce
    elif isinstance(reduce, dict) and set(reduce) == {"identity", "combine", "simd"}:
        ident, comb, simd = (str(reduce[k]) for k in ("identity", "combine", "simd"))
        why = _expr_problem(ident, names) or _expr_problem(comb, names)
        if why:
            bad("reduce", f"reduce: an identity or combine expression {why}.")
        elif not re.fullmatch(r"simd_\w+", simd):
            bad("reduce", f"reduce.simd names the tree's SIMD-group helper (simd_prod, simd_sum, ...), not {simd!r}.")
        else:
            op = OwnOp(ident, comb, simd)
    elif "reduce" in fields:
        bad("reduce", f"'reduce' is one of the tree's op structs ({', '.join(TREE_OPS)}), welford, or "
            "{identity: <expr>, combine: <expr of a and b>, simd: <the tree's simd_* helper>}.")
    load = value.get("load", "x")
    if not isinstance(load, (str, int, float)) or isinstance(load, bool):
        bad("load", "'load' is a Metal expression of x, like x * x.")
        load = "x"
    load = str(load)
    if why := _expr_problem(load, names):
        bad("load", f"'load' {why}.")
    accumulate = value.get("accumulate", "opmath")
    if accumulate not in ("opmath", "float"):
        bad("accumulate", "'accumulate' is opmath (opmath_t of the output type: float for half and bfloat) or float.")
    if op == WELFORD and accumulate != "float":
        bad("accumulate", "a welford reduction accumulates in float (the tree's welford_combine takes float3).")
    finalize = value.get("finalize") or ""
    if not isinstance(finalize, str):
        bad("finalize", "'finalize' is Metal statements (a string).")
        finalize = ""
    if finalize and (why := _expr_problem(str(finalize), names)):
        bad("finalize", f"'finalize' {why}.")
    outputs = value.get("outputs")
    if "outputs" in fields:
        if not isinstance(outputs, list) or not 1 <= len(outputs) <= 2:
            bad("outputs", "'outputs' lists one or two output values (expressions).")
            outputs = []
        for o in outputs:
            if not isinstance(o, (str, int, float)) or isinstance(o, bool):
                bad("outputs", f"an output value is a Metal expression, not {o!r}.")
            elif why := _expr_problem(str(o), names):
                bad("outputs", f"an output value {why}.")
    dtypes = value.get("dtypes")
    if "dtypes" in fields:
        ok = isinstance(dtypes, list) and dtypes and all(
            isinstance(d, list) and len(d) == 2 and all(t in REDUCTION_DTYPES for t in d) for d in dtypes
        )
        if not ok or len({tuple(d) for d in dtypes}) != len(dtypes):
            bad("dtypes", f"'dtypes' lists [input, output] type pairs, once each, of {', '.join(REDUCTION_DTYPES)}.")
            dtypes = []
    empty = value.get("empty")
    if "empty" in fields and str(empty).lower() not in ("nan", "0", "1", "inf", "-inf"):
        bad("empty", "'empty' is what the CPU path fills for an empty reduction: nan, 0, 1, inf or -inf.")
    calls: list[TryCall] = []
    if not isinstance(value.get("try") or [], list):
        bad("try", "'try' lists {call: <torch function>, ...} entries.")
    for c in value.get("try") if isinstance(value.get("try"), list) else []:
        if not isinstance(c, dict) or not isinstance(c.get("call"), str) or not set(c) <= {"call", "kwargs", "params", "dims"} or c.get("dims", "list") not in ("one", "list"):
            bad("try", f"each try entry is {{call: <torch function>, kwargs: {{...}}, params: {{<stub argument>: value}}, dims: one | list}}; not {c!r}.")
            continue
        unknown = set(c.get("params") or {}) - names
        if unknown:
            bad("try", f"try: params {sorted(unknown)} are not the stub's ({', '.join(sorted(names)) or 'none'}).")
            continue
        calls.append(TryCall(c["call"], dict(c.get("kwargs") or {}), dict(c.get("params") or {}), c.get("dims", "list")))
    max_dims = value.get("max_dims", 8)
    if type(max_dims) is not int or not 1 <= max_dims <= 16:
        bad("max_dims", "'max_dims' is a whole number from 1 to 16 (c10::metal::max_ndim).")
    complex_ = value.get("complex", "")
    if complex_ not in ("", "parts"):
        bad("complex", "'complex: parts' says the shared CPU path hands the stub a complex input's real and imaginary parts; "
            "leave it out otherwise.")
    if problems or op is None:
        return None, problems
    return ReductionSpec(
        stub=stub, ops=tuple(ops), kernel=kernel, reduce=op, outputs=tuple(str(o) for o in outputs), dtypes=tuple((a, b) for a, b in dtypes),
        empty=str(empty).lower(), file=stem, load=load, accumulate=accumulate, params=tuple(params), finalize=str(finalize).strip(),
        try_calls=tuple(calls), max_dims=max_dims, complex=complex_ or "", source=shown,
    ), []

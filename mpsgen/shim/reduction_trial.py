"""``mpsgen try`` of a reduction spec: the generated kernel, compiled with the tree's
``c10/metal/reduction_utils.h`` against mpsgen's model of Metal (``templates/try/metal_shim.h``)
and of a threadgroup (``templates/try/metal_threads.h``: one fiber per thread, barriers that
really wait, SIMD-group functions over the active lanes, garbage in threadgroup memory and in
lanes that take no part), run one threadgroup per output element as the host dispatches it,
and compared with torch's CPU op.

The host's part is modelled in Python: the params (sizes, strides in elements, the reduced
extent; a size-1 dim's stride 0), the threads per threadgroup
(:func:`mpsgen.codegen.reduction.threadgroup_size`) and the fill of an empty reduction (the
shared CPU path fills it and never calls the stub).
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import math
import os
import re
import struct
import subprocess
import sys
import warnings
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from mpsgen.core import child
from mpsgen.core.errors import BadInput, Refused
from mpsgen.core.render import render
from mpsgen.core.resources import resource_dir
from mpsgen.metal import TOLERANCES
from mpsgen.spec.reduction import REDUCTION_DTYPES, ReductionSpec
from mpsgen.codegen.reduction import kernel_source, params_header, read_helpers, threadgroup_size
from mpsgen.codegen.reduction_dispatch import NARROW, misfit, op_struct, op_struct_name
from mpsgen.shim.toolchain import build_program, cache_dir, compiler
from mpsgen.shim.trial import closing_lines, failure_lines, import_torch, missing_requirements, tensor_bytes


TIME_LIMIT = 60.0  # seconds for one dtype's cases
# Metal type -> (C++ type the kernel is instantiated with, the type torch stores it as)
_CXX = {
    "float": ("float", "float"), "half": ("half", "uint16_t"), "bfloat": ("bfloat", "uint16_t"),
    "long": ("long", "int64_t"), "int": ("int", "int32_t"), "short": ("short", "int16_t"),
    "char": ("signed char", "int8_t"), "uchar": ("uchar", "uint8_t"), "bool": ("bool", "uint8_t"),
}
_TG_ARRAY = re.compile(r"^(\s*)threadgroup\s+(.+?)\s+(\w+)\s*\[([^\]]+)\];", re.M)
_INCLUDE = re.compile(r"^\s*#\s*include\b.*$", re.M)
# (rtol, atol) of the output dtype, before the allowance for the reduction's length


@dataclass
class ReductionCase:
    pair: str  # "half->float"
    what: str
    ok: bool
    detail: str = ""
    route: str = ""  # "": the general kernel; else the dispatcher whose value kernels ran the op struct


@dataclass
class ReductionTrial:
    spec: ReductionSpec
    header: str  # the reduction_utils.h the kernel was built with
    cases: list[ReductionCase] = field(default_factory=list)
    cached: bool = True
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[ReductionCase]:
        return [c for c in self.cases if not c.ok]


def installed_header(torch=None) -> Path:
    """The installed torch's ``c10/metal/reduction_utils.h`` (try's tree of the day), found
    without importing torch (``torch``, when given, is only where it is)."""
    if torch is not None:
        folder = Path(torch.__file__).parent
    else:
        found = importlib.util.find_spec("torch")
        if found is None or not found.submodule_search_locations:
            raise missing_requirements(False, compiler())
        folder = Path(list(found.submodule_search_locations)[0])
    path = folder / "include" / "c10" / "metal" / "reduction_utils.h"
    if not path.is_file():
        raise BadInput(f"torch {_torch_version()} ships no {path}; mpsgen try needs the tree's reduction helpers.")
    return path


def for_model(metal: str) -> str:
    """Metal source as the CPU model compiles it: ``threadgroup T name[N];`` declarations become
    storage the threadgroup's threads share, and ``#include`` lines go (the model provides them)."""
    metal = _INCLUDE.sub("", metal)
    return _TG_ARRAY.sub(lambda m: f"{m.group(1)}MPSGEN_TG_ARRAY({m.group(3)}, {m.group(4)}, {m.group(2)});", metal)


def driver_source(spec: ReductionSpec, helpers_text: str, kernel: str, harness: str = "") -> str:
    """The program: the kernel (and, for a spec a tree's dispatcher can run, the op struct
    written for it inside mpsgen's model of the dispatcher's value kernels), run by
    ``<program> <pair> <route>`` (route 0: the general kernel, 1: the model)."""
    nout = len(spec.outputs)
    fill = "".join(
        f"    for (int d = 0; d < p.ndim; ++d) p.{a}[d] = (uint32_t)rd();\n"
        for a in ("input_sizes", "input_strides", "output_sizes", "output_strides") + (("output1_strides",) if nout > 1 else ())
    )
    if nout > 1:
        fill += "    p.noutputs = (uint32_t)rd();\n"
    for prm in spec.params:
        fill += f"    p.{prm.name} = ({prm.metal_type})rdf();\n"
    outs = ", ".join(f"out{k}.get()" for k in range(nout))
    harness_call = (f"        else dispatch_model::{spec.kernel}_dispatch_harness<TI, TO>(in.get() + offset, {outs}, p, tid, (uint)tptg, (uint)g, tid % 32, tid / 32);"
                    if harness else "        else std::exit(6);")
    cases = "".join(
        f"  if (which == {i}) return run<{_CXX[ti][0]}, {_CXX[ti][1]}, {_CXX[to][0]}, {_CXX[to][1]}>(route);  // {ti} -> {to}\n"
        for i, (ti, to) in enumerate(spec.dtypes)
    )
    return f"""#include "metal_shim.h"
#include "metal_threads.h"
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>
#define device
#define constant
#define thread
using namespace metal;
using namespace c10::metal;

// ---- the tree's c10/metal/reduction_utils.h (its #include lines dropped)
{for_model(helpers_text)}

// ---- the params header and the kernel as mpsgen writes them
{params_header(spec)}

{for_model(kernel)}

{"namespace dispatch_model {" + chr(10) + for_model(harness) + chr(10) + "}  // namespace dispatch_model" if harness else ""}

// ---- the host, as the generated host function dispatches the kernel
static bool read_all(void* p, size_t n) {{ return std::fread(p, 1, n, stdin) == n; }}
static int64_t rd() {{ int64_t v; if (!read_all(&v, 8)) std::exit(4); return v; }}
static double rdf() {{ double v; if (!read_all(&v, 8)) std::exit(4); return v; }}
template <typename T, typename S> static T load(S s) {{ if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat>::value) return T::from_bits(s); else return static_cast<T>(s); }}
template <typename S, typename T> static S store(T t) {{ if constexpr (std::is_same<T, half>::value || std::is_same<T, bfloat>::value) return t.bits; else return static_cast<S>(t); }}

template <typename TI, typename SI, typename TO, typename SO>
static int run(int route) {{
  int64_t ncases = rd();
  for (int64_t c = 0; c < ncases; ++c) {{
    {spec.params_struct}<> p{{}};
    p.ndim = (uint32_t)rd();
{fill}    p.reduction_size = (uint32_t)rd();
    int64_t groups = rd(), out_len = rd(), tptg = rd(), seed = rd(), count = rd(), offset = rd();
    std::vector<SI> raw(count);
    if (count && !read_all(raw.data(), count * sizeof(SI))) return 4;
    std::unique_ptr<TI[]> in(new TI[count + 1]);  // (not std::vector: vector<bool> has no data())
    for (int64_t i = 0; i < count; ++i) in[i] = load<TI, SI>(raw[i]);
{"".join(f"    std::unique_ptr<TO[]> out{k}(new TO[out_len + 1]); mpsgen_threads::garbage(out{k}.get(), out_len * sizeof(TO));{chr(10)}" for k in range(nout))}    for (int64_t g = 0; g < groups; ++g) {{
      bool ok = mpsgen_threads::run_threadgroup((unsigned)tptg, (uint64_t)(seed * 7919 + g), [&](unsigned tid) {{
        if (route == 0) {spec.kernel_function}<TI, TO>(in.get() + offset, {outs}, p, tid, (uint)tptg, (uint)g, tid % 32, tid / 32);
{harness_call}
      }});
      if (!ok) {{ std::fprintf(stderr, "%s\\n", mpsgen_threads::M.error); return 5; }}
    }}
{"".join(f"    for (int64_t i = 0; i < out_len; ++i) {{ SO s = store<SO, TO>(out{k}[i]); std::fwrite(&s, sizeof(SO), 1, stdout); }}{chr(10)}" for k in range(nout))}  }}
  return 0;
}}

int main(int argc, char** argv) {{
  if (argc < 3) return 2;
  int which = std::atoi(argv[1]), route = std::atoi(argv[2]);
{cases}  return 3;
}}
"""


def _shim(name: str) -> str:
    return (resource_dir("templates") / "try" / name).read_text(encoding="utf-8")


def build(spec: ReductionSpec, helpers_text: str, kernel: str, cxx: str, harness: str = "") -> tuple[Path, bool]:
    """The compiled program (cached by content) and whether it came from the cache."""
    source = driver_source(spec, helpers_text, kernel, harness)
    shims = {n: _shim(n) for n in ("metal_shim.h", "metal_threads.h")}
    # -fwrapv: Metal's integers wrap on overflow (C++'s signed overflow is undefined)
    binary, cached, failed = build_program(
        f"reduction-{spec.kernel}", {"driver.cpp": source, **shims}, cxx, ["-O1", "-fwrapv", "-w"],
        f"the {spec.stub} reduction kernel", spec.source or spec.stub,
    )
    if failed is not None:
        errors = [ln for ln in failed.stderr.splitlines() if "error" in ln][:3]
        raise BadInput(
            f"{spec.source or spec.stub}: the reduction kernel does not compile against mpsgen's Metal model "
            f"({binary}.src/driver.cpp): " + " / ".join(errors or failed.stderr.strip().splitlines()[-3:]) + "."
        )
    return binary, cached


# ---------------------------------------------------------------------------------------------
# the cases


@dataclass(frozen=True)
class Shape:
    """An input (sizes; how it is laid out), the dims reduced (None: all), keepdim, the
    values drawn, and the host's threadgroup limit."""

    sizes: tuple[int, ...]
    dims: tuple[int, ...] | None
    layout: str = "contiguous"  # contiguous, transposed, sliced, offset
    values: str = "random"  # random, edges, near1
    keepdim: bool = False
    limit: int = 1024
    out_layout: str = "contiguous"  # or "transposed", "sliced": an out= tensor of other strides

    def label(self) -> str:
        dims = "all" if self.dims is None else ",".join(map(str, self.dims))
        extra = f", keepdim" if self.keepdim else ""
        extra += f", {self.limit} threads per threadgroup at most" if self.limit != 1024 else ""
        extra += f", {self.out_layout} output" if self.out_layout != "contiguous" else ""
        return f"{self.sizes} {self.layout} dims={dims} {self.values}{extra}"


SHAPES = (
    Shape((5, 7), None),
    Shape((5, 7), (0,)),
    Shape((5, 7), (1,), keepdim=True),
    Shape((4, 3, 5), (1,), out_layout="transposed"),
    Shape((6, 5, 3), (2,), layout="transposed", out_layout="sliced"),
    Shape((3, 4, 5), (0, 2)),
    Shape((3, 4, 5), (1, 2), keepdim=True),
    Shape((6, 5), (1,), layout="transposed"),
    Shape((6, 5), (0,), layout="sliced"),
    Shape((4, 9), (1,), layout="offset"),
    Shape((4, 0), (1,)),
    Shape((0, 3), (1,)),
    Shape((1, 6, 1), (1,)),
    Shape((3, 1), (1,)),
    Shape((5, 7), None, values="edges"),
    Shape((4, 40), (1,), values="edges"),
    Shape((3, 300), (1,), values="near1", limit=64),
    Shape((2, 2500), (1,), values="near1"),
)


def _values(torch, sizes, dtype, kind: str, gen):
    if dtype.is_complex:
        return torch.randn(sizes, dtype=dtype, generator=gen)
    if dtype == torch.bool:
        return torch.rand(sizes, generator=gen) < (0.9 if kind != "edges" else 0.5)
    if dtype.is_floating_point:
        if kind == "near1":
            return (1 + 0.01 * torch.randn(sizes, generator=gen)).to(dtype)
        if kind == "edges":
            pool = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, float("nan"), float("inf"), -float("inf"), 1e30])
            return pool[torch.randint(0, len(pool), sizes, generator=gen)].to(dtype)
        return torch.randn(sizes, generator=gen).to(dtype)
    info = torch.iinfo(dtype)
    if kind == "edges":
        pool = torch.tensor([1, 2, 7, info.max, info.min, info.max - 1, 0] + ([-1, -3] if info.min < 0 else []))
        return pool[torch.randint(0, len(pool), sizes, generator=gen)].to(dtype)
    if kind == "near1":  # odd factors: a long product wraps but never reaches 0 (mod 2^64)
        v = torch.randint(0, 5, sizes, generator=gen) * 2 + 1
        sign = torch.where(torch.rand(sizes, generator=gen) < 0.5, -1, 1) if info.min < 0 else 1
        return (v * sign).to(dtype)
    low = 1 if info.min == 0 else -9
    v = torch.randint(low, 10, sizes, generator=gen)
    return torch.where(v == 0, torch.ones_like(v), v).to(dtype)  # (a zero would hide an overflow)


def _laid_out(torch, shape: Shape, dtype, gen):
    s = shape.sizes
    if shape.layout == "transposed":
        return _values(torch, (*s[:-2], s[-1], s[-2]), dtype, shape.values, gen).transpose(-1, -2)
    if shape.layout == "sliced":
        return _values(torch, (s[0] * 2, s[1] + 1, *s[2:]), dtype, shape.values, gen)[::2, 1:]
    if shape.layout == "offset":
        return _values(torch, (math.prod(s) + 3,), dtype, shape.values, gen)[3:].view(s)
    return _values(torch, s, dtype, shape.values, gen)


def _reference(torch, spec: ReductionSpec, call, x, dims: tuple[int, ...], keepdim: bool, out_dtype):
    """torch's CPU result(s), in the keepdim shape; several dims of a one-dim op are reduced as
    one flattened dim (the reduction the stub sees)."""
    fn = getattr(torch, call.call)
    kwargs = dict(call.kwargs)
    if out_dtype != x.dtype and out_dtype.is_floating_point:
        kwargs["dtype"] = out_dtype
    every = tuple(range(x.dim()))
    if call.dims == "one":
        if dims == every:
            result = fn(x, **kwargs)
        elif len(dims) == 1:
            result = fn(x, dims[0], keepdim=keepdim, **kwargs)
        else:
            kept = [d for d in every if d not in dims]
            flat = x.permute(*kept, *dims).reshape(*[x.shape[d] for d in kept], -1)
            result = fn(flat, -1, **kwargs)
    else:
        result = fn(x, dim=list(dims), keepdim=keepdim, **kwargs)
    results = list(result) if isinstance(result, tuple) else [result]
    shape = [1 if d in dims else n for d, n in enumerate(x.shape)]
    return [r.reshape(shape) for r in results]


def run_reduction_trial(spec: ReductionSpec, *, kernel: str | None = None, header: Path | None = None,
                        shapes: tuple[Shape, ...] = SHAPES, pairs: set[tuple[str, str]] | None = None, seed: int = 0,
                        dispatch_op: str | None = None) -> ReductionTrial:
    """Run the spec's kernel (or ``kernel``, a variant of its text) on every case of each
    registered (input, output) pair and each ``try`` call, against torch's CPU op; and, for a
    spec a tree's reduction dispatcher can run (:func:`mpsgen.codegen.reduction_dispatch.misfit`), the op
    struct mpsgen writes for it (or ``dispatch_op``, a variant) inside mpsgen's model of the
    dispatcher's value kernels (2.14.1's: they accumulate in the output type, and the host
    reduces a half or bfloat output through the float kernels: those pairs are the float ones).

    The cases (the programs' inputs and torch's expected outputs) depend on the spec's pairs,
    calls and stub arguments, the shapes, the seed and torch's version, never on the kernel:
    they are made once with torch and kept in try's cache, so that a later run (a mutant's too)
    compares without importing torch."""
    cxx = compiler()
    version = _torch_version()
    if version is None or cxx is None:
        raise missing_requirements(version is not None, cxx)
    header = header or installed_header()
    helpers_text = header.read_text(encoding="utf-8")
    if kernel is None:
        kernel = kernel_source(spec, read_helpers(helpers_text), str(header))
    harness = ""
    if misfit(spec) is None:
        op = dispatch_op if dispatch_op is not None else op_struct(spec)
        harness = op + "\n" + render("reduction/dispatch_harness.metal.j2", spec=spec, op=op_struct_name(spec), in_output=True)
    binary, cached = build(spec, helpers_text, kernel, cxx, harness)
    result = ReductionTrial(spec, str(header), cached=cached)
    if harness:
        result.notes.append("the op struct written for a tree's reduction dispatcher (2.14's reduction_dispatch_mps) runs in mpsgen's "
                            "model of its value kernels (accumulating in the output type) on the pairs it registers; a half or "
                            "bfloat output goes through the float kernels there")
    if not spec.try_calls:
        raise Refused(f"{spec.source}: the spec gives no `try:` calls; try compares the kernel with those torch calls.")
    if any(to in ("half", "bfloat") for _ti, to in spec.dtypes):
        result.notes.append("half and bfloat outputs are compared with torch's CPU op computed in float32 and rounded "
                            "(the kernel accumulates in float, as reviewers ask, where torch's CPU op may accumulate in the "
                            "narrow type)")
    refused, plans = _cases(spec, shapes, pairs, seed, version)
    result.cases.extend(ReductionCase(pair, what, True, detail) for pair, what, detail in refused)
    jobs = []  # (pair index, route, its cases' plan)
    for plan in plans:
        jobs.append((plan, 0))
        if harness and plan[2] not in NARROW and not plan[1].startswith("complex"):
            jobs.append((plan, 1))
    # the pairs' programs run at once (each is one process on one core)
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        ran = list(pool.map(lambda j: _run(binary, j[0][0], j[0][4], j[0][1], j[0][2], j[1]) if j[0][4] else b"", jobs))
    for ((which, ti, to, out_type, payload, planned), route), outputs in zip(jobs, ran):
        values = _decode(outputs, out_type)
        at = 0

        def read(where):
            nonlocal at
            if where[0] == "fill":  # (filled by the shared path: no dispatch)
                return [where[2]] * math.prod(where[1])
            _kind, _shape, offsets, storage = where
            got = [values[at + o] for o in offsets]
            at += storage
            return got

        for what, expected, reads, reduced, sqrt in planned:
            if sqrt is None:
                got = [read(r) for r in reads]
            else:  # a complex input's parts: the variances added (then the root), the means made complex
                real, imag = [read(r) for r in reads[0]], [read(r) for r in reads[1]]
                var = [a + b for a, b in zip(real[0], imag[0])]
                got = [[math.sqrt(v) if v >= 0 or v != v else math.nan for v in var] if sqrt else var]
                if len(expected) > 1:
                    got.append([c for pair in zip(real[1], imag[1]) for c in pair])
            case = _compare(f"{ti}->{to}", what, expected, got, reduced)
            if route:
                case.route = "dispatcher"
            result.cases.append(case)
    return result


PLAN_VERSION = 1  # (a change to how cases are made or stored changes it)


def _torch_version() -> str | None:
    """The installed torch's version, without importing it (None: not installed)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def _cases(spec: ReductionSpec, shapes, pairs, seed: int, version: str):
    """(cases torch refuses, one plan a pair): each plan is (pair index, input type, output type,
    the output's torch dtype name, the program's input, the cases: (what, expected outputs,
    where each output is read from, reduced extent, None or take_sqrt for a complex input's
    parts)); made with torch once, then read from try's cache."""
    calls = tuple((c.call, sorted(c.kwargs.items()), sorted(c.params.items()), c.dims) for c in spec.try_calls)
    ident = repr((PLAN_VERSION, sys.version_info[:2], version, spec.dtypes, calls, [(p.name, p.type) for p in spec.params],
                  len(spec.outputs), spec.empty, spec.complex, shapes, sorted(pairs) if pairs is not None else None, seed))
    path = cache_dir("try") / f"reduction-cases-{spec.kernel}-{hashlib.sha256(ident.encode()).hexdigest()[:24]}"
    try:
        stored = marshal.loads(path.read_bytes())
        if stored[0] == ident:
            return stored[1], stored[2]
    except (OSError, EOFError, ValueError, TypeError, IndexError):
        pass
    refused, plans = _make_cases(spec, shapes, pairs, seed)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(marshal.dumps((ident, refused, plans)))
        tmp.replace(path)
    except OSError:  # (a cache that cannot be written costs the next run the torch import)
        tmp.unlink(missing_ok=True)
    return refused, plans


def _make_cases(spec: ReductionSpec, shapes, pairs, seed: int):
    torch = import_torch()
    if torch is None:
        raise missing_requirements(False, compiler())
    calls = spec.try_calls
    gen = torch.Generator().manual_seed(seed)
    nout = len(spec.outputs)
    refused, plans = [], []

    def expect(tensors) -> list:
        """torch's outputs as plain values: (dtype name, shape, values; a complex one's as (re, im) pairs)."""
        shown = []
        for t in tensors:
            if t.dtype.is_complex:
                shown.append(("complex64", tuple(t.shape) + (2,), torch.view_as_real(t.contiguous()).double().flatten().tolist()))
            elif t.dtype.is_floating_point:
                shown.append((str(t.dtype).replace("torch.", ""), tuple(t.shape), t.double().flatten().tolist()))
            else:
                shown.append(("int", tuple(t.shape), t.flatten().tolist()))
        return shown

    def plan(x, shape: Shape, n: int, call, dims, t_out, stream: list, params: dict):
        """One case into ``stream``; where each output is read from (the shared path's fill
        of an empty reduction: no dispatch)."""
        out_sizes = [1 if d in dims else s for d, s in enumerate(x.shape)]
        reduced = math.prod(x.shape[d] for d in dims)
        if reduced == 0 or math.prod(out_sizes) == 0:  # the shared CPU path fills it; no dispatch
            return [("fill", tuple(out_sizes), float(spec.empty)) for _ in range(nout)], reduced
        out = _output(torch, out_sizes, t_out, shape.out_layout)
        strides = lambda t: [0 if n_ == 1 else s for n_, s in zip(t.shape, t.stride())]  # noqa: E731
        ints = [x.dim(), *x.shape, *strides(x), *out_sizes, *strides(out)]
        if nout > 1:
            ints += [*strides(out), 2 if call.call.endswith("_mean") else 1]
        count = x.untyped_storage().nbytes() // x.element_size()
        whole = x.as_strided((count,), (1,), 0)  # the storage x views, from its start
        pvals = [float(params.get(p.name, 0)) for p in spec.params]
        tptg = threadgroup_size(reduced, shape.limit)
        stream.append(_program_order(ints, nout, pvals, reduced, out, tptg, seed * 1000 + n, count, x) + tensor_bytes(torch, whole))
        storage = out.untyped_storage().nbytes() // out.element_size()
        # the storage offset of each output element, in the order of its shape (the out= view)
        offsets = torch.arange(storage).as_strided(out.shape, out.stride()).flatten().tolist()
        return [("out", tuple(out.shape), offsets, storage) for _ in range(nout)], reduced

    for which, (ti, to) in enumerate(spec.dtypes):
        if pairs is not None and (ti, to) not in pairs:
            continue
        t_in, t_out = getattr(torch, REDUCTION_DTYPES[ti]), getattr(torch, REDUCTION_DTYPES[to])
        stream, planned = [], []
        for n, shape in enumerate(shapes):
            x = _laid_out(torch, shape, t_in, gen)
            dims = tuple(range(x.dim())) if shape.dims is None else shape.dims
            for call in calls:
                what = f"{call.call}{_shown(call.kwargs)} {shape.label()}"
                # half/bfloat: the reference is computed in float and rounded (the kernel accumulates
                # in float as reviewers ask; torch's CPU prod of half accumulates in half)
                low = t_out in (torch.float16, torch.bfloat16)
                try:
                    with warnings.catch_warnings():  # (correction past the count: torch warns, and gives what it gives)
                        warnings.simplefilter("ignore")
                        expected = _reference(torch, spec, call, x.float() if low else x, dims, shape.keepdim, torch.float32 if low else t_out)
                except (RuntimeError, TypeError) as exc:
                    refused.append((f"{ti}->{to}", what, f"torch refuses it: {str(exc).splitlines()[0]}"))
                    continue
                reads, reduced = plan(x, shape, n, call, dims, t_out, stream, call.params)
                expected = expect([e.to(t_out) for e in expected])
                planned.append((what, expected, reads, reduced, None))
        plans.append((which, ti, to, REDUCTION_DTYPES[to], _stream(stream), planned))
    if spec.complex == "parts" and ("float", "float") in spec.dtypes and (pairs is None or ("float", "float") in pairs):
        # the shared path reduces a complex input's real and imaginary parts through the stub
        # (the float kernel, take_sqrt off), adds the variances (then the root) and makes the
        # complex mean of the means: the kernel runs on the parts, strided views of the storage
        stream, planned = [], []
        for n, shape in enumerate(shapes):
            if shape.values != "random":
                continue
            x = _laid_out(torch, shape, torch.complex64, gen)
            dims = tuple(range(x.dim())) if shape.dims is None else shape.dims
            for call in calls:
                what = f"{call.call}{_shown(call.kwargs)} {shape.label()}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    expected = expect(_reference(torch, spec, call, x, dims, shape.keepdim, x.dtype))
                parts = {**call.params, "take_sqrt": False}
                real, reduced = plan(x.real, shape, n, call, dims, torch.float32, stream, parts)
                imag, _ = plan(x.imag, shape, n, call, dims, torch.float32, stream, parts)
                planned.append((what, expected, [real, imag], reduced, bool(call.params.get("take_sqrt"))))
        plans.append((spec.dtypes.index(("float", "float")), "complex64", "float", "float32", _stream(stream), planned))
    return refused, plans


def _stream(cases: list[bytes]) -> bytes:
    return struct.pack("<q", len(cases)) + b"".join(cases) if cases else b""


def _decode(data: bytes, dtype: str) -> list:
    """A program's output (native byte order) as Python numbers."""
    if dtype == "bool":
        return list(data)
    if dtype == "bfloat16":
        halves = array("H")
        halves.frombytes(data)
        data = array("I", (h << 16 for h in halves)).tobytes()
        dtype = "float32"
    if dtype == "float16":
        return list(struct.unpack(f"={len(data) // 2}e", data))
    values = array({"float32": "f", "int64": "q", "int32": "i", "int16": "h", "int8": "b", "uint8": "B"}[dtype])
    values.frombytes(data)
    return values.tolist()


def _program_order(ints, nout, pvals, reduced, out, tptg, seed, count, x) -> bytes:
    """One case as the program reads it."""
    data = struct.pack(f"<{len(ints)}q", *ints)
    data += struct.pack(f"<{len(pvals)}d", *pvals) if pvals else b""
    data += struct.pack("<7q", reduced, math.prod(out.shape), out.untyped_storage().nbytes() // out.element_size(), tptg, seed, count,
                        x.storage_offset())
    return data


def _output(torch, sizes: list[int], dtype, layout: str):
    """The (keepdim-shaped) out= tensor: contiguous, its dims in reverse order in memory, or
    every other element of a larger one (a view from its storage's start)."""
    if layout == "transposed":
        return torch.empty(sizes[::-1], dtype=dtype).permute(*range(len(sizes) - 1, -1, -1))
    if layout == "sliced":
        return torch.empty([sizes[0] * 2, *sizes[1:]], dtype=dtype)[::2]
    return torch.empty(sizes, dtype=dtype)


def _run(binary: Path, which: int, payload: bytes, ti: str, to: str, route: int = 0) -> bytes:
    try:
        proc = child.run([str(binary), str(which), str(route)], input=payload, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        raise Refused(f"the {ti}->{to} reduction kernel did not finish within {TIME_LIMIT:.0f} s (threads waiting for each other forever?); stopped.") from None
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip()
        raise Refused(f"the {ti}->{to} reduction kernel failed (exit status {proc.returncode}){': ' + said if said else ''}.")
    return proc.stdout


def _shown(kwargs: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + ")" if kwargs else ""


def _compare(pair: str, what: str, expected: list, got: list, reduced: int) -> ReductionCase:
    """The kernel's outputs against torch's (dtype name, shape, values), as torch.isclose would
    compare them in double (NaN equal to NaN; an infinity only to itself)."""
    for k, ((dtype, shape, want), have) in enumerate(zip(expected, got)):
        if dtype == "int":
            bad = [i for i, (g, e) in enumerate(zip(have, want)) if g != e]
        else:
            rtol, atol = TOLERANCES["float32" if dtype == "complex64" else dtype]
            # the kernel accumulates in float in another order than the CPU: an allowance that
            # grows with the reduced extent (float's epsilon per element), on top of the output's
            rtol, atol = 4 * rtol + 1.2e-7 * max(reduced, 1), 4 * atol
            bad = [i for i, (g, e) in enumerate(zip(have, want)) if not _close(g, e, rtol, atol)]
        if bad:
            at = _index(bad[0], shape)
            which = f"output {k}: " if len(expected) > 1 else ""
            return ReductionCase(pair, what, False, f"{which}{len(bad)} of {len(want)} differ; at {at}: kernel {have[bad[0]]!r}, CPU {want[bad[0]]!r}")
    return ReductionCase(pair, what, True)


def _close(g: float, e: float, rtol: float, atol: float) -> bool:
    if g != g or e != e:
        return g != g and e != e
    if math.isinf(g) or math.isinf(e):
        return g == e
    return abs(g - e) <= atol + rtol * abs(e)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    at = []
    for size in reversed(shape):
        at.append(flat % size)
        flat //= size
    return tuple(reversed(at))


def table(result: ReductionTrial) -> str:
    lines = [f"mpsgen try {result.spec.stub} ({result.spec.source}), helpers from {result.header}"
             f"{' (cached build)' if result.cached else ''}, against torch's CPU op"]
    by_pair: dict[tuple[str, str], list[ReductionCase]] = {}
    for c in result.cases:
        by_pair.setdefault((c.pair, c.route), []).append(c)
    for (pair, route), cases in by_pair.items():
        failing = [c for c in cases if not c.ok]
        ti, to = pair.split("->")
        if route:
            name = f"{op_struct_name(result.spec)} in the dispatcher's value kernels, {pair}"
        elif ti.startswith("complex"):
            name = f"{result.spec.host_name('float', 'float')} on a {ti} input's real and imaginary parts"
        else:
            name = result.spec.host_name(ti, to)
        lines.append(f"{name}: {len(cases) - len(failing)} cases match torch's CPU op; {len(failing)} failing")
        lines += failure_lines([f"{c.what}: {c.detail}" for c in failing])
    lines += closing_lines(result.notes, len(result.cases), len(result.failures))
    return "\n".join(lines) + "\n"

"""``mpsgen try``: run a spec's functor on the CPU, compiled against mpsgen's model of Metal
(``templates/try/metal_shim.h``), and compare it with PyTorch's CPU op.

For each registered (input, output) Metal type pair the functor is evaluated on edge values
(+-0, +-inf, NaN, denormals, integer limits, both bools) and seeded random values; binary ops
get every pairing of the edge values. half and bfloat are 16-bit types in the shim that round
each result to nearest even, as the GPU does. The program is compiled once per content (a
hash names it in the cache) and run in its own process with a time limit.

torch is imported here only (``mpsgen try`` needs it; nothing else in mpsgen does); numpy is
not needed (tensors go to and from the program as bytes through ``torch.frombuffer``).
"""

from __future__ import annotations

import functools
import platform
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from mpsgen.codegen.functor import render_functor, variant_specs
from mpsgen.codegen.params import bool_fields, render_struct, value_fields
from mpsgen.core import child
from mpsgen.core.errors import BadInput, MpsgenError, Refused
from mpsgen.spec.registrations import input_dtypes
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import OPERANDS, OpSpec
from mpsgen.core.text import shorten
from mpsgen.metal import TOLERANCES, TORCH_NAMES
from mpsgen.shim.diagnostics import compiler_errors, first_inside, last_said
from mpsgen.shim.toolchain import (
    COMPILERS,
    build_program,
    compiler,
    install_compiler_command,
    refuse_too_large,
)

TIME_LIMIT = 10.0  # seconds for one run of the compiled functor
# what a value of each Metal type is stored as in the files the program reads and writes
STORAGE = {
    "float": "float", "half": "uint16_t", "bfloat": "uint16_t", "long": "int64_t", "int": "int32_t",
    "short": "int16_t", "char": "int8_t", "uchar": "uint8_t", "bool": "uint8_t",
    "float2": "float2", "half2": "mpsgen_half2_bits",
}
CXX_TYPE = {"long": "int64_t", "int": "int32_t", "short": "int16_t", "char": "int8_t", "uchar": "uint8_t"}
# torch.testing's default (rtol, atol) per floating dtype
_NOT_MODELLED = re.compile(r"error: '(?:\w+::)*(\w+)' (?:is not a member of '([\w:]+)'|was not declared in this scope)")


class NotModelled(MpsgenError):
    """The functor uses something the shim does not model: exit 2, never a silent pass."""

    exit_code = 2


@dataclass
class DtypeResult:
    metal_in: str
    metal_out: str
    samples: int = 0
    max_abs: float = 0.0
    max_rel: float = 0.0
    mismatches: int = 0
    examples: list[str] = field(default_factory=list)
    skipped: str | None = None  # why the pair was not compared (torch has no CPU kernel for it)

    @property
    def ok(self) -> bool:
        return self.mismatches == 0


@dataclass
class TrialResult:
    spec: OpSpec
    compiler: str
    results: list[DtypeResult]
    cached: bool

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


# PyTorch's wheels of the CPU build: try compares with torch's CPU op, and on Linux a plain
# `pip install torch` takes the CUDA build, several GB
CPU_WHEELS = "https://download.pytorch.org/whl/cpu"


def install_torch_command(system: str | None = None) -> str:
    """pip for the Python mpsgen runs in (any recent release serves as the CPU reference): on a
    Mac the one build there is, elsewhere the CPU build."""
    pip = f"{shlex.quote(sys.executable)} -m pip install torch"
    return pip if (system or platform.system()) == "Darwin" else f"{pip} --index-url {CPU_WHEELS}"


def import_torch() -> ModuleType | None:
    """torch, or None when this Python cannot import it (its warning that numpy is missing is
    silenced: mpsgen does not use torch's numpy bridge)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
            import torch  # (local: torch is optional and slow to load; only try needs it)
    except (ImportError, OSError):
        return None
    return torch


def missing_requirements(has_torch: bool, cxx: str | None) -> BadInput:
    """One error naming each thing mpsgen try lacks and the command that installs it."""
    missing = []
    if not has_torch:
        missing.append(f"torch, which {sys.executable} cannot import (install it: {install_torch_command()})")
    if cxx is None:
        missing.append(f"a C++17 compiler on PATH ({', '.join(COMPILERS)}; install one: {install_compiler_command()})")
    return BadInput(
        "mpsgen try runs the functor compiled on this machine and compares it with PyTorch's CPU op; it needs "
        + " and ".join(missing) + "."
    )


def alpha_metal_type(spec: OpSpec, metal_in: str) -> str:
    """The Metal type the functor gets the Scalar in: ``alpha_type``, else float for
    unary_alpha and the input type for binary_alpha (as the generated host code passes it)."""
    if spec.alpha_type:
        return spec.alpha_type
    return "float" if spec.kind == "unary_alpha" else metal_in


def default_alphas(spec: OpSpec, floating: bool) -> list[float | int]:
    if spec.alphas:
        return [int(a) if not floating and float(a).is_integer() else a for a in spec.alphas]
    return [1.0, 2.0, -0.5] if floating else [1, 2, 3]


def scalar_keyword(op, spec: OpSpec) -> str:
    """The name the CPU op takes its Scalar by: its schema's first argument after the
    tensor inputs (``alpha`` for sub, ``eps`` for logit and logit_backward)."""
    try:
        arguments = op.default._schema.arguments
    except (AttributeError, RuntimeError):
        return "alpha"
    return arguments[spec.arity].name if len(arguments) > spec.arity else "alpha"


def driver_source(spec: OpSpec, pairs: list[tuple[str, str]]) -> tuple[str, int, int]:
    """The C++ program, and the first and last line of the functor in it."""
    functor = render_functor(spec)
    head = (
        '#include "metal_shim.h"\n#include <cstdio>\n#include <cstdlib>\n#include <vector>\nusing namespace metal;\nusing namespace c10::metal;\n'
        "struct mpsgen_half2_bits { uint16_t x, y; };\n"
        "inline half2 mpsgen_half2_load(mpsgen_half2_bits b) { return half2(half::from_bits(b.x), half::from_bits(b.y)); }\n"
        "inline mpsgen_half2_bits mpsgen_half2_store(half2 v) { return {v.x.bits, v.y.bits}; }\n\n"
    )
    if spec.has_params:  # the struct the kernel file's header gives it, before the functor
        head += render_struct(spec) + "\n\n"
    first = head.count("\n") + 1
    last = first + functor.count("\n")
    cases = []
    for i, (m_in, m_out) in enumerate(pairs):
        s_in, s_out = STORAGE[m_in], STORAGE[m_out]
        load = {"half": "half::from_bits", "bfloat": "bfloat::from_bits", "bool": "(bool)", "float2": "", "half2": "mpsgen_half2_load"}.get(
            m_in, f"({CXX_TYPE.get(m_in, m_in)})"
        )
        args = ", ".join(f"{load}(in{k}[j])" for k in range(spec.arity))
        if "opmath" in spec.dtypes and m_in in ("half", "bfloat"):
            # REGISTER_OPMATH_*: the kernel converts the inputs to opmath_t (float) before
            # calling the functor, and the result back to the output type
            args = ", ".join(f"static_cast<float>({load}(in{k}[j]))" for k in range(spec.arity))
        if spec.has_params:  # the struct, from the command line's values, as the host fills it
            args += f", {params_value(spec, m_in)}"
        if spec.has_alpha:  # the Scalar, from the command line, in the type the host passes it as
            alpha_t = alpha_metal_type(spec, m_in)
            if alpha_t in ("float2", "half2"):  # a complex Scalar (alpha, 0), not a splat
                part = "float" if alpha_t == "float2" else "half"
                args += f", {alpha_t}({part}(alpha), {part}(0.0f))"
            else:
                alpha_t = {"half": "half", "bfloat": "bfloat", "bool": "bool"}.get(alpha_t, CXX_TYPE.get(alpha_t, alpha_t))
                args += f", static_cast<{alpha_t}>(alpha)"
        if m_out == "float2":
            store = "float2(r)"
        elif m_out == "half2":
            store = "mpsgen_half2_store(half2(r))"
        elif m_out in ("half", "bfloat"):
            store = f"static_cast<{m_out}>(r).bits"
        elif m_out == "bool":
            store = "(uint8_t)static_cast<bool>(r)"
        else:
            store = f"static_cast<{CXX_TYPE.get(m_out, m_out)}>(r)"
        reads = "".join(f"    std::vector<{s_in}> in{k}(n); std::fread(in{k}.data(), sizeof({s_in}), n, stdin);\n" for k in range(spec.arity))
        cases.append(
            f"  if (which == {i}) {{  // {m_in} -> {m_out}\n{reads}"
            f"    std::vector<{s_out}> out(n);\n"
            f"    for (long j = 0; j < n; ++j) {{\n"
            f"      auto r = {spec.name}_functor()({args});\n      out[j] = {store};\n    }}\n"
            f"    std::fwrite(out.data(), sizeof({s_out}), n, stdout);\n    return 0;\n  }}\n"
        )
    values = (  # a params kind's struct fields, from the command line
        "  double pv[16] = {0};\n  for (int k = 3; k < argc && k < 19; ++k) pv[k - 3] = std::atof(argv[k]);\n"
        if spec.has_params else ""
    )
    main = "\nint main(int argc, char** argv) {\n  if (argc < 3) return 2;\n  int which = std::atoi(argv[1]);\n  long n = std::atol(argv[2]);\n  double alpha = argc > 3 ? std::atof(argv[3]) : 1.0;\n  (void)alpha;\n" + values + "".join(cases) + "  return 3;\n}\n"
    return head + functor + "\n" + main, first, last


def params_value(spec: OpSpec, m_in: str) -> str:
    """The params struct of input type ``m_in`` built from the driver's ``pv`` values (one
    per struct field, in field order: see :func:`params_arguments`)."""
    n_values = len(value_fields(spec))
    # in the input's C++ type (int8_t for Metal's char: the type the functor is called with)
    opmath = f"c10::metal::opmath_t<{CXX_TYPE.get(m_in, m_in)}>"
    inits = [f"static_cast<{opmath}>(pv[{k}])" for k in range(n_values)]
    inits += [f"pv[{n_values + k}] != 0" for k in range(len(bool_fields(spec)))]
    return f"{spec.params_struct}<{opmath}>{{{', '.join(inits)}}}"


def params_arguments(spec: OpSpec, values: dict[str, float | bool | None]) -> list[str]:
    """The driver's command-line values for one set of param values, in struct field order
    (an optional left out: value 0 and its has_ flag 0)."""
    numbers = [float(values.get(p.name) or 0.0) for p in spec.params if p.type != "bool"]
    flags = [float(bool(values.get(p.name))) if p.type == "bool" else float(values.get(p.name) is not None)
             for p in spec.params if p.type in ("bool", "optional_float")]
    return [repr(v) for v in numbers + flags]


def build(spec: OpSpec, pairs: list[tuple[str, str]], cxx: str) -> tuple[Path, bool]:
    """The compiled program (from the cache when the same source was built before)."""
    refuse_too_large(spec.functor.expr or spec.functor.body or "", spec.functor.origin, "functor")
    source, first, last = driver_source(spec, pairs)
    shim = (resource_dir("templates") / "try" / "metal_shim.h").read_text()
    binary, cached, failed = build_program(
        spec.name, {"driver.cpp": source, "metal_shim.h": shim}, cxx, ["-O1", "-fwrapv", "-w"], f"{spec.name}_functor",
        spec.source or spec.functor.origin,
    )
    if failed is not None:
        raise _compile_error(spec, failed.stderr, source, first, last)
    return binary, cached


def _functor_line_in_spec(spec: OpSpec) -> int:
    if not spec.source or not Path(spec.source).is_file():
        return 0
    for number, line in enumerate(Path(spec.source).read_text().splitlines(), 1):
        if re.match(r"(functor|expr)\s*:", line):
            return number
    return 0


def _compile_error(spec: OpSpec, stderr: str, source: str, first: int, last: int) -> MpsgenError:
    where = spec.source or spec.functor.origin
    line = _functor_line_in_spec(spec)
    place = f"{where}:{line}" if line else where
    missing = _NOT_MODELLED.search(stderr)
    if missing:
        name, scope = missing.group(1), missing.group(2) or "scope"
        return NotModelled(
            f"{place}: the functor uses {name!r} ({f'a name of {scope}::' if scope != 'scope' else 'a name'} that mpsgen's Metal shim does not model); "
            "mpsgen try cannot run it on the CPU, so it says so rather than pass.",
            hint="Check this op on a Mac (test_<op>_shader.py from --with-test), or add the function to templates/try/metal_shim.h.",
        )
    lines = source.split("\n")
    # (the functor's lines are driver.cpp's: an error of metal_shim.h is not one of them)
    errors = compiler_errors(stderr, fatal=False)
    error = first_inside([e for e in errors if e.file.endswith("driver.cpp")], first, last)
    if error is not None:
        n = error.line
        return BadInput(
            f"{place}: the functor does not compile: {error.message} (functor line {n - first + 1}: `{lines[n - 1].strip()}`).",
            hint="Fix the functor in the spec (it is C++ over metal:: math).",
        )
    detail = errors[0].message if errors else last_said(stderr)
    return BadInput(f"{place}: the functor does not compile with mpsgen's shim: {detail}.")


def _edges_and_random(torch, dtype, n: int):
    """The dtype's edge values and ``n`` seeded random ones, as two tensors of ``dtype``."""
    gen = torch.Generator().manual_seed(20261124)
    if dtype.is_complex:
        # every pairing of the real edge values as (real, imaginary) parts (the special values
        # of complex functions are a table over both parts), then random values
        real = torch.float32 if dtype == torch.complex64 else torch.float16
        edges, rand = _edges_and_random(torch, real, n)
        with warnings.catch_warnings():  # "ComplexHalf support is experimental"
            warnings.simplefilter("ignore", UserWarning)
            pairs = torch.complex(edges.repeat_interleave(len(edges)).float(), edges.repeat(len(edges)).float())
            return pairs.to(dtype), torch.complex(rand.float(), rand.roll(n // 3).float()).to(dtype)
    if dtype == torch.bool:
        return torch.tensor([False, True]), torch.tensor([], dtype=torch.bool)
    if dtype.is_floating_point:
        info = torch.finfo(dtype)
        edges = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), info.tiny / 4, -info.tiny / 4, info.tiny,
                 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, 10.0, -10.0, info.max, -info.max, info.eps]
        rand = (torch.rand(n, generator=gen, dtype=torch.float64) - 0.5) * 20
        return torch.tensor(edges, dtype=torch.float64).to(dtype), rand.to(dtype)
    info = torch.iinfo(dtype)
    edges = [0, 1, 2, 7, info.max, info.min, info.max - 1] + ([-1, -2, -7, info.min + 1] if info.min < 0 else [])
    rand = torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, (n,), generator=gen)
    return torch.tensor(edges, dtype=torch.int64).to(dtype), rand.to(dtype)


def _kept(torch, spec: OpSpec, operand: str, t):
    """Which values of ``t`` the spec's ``try_domain`` keeps for ``operand`` (NaN is in no range)."""
    if operand not in spec.try_domain:
        return torch.ones(len(t), dtype=torch.bool)
    low, high = spec.try_domain[operand]
    return (t.double() >= low) & (t.double() <= high)


def tensor_bytes(torch, t) -> bytes:
    """The values of ``t`` as the program reads them (native byte order), copied bit for bit
    into a buffer torch writes through (no numpy)."""
    if t.dtype == torch.complex32:
        t = torch.view_as_real(t.to(torch.complex64)).half().view(torch.int16)
    elif t.dtype == torch.complex64:
        t = torch.view_as_real(t)
    elif t.dtype in (torch.float16, torch.bfloat16):
        t = t.view(torch.int16)
    elif t.dtype == torch.bool:
        t = t.to(torch.uint8)
    if not t.numel():
        return b""
    data = bytearray(t.numel() * t.element_size())
    torch.frombuffer(data, dtype=t.dtype).copy_(t.flatten())
    return bytes(data)


def tensor_from_bytes(torch, data: bytes, dtype):
    """The inverse of :func:`tensor_bytes`: a flat tensor of ``dtype`` read from a program's output."""
    if dtype == torch.complex64:
        return torch.view_as_complex(torch.frombuffer(bytearray(data), dtype=torch.float32).view(-1, 2))
    if dtype == torch.complex32:
        halves = torch.frombuffer(bytearray(data), dtype=torch.int16).view(torch.float16).view(-1, 2)
        return torch.view_as_complex(halves.float()).to(torch.complex32)
    if dtype in (torch.float16, torch.bfloat16):
        return torch.frombuffer(bytearray(data), dtype=torch.int16).view(dtype)
    if dtype == torch.bool:
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.bool)
    return torch.frombuffer(bytearray(data), dtype=dtype)


def run_trial(
    spec: OpSpec, *, dtypes: set[str] | None = None, samples: int = 64, cpu_op: str = "", cpu_kwargs: dict | None = None
) -> TrialResult:
    """Run ``spec``'s functor on edge and random values of each registered dtype and compare
    with torch's CPU op (``cpu_op``, default the spec's op, given ``cpu_kwargs`` too). A
    selector spec runs each case's kernel against the op given that case's string."""
    if spec.selector is not None:
        results, cached, cxx = [], True, ""
        for case, variant in zip(spec.selector.cases, variant_specs(spec)):
            got = run_trial(variant, dtypes=dtypes, samples=samples, cpu_op=spec.name,
                            cpu_kwargs={spec.selector.argument: case.value})
            for r in got.results:
                r.metal_in = f"{r.metal_in} ({case.value})"
            results += got.results
            cached, cxx = cached and got.cached, got.compiler
        return TrialResult(spec, cxx, results, cached)
    if spec.kind not in OPERANDS:
        raise Refused(f"mpsgen try covers the kinds {', '.join(OPERANDS)}; {spec.name} is {spec.kind}.")
    if spec.has_params and not spec.params:
        raise Refused(
            f"the spec of {spec.name} gives no `params:`; new-op reads them from a tree's stub, but try runs without one.",
            hint="Add `params:` (name: type, in the stub's order) to the spec.",
        )
    if spec.functor.is_scaffold:
        raise Refused(f"{spec.name} has no functor to try (a scaffold): give --expr, --functor-file or a spec with one.")
    pairs = [(i, o) for i, o in input_dtypes(spec) if i in TORCH_NAMES and o in TORCH_NAMES]
    if dtypes:
        unknown = sorted(dtypes - {TORCH_NAMES[i] for i, _ in pairs} - {i for i, _ in pairs})
        if unknown:
            raise BadInput(f"--dtypes {', '.join(unknown)}: not registered for {spec.name} (registered: {', '.join(TORCH_NAMES[i] for i, _ in pairs)}).")
        pairs = [(i, o) for i, o in pairs if i in dtypes or TORCH_NAMES[i] in dtypes]
    torch, cxx = import_torch(), compiler()
    if torch is None or cxx is None:
        raise missing_requirements(torch is not None, cxx)
    binary, cached = build(spec, pairs, cxx)
    op = getattr(torch.ops.aten, cpu_op or spec.name)
    if cpu_kwargs:
        op = functools.partial(op, **cpu_kwargs)
    keyword = scalar_keyword(op, spec)
    results = []
    warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")
    for index, (m_in, m_out) in enumerate(pairs):
        t_in, t_out = getattr(torch, TORCH_NAMES[m_in]), getattr(torch, TORCH_NAMES[m_out])
        edges, rand = _edges_and_random(torch, t_in, samples)
        base = torch.cat([edges, rand])
        names = OPERANDS[spec.kind]
        if spec.operands and len(set(spec.operands)) == 1:  # one tensor, every operand (threshold)
            inputs = [base[_kept(torch, spec, names[0], base)]] * spec.arity
        elif spec.arity == 2:
            a, b = (base[_kept(torch, spec, name, base)] for name in names)
            inputs = [a.repeat_interleave(len(b)), b.repeat(len(a))]
        elif spec.arity == 3:  # every triple of the edge values, then random triples
            e = len(edges)
            inputs = [
                torch.cat([edges.repeat_interleave(e * e), rand]),
                torch.cat([edges.repeat_interleave(e).repeat(e), rand.roll(len(rand) // 3)]),
                torch.cat([edges.repeat(e * e), rand.roll(2 * len(rand) // 3)]),
            ]
            kept = _kept(torch, spec, names[0], inputs[0]) & _kept(torch, spec, names[1], inputs[1]) & _kept(torch, spec, names[2], inputs[2])
            inputs = [x[kept] for x in inputs]
        else:
            inputs = [base[_kept(torch, spec, names[0], base)]]
        res = DtypeResult(m_in, m_out)
        if not len(inputs[0]):  # shown as skipped, never as a pass
            res.skipped = f"no {TORCH_NAMES[m_in]} sample lies in the spec's try_domain"
            results.append(res)
            continue
        alphas: list[float | int | None] = [None]
        if spec.has_alpha:
            alphas = default_alphas(spec, t_in.is_floating_point or t_in.is_complex or alpha_metal_type(spec, m_in) in ("float", "half", "bfloat"))
        if spec.has_params:
            _try_params(torch, spec, op, binary, index, inputs, t_out, res)
            results.append(res)
            continue
        for alpha in alphas:
            try:
                expected = op(*inputs) if alpha is None else op(*inputs, **{keyword: alpha})
            except (RuntimeError, NotImplementedError) as exc:
                res.skipped = f"torch's CPU op does not take {TORCH_NAMES[m_in]}: {shorten(str(exc).splitlines()[0], 80)}"
                break
            arguments = [repr(float(alpha))] if alpha is not None else []
            actual = _run_driver(torch, spec, binary, index, inputs, arguments, m_in, t_out)
            _compare(torch, res, inputs, actual, expected.to(t_out), alpha, keyword)
        results.append(res)
    return TrialResult(spec, cxx, results, cached)


def default_try_params(spec: OpSpec) -> list[dict[str, float | bool | None]]:
    """The spec's ``try_params``, else each param at 1 (an optional left out, a bool false)."""
    if spec.try_params:
        return [dict(v) for v in spec.try_params]
    return [{p.name: None if p.type == "optional_float" else False if p.type == "bool" else 1.0 for p in spec.params}]


def _run_driver(torch, spec: OpSpec, binary: Path, index: int, inputs, arguments: list[str], what: str, t_out):
    """The driver's results for case ``index`` (one type pair) on ``inputs``, with the
    command-line ``arguments`` (the alpha, or the params' values); ``what`` names the inputs."""
    what = what if " " in what else f"{what} inputs"
    cmd = [str(binary), str(index), str(len(inputs[0]))] + arguments
    try:
        proc = child.run(cmd, input=b"".join(tensor_bytes(torch, x) for x in inputs), timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        raise Refused(f"{spec.name}_functor did not finish within {TIME_LIMIT:.0f} s on {what} (a loop that never ends?); stopped.") from None
    if proc.returncode != 0:
        raise Refused(f"{spec.name}_functor crashed on {what} (exit status {proc.returncode}); stopped.")
    return tensor_from_bytes(torch, proc.stdout, t_out)


def _schema_tensors(spec: OpSpec, op, inputs: list) -> list:
    """The functor's ``inputs`` as the CPU op takes them: in its schema's order, each once
    (threshold's functor gets (self, self), threshold_backward's (self, grad_output))."""
    if not spec.operands:
        return inputs
    by_name = dict(zip(spec.operands, inputs))
    try:
        names = [a.name for a in op.default._schema.arguments if str(a.type) == "Tensor"]
    except (AttributeError, RuntimeError):
        names = list(dict.fromkeys(spec.operands))
    missing = [n for n in names if n not in by_name]
    if missing:
        raise Refused(f"the spec of {spec.name} names operands {', '.join(spec.operands)}, but the op also takes {', '.join(missing)}.")
    return [by_name[n] for n in names]


def _try_params(torch, spec: OpSpec, op, binary: Path, index: int, inputs, t_out, res: DtypeResult) -> None:
    """Run a params kind over each set of param values: torch's CPU op takes them by name
    (the schema's), the functor as the struct the host would fill."""
    tensors = _schema_tensors(spec, op, inputs)
    refused = []  # (a set torch's CPU op refuses, on this dtype, is one the host refuses too)
    for values in default_try_params(spec):
        given = {p.name: values.get(p.name) for p in spec.params if p.name not in spec.fixed}
        shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
        try:
            expected = op(*tensors, **given)
        except (RuntimeError, NotImplementedError, TypeError) as exc:
            refused.append(f"torch's CPU op refuses {shown} on {TORCH_NAMES[res.metal_in]}: {shorten(str(exc).splitlines()[0], 80)}")
            continue
        arguments = params_arguments(spec, {**given, **spec.fixed})
        actual = _run_driver(torch, spec, binary, index, inputs, arguments, f"{res.metal_in} inputs with {shown}", t_out)
        _compare(torch, res, tensors, actual, expected.to(t_out), note=shown)
    if refused and not res.samples:
        res.skipped = refused[0]


def _compare(torch, res: DtypeResult, inputs, actual, expected, alpha=None, keyword: str = "alpha", note: str = "") -> None:
    """Fold one run's comparison into ``res`` (samples, worst errors, mismatches, examples).
    Complex results are compared part by part, each under the tolerance of its real type; their
    relative error is that of the complex number, |actual - expected| / |expected| (a part's
    own would blow up wherever the other part carries the value)."""
    if actual.dtype.is_complex:
        real = torch.float32 if actual.dtype == torch.complex64 else torch.float16
        a = torch.view_as_real(actual.to(torch.complex64)).to(real)
        e = torch.view_as_real(expected.to(torch.complex64)).to(real)
        part = DtypeResult(res.metal_in, res.metal_out)
        _compare(torch, part, [x.repeat_interleave(2) for x in inputs], a.flatten(), e.flatten(), alpha, keyword, note)
        res.samples += len(actual)
        x, y = actual.to(torch.complex128), expected.to(torch.complex128)
        size = y.abs()
        normal = torch.isfinite(x) & torch.isfinite(y) & (size >= torch.finfo(real).tiny)
        rel = float(((x - y).abs()[normal] / size[normal]).max()) if normal.any() else 0.0
        res.max_abs, res.max_rel = max(res.max_abs, part.max_abs), max(res.max_rel, rel)
        res.mismatches += part.mismatches
        res.examples += part.examples[: max(0, 3 - len(res.examples))]
        return
    res.samples += len(actual)
    prev_abs, prev_rel = res.max_abs, res.max_rel
    if actual.dtype.is_floating_point:
        rtol, atol = TOLERANCES[str(actual.dtype).replace("torch.", "")]
        x, y = actual.double(), expected.double()
        both_nan = torch.isnan(x) & torch.isnan(y)
        same_inf = torch.isinf(x) & torch.isinf(y) & (x == y)
        diff = (x - y).abs()
        finite = ~(torch.isnan(x) | torch.isnan(y) | torch.isinf(x) | torch.isinf(y))
        close = both_nan | same_inf | (finite & (diff <= atol + rtol * y.abs()))
        if finite.any():
            res.max_abs = float(diff[finite].max())
        # relative error where the expected value is a normal number of the dtype (next to a
        # zero or a denormal the absolute tolerance is what decides)
        normal = finite & (y.abs() >= torch.finfo(actual.dtype).tiny)
        if normal.any():
            res.max_rel = float((diff[normal] / y[normal].abs()).max())
    else:
        close = actual == expected
        if len(actual):
            res.max_abs = float((actual.long() - expected.long()).abs().max()) if actual.dtype != torch.bool else float((actual != expected).any())
    res.max_abs, res.max_rel = max(res.max_abs, prev_abs), max(res.max_rel, prev_rel)
    bad = (~close).nonzero().flatten()
    res.mismatches += int(bad.numel())
    for k in bad[: max(0, 3 - len(res.examples))].tolist():
        args = ", ".join(repr(x[k].item()) for x in inputs) + (f", {keyword}={alpha!r}" if alpha is not None else "")
        args += f", {note}" if note else ""
        res.examples.append(f"({args}) -> {actual[k].item()!r}, torch says {expected[k].item()!r}")


def failure_lines(failing: list[str]) -> list[str]:
    """The first five failing cases of a group (each ``what: why``) and how many more."""
    lines = [f"  FAIL {f}" for f in failing[:5]]
    if len(failing) > 5:
        lines.append(f"  ... and {len(failing) - 5} more")
    return lines


def closing_lines(notes: list[str], cases: int, failing: int) -> list[str]:
    """A case-by-case trial's notes and its last line (kernels, reductions)."""
    return [f"note: {n}" for n in notes] + [f"{'FAILED' if failing else 'ok'}: {cases} cases, {failing} failing."]


def table(result: TrialResult) -> str:
    spec = result.spec
    lines = [
        f"mpsgen try {spec.name} ({spec.source or spec.functor.origin}), {Path(result.compiler).name}"
        f"{' (cached build)' if result.cached else ''}, against torch's CPU op",
    ]
    if spec.try_domain:
        ranges = ", ".join(f"{name} in [{low:.15g}, {high:.15g}]" for name, (low, high) in spec.try_domain.items())
        lines.append(f"  samples restricted by the spec's try_domain to {ranges} (NaN left out): {spec.try_domain_why}")
    lines += [
        f"  {'input':<8} {'output':<8} {'n':>7} {'max abs err':>12} {'max rel err':>12} {'mismatches':>11}",
    ]
    for r in result.results:
        if r.skipped:
            lines.append(f"  {r.metal_in:<8} {r.metal_out:<8} {'-':>7} {'':>12} {'':>12} {'skipped':>11}  ({r.skipped})")
            continue
        lines.append(f"  {r.metal_in:<8} {r.metal_out:<8} {r.samples:>7} {r.max_abs:>12.3g} {r.max_rel:>12.3g} {r.mismatches:>11}")
        lines += [f"      e.g. {e}" for e in r.examples]
    bad = sum(r.mismatches for r in result.results)
    lines.append("  all match." if result.ok else f"  {bad} mismatch(es): the functor disagrees with the CPU op.")
    return "\n".join(lines) + "\n"

"""A custom kernel's body on the CPU, compiled against mpsgen's model of Metal
(``templates/try/metal_shim.h``): the compile gate of ``new-kernel`` and ``mpsgen try`` for
kernel specs.

The program holds the params struct and the per-element function as ``new-kernel`` writes them
into ``kernels/X.h`` and ``kernels/X.metal`` (Metal's address-space words ``device``,
``constant`` and ``thread`` mean nothing on the CPU) and calls the function once per output
element, as ``[[thread_position_in_grid]]`` does, with the params the host function fills:
each tensor's sizes and strides, its storage from its offset on (what ``mtl_setArgs`` binds).
A body that uses threadgroup memory, barriers or SIMD-group functions depends on threads
running together, which one call per element does not model: the spec's reader refuses it
(:func:`mpsgen.spec.kernel.body_problem`), so neither the gate nor ``try`` sees one.
"""

from __future__ import annotations

import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.core.errors import BadInput, Refused
from mpsgen.codegen.kernel import body_text, kernel_signature, kernel_text, schema_arguments, schema_parameters, struct_text
from mpsgen.metal import TOLERANCES, TORCH_NAMES
from mpsgen.spec.kernel import KernelSpec
from mpsgen.core import child
from mpsgen.shim.diagnostics import compiler_errors, first_inside, last_said
from mpsgen.shim.toolchain import build_program, compiler, refuse_too_large, syntax_only_compile
from mpsgen.shim.trial import TIME_LIMIT, closing_lines, failure_lines, import_torch, missing_requirements
from mpsgen.core.resources import resource_dir
from mpsgen.tree.native_yaml import NativeFunction

_STORAGE = {"float": "float", "half": "uint16_t", "bfloat": "uint16_t"}


def _element_function(spec: KernelSpec, sig) -> str:
    text = kernel_text(spec, sig)
    return text[: text.index("\ntemplate <typename T>\nkernel void")]


def driver_source(spec: KernelSpec, sig, usings: tuple[str, ...] = ("metal", "c10::metal")) -> tuple[str, int, int]:
    """The C++ program, and the lines of the spec's body in it; ``usings``: the namespaces the
    target .metal file opens (the body must compile under them)."""
    head = (
        '#include "metal_shim.h"\n#include <cstdio>\n#include <cstdlib>\n#include <vector>\n'
        "#define device\n#define constant\n#define thread\n" + "".join(f"using namespace {n};\n" for n in usings) + "\n"
        + struct_text(spec, sig) + "\n\n"
    )
    function = _element_function(spec, sig)
    before_body = function[: function.index(body_text(spec))] if body_text(spec) else function
    first = head.count("\n") + before_body.count("\n") + 1
    last = first + body_text(spec).count("\n")
    args = "".join(f"in{k}.data() + off[{k}], " for k in range(len(sig.inputs)))
    fill = ""
    for t in sig.struct_tensors:
        fill += (
            f"  p.{t}_ndim = (int32_t)num(); for (int d = 0; d < p.{t}_ndim; ++d) p.{t}_sizes[d] = (int32_t)num();\n"
            f"  for (int d = 0; d < p.{t}_ndim; ++d) p.{t}_strides[d] = (int32_t)num();\n"
        )
    for s in sig.scalars:
        fill += f"  p.{s.name} = ({s.metal_type})num();\n"
    n = len(sig.inputs)
    main = f"""
static char** args;
static int at = 2;
static double num() {{ return std::atof(args[at++]); }}
static half load_bits(uint16_t b, half*) {{ return half::from_bits(b); }}
static bfloat load_bits(uint16_t b, bfloat*) {{ return bfloat::from_bits(b); }}
static float load_bits(float v, float*) {{ return v; }}
static uint16_t store(half v) {{ return v.bits; }}
static uint16_t store(bfloat v) {{ return v.bits; }}
static float store(float v) {{ return v; }}

template <typename T, typename S>
static int run() {{
  {spec.params_struct}<> p{{}};
{fill}  long n = (long)num();
  long off[{max(n, 1)}] = {{0}};
  long count[{max(n, 1)}] = {{0}};
  for (int k = 0; k < {n}; ++k) {{ count[k] = (long)num(); off[k] = (long)num(); }}
{"".join(_read_input(k, sig.metal_type(t)) for k, t in enumerate(sig.inputs))}  std::vector<S> out(n);
  for (long j = 0; j < n; ++j) out[j] = store(static_cast<T>({spec.element_function}<T>({args}p, (uint)j)));
  std::fwrite(out.data(), sizeof(S), n, stdout);
  return 0;
}}

int main(int argc, char** argv) {{
  if (argc < 2) return 2;
  args = argv;
  int which = std::atoi(argv[1]);
{"".join(f"  if (which == {i}) return run<{d}, {_STORAGE[d]}>();  // {d}{chr(10)}" for i, d in enumerate(spec.dtypes))}  return 3;
}}
"""
    return head + function + "\n" + main, first, last


# a fixed-type input's (C++ type the element function takes, storage type torch writes)
_FIXED_CXX = {
    "long": ("long", "int64_t"), "int": ("int", "int32_t"), "short": ("short", "int16_t"), "char": ("char", "int8_t"),
    "uchar": ("uchar", "uint8_t"), "bool": ("bool", "uint8_t"), "float": ("float", "float"),
}


def _read_input(k: int, metal_type: str) -> str:
    """The driver's lines reading input ``k`` (its whole storage) from stdin."""
    if metal_type == "T":
        return (
            f"  std::vector<T> in{k}; {{ std::vector<S> raw(count[{k}]); if (std::fread(raw.data(), sizeof(S), count[{k}], stdin) "
            f"!= (size_t)count[{k}]) return 4; for (auto v : raw) in{k}.push_back(load_bits(v, (T*)nullptr)); }}\n"
        )
    cxx, storage = _FIXED_CXX[metal_type]
    return (
        f"  std::vector<{cxx}> in{k}; {{ std::vector<{storage}> raw(count[{k}]); if (std::fread(raw.data(), sizeof({storage}), "
        f"count[{k}], stdin) != (size_t)count[{k}]) return 4; for (auto v : raw) in{k}.push_back(({cxx})v); }}\n"
    )


def _shim() -> str:
    return (resource_dir("templates") / "try" / "metal_shim.h").read_text(encoding="utf-8")


def check_kernel_body(spec: KernelSpec, sig, usings: tuple[str, ...] = ("metal", "c10::metal")) -> list[str]:
    """The compile gate: the body compiled (syntax only) for every registered dtype, under the
    target file's `using namespace` lines; each problem located at the spec's line."""

    refuse_too_large(spec.body.body or spec.body.expr or "", spec.body.origin, "kernel body")
    cxx = compiler()
    if cxx is None:
        return []
    source, first, last = driver_source(spec, sig, usings)
    code, stderr, _cached = syntax_only_compile(source, _shim(), cxx)
    if code == 0:
        return []
    return [_located(spec, stderr, source, first, last)]


def _located(spec: KernelSpec, stderr: str, source: str, first: int, last: int) -> str:
    errors = compiler_errors(stderr, "driver.cpp")
    error = first_inside(errors, first, last) or (errors or [None])[0]
    message = error.message.strip() if error else last_said(stderr)
    where = spec.body.origin
    if error is not None and error.inside(first, last) and spec.body.line:
        where = f"{spec.body.origin}:{spec.body.line + error.line - first}"
    return f"{where}: the kernel body does not compile against mpsgen's Metal model: {message}."


# ---------------------------------------------------------------------------------------------
# mpsgen try


@dataclass
class KernelCase:
    dtype: str
    what: str  # "self (5, 3) transposed, p=2.0"
    outcome: str  # "ok", "mismatch", "refused by both", "host accepts what the CPU refuses: ...", ...
    detail: str = ""


@dataclass
class KernelTrial:
    spec: KernelSpec
    cases: list[KernelCase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[KernelCase]:
        return [c for c in self.cases if not c.outcome.startswith(("ok", "refused by both"))]


def _build(spec: KernelSpec, sig, cxx: str) -> Path:
    refuse_too_large(spec.body.body or spec.body.expr or "", spec.body.origin, "kernel body")
    source, first, last = driver_source(spec, sig)
    shim = _shim()
    binary, _cached, failed = build_program(
        f"kernel-{spec.kernel}", {"driver.cpp": source, "metal_shim.h": shim}, cxx, ["-O1", "-w"],
        f"the kernel body of {spec.kernel}", spec.body.origin,
    )
    if failed is not None:
        raise BadInput(_located(spec, failed.stderr, source, first, last))
    return binary


def _layouts(torch, shape: tuple[int, ...], dtype, values: str, gen):
    """The input in its layouts: contiguous; transposed (a view of the transposed storage) when
    it has two or more dims; every other element of dim 0 of a larger tensor; an offset view."""
    def make(s):
        if values == "random":
            return torch.randn(s, generator=gen, dtype=torch.float32).to(dtype)
        pool = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, float("nan"), float("inf")], dtype=torch.float32)
        idx = torch.randint(0, len(pool), s, generator=gen)
        return pool[idx].to(dtype)

    out = [("contiguous", make(shape))]
    if len(shape) >= 2:
        out.append(("transposed", make((*shape[:-2], shape[-1], shape[-2])).transpose(-1, -2)))
    if shape and shape[0] > 0:
        out.append(("strided", make((shape[0] * 2, *shape[1:]))[::2]))
    out.append(("offset", make((math.prod(shape) + 3,))[3:].view(shape)))
    return out


def _storage(torch, t) -> tuple[bytes, int, int]:
    """(storage bytes, element count, element offset) of ``t``."""
    storage = t.untyped_storage()
    size = t.element_size()
    raw = bytes(storage)
    return raw, len(raw) // size, t.storage_offset()


def _host_accepts(torch, spec: KernelSpec, env: dict) -> bool | None:
    """Whether the host function's checks pass, evaluated in Python (None: not evaluable): the
    spec's, and the dimensions the params struct has room for."""
    if any(hasattr(v, "dim") and v.dim() > spec.max_dims for v in env.values()):
        return False
    for check in spec.checks:
        expr = check.require.replace("&&", " and ").replace("||", " or ")
        expr = re.sub(r"!(?!=)", " not ", expr)
        try:
            if not eval(expr, {"__builtins__": {}}, env):  # noqa: S307 (a spec's own condition)
                return False
        except Exception:  # noqa: BLE001
            return None
    return True


def torch_signature(torch, spec: KernelSpec):
    """The kernel's signature from the schema of torch's own op (``try`` needs no checkout)."""
    packet = getattr(torch.ops.aten, spec.name, None)
    if packet is None:
        raise Refused(f"torch {torch.__version__} has no aten op {spec.name}; `mpsgen try` compares with torch's CPU op.")
    schema = str(packet.default._schema).removeprefix("aten::")
    row = NativeFunction(spec.name, "", schema, 0, 0, (), False, None, ())
    return kernel_signature(spec, row, f"torch {torch.__version__}'s schema of {spec.name}", allocation=False)


def run_kernel_trial(spec: KernelSpec, sig=None, seed: int = 0) -> KernelTrial:
    """Run the kernel body once per output element for each registered dtype, shape, layout
    and parameter set, and compare with torch's CPU op (``sig``: from the tree; default from
    torch's schema)."""
    torch = import_torch()
    cxx = compiler()
    if torch is None or cxx is None:
        raise missing_requirements(torch is not None, cxx)
    if sig is None:
        sig = torch_signature(torch, spec)
    for t in sig.inputs:
        if sig.metal_type(t) != "T" and t not in spec.try_inputs:
            raise BadInput(
                f"{spec.source}: input {t} has the fixed type {sig.metal_type(t)} (input_types); `mpsgen try` cannot draw "
                "meaningful values for it: compute it under try_inputs (indices from the forward op, say)."
            )
    op = getattr(torch.ops.aten, spec.name)
    binary = _build(spec, sig, cxx)
    result = KernelTrial(spec)
    gen = torch.Generator().manual_seed(seed)
    shapes = list(spec.try_shapes) or [{t: (4, 3) for t in sig.all_tensors}]
    params = list(spec.try_params) or [{}]
    for which, dtype_name in enumerate(spec.dtypes):
        dtype = getattr(torch, TORCH_NAMES[dtype_name])
        for shape in shapes:
            for values in ("random", "edges"):
                for pvals in params:
                    made = [t for t in sig.all_tensors if t not in spec.try_inputs]
                    layouts = {t: _layouts(torch, shape.get(t, (4, 3)), dtype, values, gen) for t in made}
                    # every input contiguous, then each input in each other layout on its own
                    plain = {t: layouts[t][0][1] for t in made}
                    variants = [("contiguous", plain)] + [
                        (f"{t} {name}", {**plain, t: tensor}) for t in made for name, tensor in layouts[t][1:]
                    ]
                    for layout, chosen in variants:
                        inputs = dict(chosen)
                        try:
                            for t, derived in spec.try_inputs.items():
                                value = _derived(torch, derived, inputs, sig, pvals)
                                inputs[t] = value.to(dtype) if sig.metal_type(t) == "T" else value
                        except (RuntimeError, IndexError, ValueError, TypeError) as exc:  # torch refuses these inputs
                            what = ", ".join(f"{t} {tuple(v.shape)}" for t, v in inputs.items()) + f" {layout} {values}"
                            result.cases.append(_refused_case(torch, spec, sig, dtype_name, inputs, pvals, what, exc))
                            continue
                        what = ", ".join(f"{t} {tuple(inputs[t].shape)}" for t in sig.all_tensors) + f" {layout} {values}"
                        if pvals:
                            what += ", " + ", ".join(f"{k}={v}" for k, v in pvals.items())
                        result.cases.append(_one_case(torch, op, spec, sig, binary, which, dtype_name, inputs, pvals, what, result))
    return result


def _refused_case(torch, spec, sig, dtype_name, inputs, pvals, what, exc) -> KernelCase:
    """A case torch refused while computing an input (try_inputs): the host's checks must
    refuse it too."""
    env = {**{sig.schema_name(t): v for t, v in inputs.items()}, **{s.name: _value(sig, pvals, s.name) for s in sig.scalars}}
    accepts = _host_accepts(torch, spec, env)
    if accepts is False:
        return KernelCase(dtype_name, what, "refused by both")
    said = str(exc).split("\n")[0]
    why = "its checks could not be evaluated here" if accepts is None else "the host function's checks let it through"
    return KernelCase(dtype_name, what, f"torch refuses it while computing try_inputs ({said}) but {why}")


def _derived(torch, derived: tuple, inputs: dict, sig, pvals: dict):
    """An input computed by torch's CPU op from the others (floating ones in float32,
    contiguous), the spec's literals and scalar arguments; ``output`` picks from a tuple."""
    op, names, which = derived
    fn = getattr(torch.ops.aten, op, None)
    if fn is None:
        raise BadInput(f"try_inputs: torch has no aten op {op}.")
    args = []
    for a in names:
        if isinstance(a, str) and a in inputs:
            t = inputs[a]
            args.append((t.float() if t.is_floating_point() else t).contiguous())
        elif isinstance(a, str):
            if a not in {s.name for s in sig.scalars}:
                raise BadInput(
                    f"try_inputs: {op}'s argument {a!r} is neither a Tensor ({', '.join(inputs)}) nor a scalar argument of "
                    f"{sig.row.name}; name one of them, or give a literal."
                )
            args.append(_value(sig, pvals, a))
        else:
            args.append(list(a) if isinstance(a, tuple) else a)
    result = fn(*args)
    if which is not None:
        if not isinstance(result, (tuple, list)) or which >= len(result):
            raise BadInput(f"try_inputs: {op} does not return {which + 1} results; fix the entry's output.")
        result = result[which]
    return result


def _one_case(torch, op, spec, sig, binary, which, dtype_name, inputs, pvals, what, result) -> KernelCase:
    args = []
    for typ, name in _schema(sig):
        args.append(inputs[sig.spec_name(name)] if typ == "Tensor" else _value(sig, pvals, name))
    env = {**{sig.schema_name(t): v for t, v in inputs.items()}, **{s.name: _value(sig, pvals, s.name) for s in sig.scalars}}
    accepts = _host_accepts(torch, spec, env)
    try:
        expected = op(*args)
    except NotImplementedError:
        expected = None
    except RuntimeError as exc:
        if "not implemented for" in str(exc):
            expected = None
        else:
            if accepts is False:
                return KernelCase(dtype_name, what, "refused by both")
            said = str(exc).split("\n")[0]
            why = "its checks could not be evaluated here" if accepts is None else "the host function's checks let it through"
            return KernelCase(dtype_name, what, f"the CPU op refuses it ({said}) but {why}")
    if expected is None:  # torch's CPU op has no kernel for the dtype: computed in float32, rounded
        upcast = [a.float() if hasattr(a, "dtype") and a.is_floating_point() else a for a in args]
        try:
            expected = op(*upcast).to(getattr(torch, TORCH_NAMES[dtype_name]))
        except RuntimeError as exc:
            return KernelCase(dtype_name, what, "ok (no reference)", str(exc).split("\n")[0])
        note = f"{dtype_name}: torch's CPU op has no {dtype_name} kernel; the reference is its float32 result, rounded"
        if note not in result.notes:
            result.notes.append(note)
    if accepts is False:
        return KernelCase(dtype_name, what, "the host function refuses what the CPU op computes")
    if expected.numel() == 0:
        return KernelCase(dtype_name, what, "ok")
    output = torch.empty(expected.shape, dtype=expected.dtype)
    argv = [str(binary), str(which)]
    for t in sig.struct_tensors:
        tensor = output if t == "output" else inputs[t]
        # (as the host fills them: a size-1 dimension's stride is 0)
        argv += [str(tensor.dim()), *map(str, tensor.shape), *(str(0 if n == 1 else st) for n, st in zip(tensor.shape, tensor.stride()))]
    for s in sig.scalars:
        v = _value(sig, pvals, s.name)
        argv.append(repr(float(v)) if not isinstance(v, bool) else str(int(v)))
    argv.append(str(output.numel()))
    data = b""
    for t in sig.inputs:
        raw, count, offset = _storage(torch, inputs[t])
        argv += [str(count), str(offset)]
        data += raw
    try:
        proc = child.run(argv, input=data, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return KernelCase(dtype_name, what, "mismatch", f"the kernel did not finish within {TIME_LIMIT:.0f} s")
    if proc.returncode != 0:
        return KernelCase(dtype_name, what, "mismatch", f"the kernel program failed (exit {proc.returncode})")
    actual = torch.frombuffer(bytearray(proc.stdout), dtype=torch.uint8).view(expected.dtype).reshape(expected.shape)
    rtol, atol = TOLERANCES[str(expected.dtype).replace("torch.", "")]
    close = torch.isclose(actual.float(), expected.float(), rtol=rtol * 4, atol=atol * 4, equal_nan=True)
    if bool(close.all()):
        return KernelCase(dtype_name, what, "ok")
    bad = (~close).nonzero()[0].tolist()
    at = tuple(bad)
    return KernelCase(
        dtype_name, what, "mismatch",
        f"{int((~close).sum())} of {close.numel()} differ; at {at}: kernel {actual[at].item()!r}, CPU {expected[at].item()!r}",
    )


def _schema(sig):
    return schema_arguments(sig.row.func)


def _value(sig, pvals: dict, name: str):
    return pvals[name] if name in pvals else schema_default(sig, name)


def schema_default(sig, name: str):
    """The schema's default of the scalar ``name`` as a Python value."""
    for _typ, arg, text in schema_parameters(sig.row.func):
        if arg == name and text is not None:
            if text in ("True", "False"):
                return text == "True"
            try:
                return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
            except ValueError:
                break
    raise BadInput(f"the kernel spec gives no try_params value for {name!r}, which has no default in {sig.row.name}'s schema.")


def kernel_table(result: KernelTrial) -> str:
    """Per dtype: the cases that match torch's CPU op, those both refuse, and the failures."""
    lines = []
    by_dtype: dict[str, list[KernelCase]] = {}
    for c in result.cases:
        by_dtype.setdefault(c.dtype, []).append(c)
    failures = result.failures
    for d, cases in by_dtype.items():
        ok = sum(c.outcome.startswith("ok") for c in cases)
        both = sum(c.outcome == "refused by both" for c in cases)
        failing = [c for c in cases if c in failures]
        refused = f"; {both} inputs refused, as by the CPU op, by the host's checks" if both else ""
        lines.append(f"{result.spec.kernel}_{d}: {ok} cases match torch's CPU op{refused}; {len(failing)} failing")
        lines += failure_lines([f"{c.what}: {c.outcome}{': ' + c.detail if c.detail else ''}" for c in failing])
    lines += closing_lines(result.notes, len(result.cases), len(failures))
    return "\n".join(lines) + "\n"

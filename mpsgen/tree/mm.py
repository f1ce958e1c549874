"""Scanner for the Objective-C++ host code in ``mps/operations/*.mm``.

Finds the shader library variable, helper dispatch macros (``REGISTER_UNARY_TI_DISPATCH``),
static kernel functions, ``REGISTER_DISPATCH`` statements (literal or produced by a
macro), ``exec_*_kernel(iter, "<name>")`` calls and the MPSGraph implementations that a
migration removes (``TORCH_IMPL_FUNC`` blocks, one-line macro instances, plain functions).
Lines are 0-based.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from mpsgen.tree.host import Definition, HostFile, scan_host
from mpsgen.tree.metal import MacroDef, scan_masked
from mpsgen.tree.source import line_of, line_starts, mask_c_comments_and_strings, match_close

_LIB = re.compile(r"static\s+auto\s*&\s*(\w+)\s*=\s*mps::MetalShaderLibrary::getBundledLibrary\(\)")
_KERNEL_FN = re.compile(r"^static\s+void\s+(\w+)\s*\(\s*(?:at::)?TensorIterator(?:Base)?\s*&", re.M)
_NAMESPACE = re.compile(r"^namespace\s+([\w:]+)\s*\{", re.M)


@dataclass(frozen=True)
class DispatchRegistration:
    stub: str
    function: str
    line: int
    has_semicolon: bool
    via_macro: str | None = None  # the helper macro whose instance produced it


@dataclass(frozen=True)
class KernelFunction:
    name: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class HelperDispatchMacro:
    """``#define M(NAME)`` producing a kernel function and ``REGISTER_DISPATCH(NAME##_stub, ...)``."""

    name: str
    kind: str  # unary | binary | ternary
    definition: MacroDef


@dataclass(frozen=True)
class KernelNameUse:
    kind: str
    name: str
    line: int


@dataclass(frozen=True)
class MPSGraphImpl:
    """A definition of a ``*_mps`` kernel: block, plain function or one-line macro instance."""

    kernel: str
    form: str  # "impl_func" | "function" | "macro_instance"
    start_line: int
    end_line: int
    macro: str | None = None


@dataclass(frozen=True)
class MMSource:
    library: str
    macros: dict[str, MacroDef]
    helper_macros: dict[str, HelperDispatchMacro]
    helper_instances: tuple[tuple[str, str, int], ...]  # (macro, op, line)
    kernel_functions: tuple[KernelFunction, ...]
    dispatches: tuple[DispatchRegistration, ...]
    kernel_names: tuple[KernelNameUse, ...]
    impls: tuple[MPSGraphImpl, ...]
    namespace_end: int | None  # line of the closing brace of `namespace at::native`


def _helper_kind(d: MacroDef) -> str | None:
    if d.params is None or len(d.params) != 1:
        return None
    p = d.params[0]
    if not re.search(rf"REGISTER_DISPATCH\s*\(\s*{p}\s*##\s*_stub", d.body):
        return None
    m = re.search(rf"exec_(unary|binary|ternary)_kernel\s*\(\s*\w+\s*,\s*#\s*{p}\b", d.body)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=256)
def mpsgraph_definitions(host: HostFile) -> tuple[tuple[Definition, str], ...]:
    """The definitions of MPSGraph kernels among a host file's, each with its
    :attr:`MPSGraphImpl.form`: a ``TORCH_IMPL_FUNC`` block, a ``*_mps`` function, or an
    instance of a macro writing either. (Once per scan: coverage looks for a few kernels at a
    time, op after op, in every .mm file.)"""
    out = []
    for d in host.definitions:
        if d.form == "impl_macro" or (d.form == "function_macro" and d.name.endswith("_mps")):
            out.append((d, "macro_instance"))
        elif d.form == "impl_func" or (d.form == "function" and d.name.endswith(("_mps", "_mps_"))):  # (relu_mps_: an in-place row's)
            out.append((d, d.form))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def scan_mm(text: str) -> MMSource:
    """What the host file ``text`` holds. Scanned once per text (a plan looks for MPSGraph code
    in every .mm file; coverage plans dozens of ops, each looking in a few of upstream's ~100
    files: room for them all): the answer is shared, read it only."""
    masked = mask_c_comments_and_strings(text)
    starts = line_starts(text)
    metal = scan_masked(text, masked)  # same #define / top-level statement rules
    macros = metal.macros

    lib_m = _LIB.search(text)
    library = lib_m.group(1) if lib_m else "lib"

    helpers = {}
    for name, d in macros.items():
        kind = _helper_kind(d)
        if kind:
            helpers[name] = HelperDispatchMacro(name, kind, d)
    helper_instances = tuple(
        (c.macro, c.args[0], c.start_line) for c in metal.calls if c.macro in helpers and c.args
    )

    kernels = []
    for m in _KERNEL_FN.finditer(masked):
        first = line_of(starts, m.start())
        brace = masked.find("{", m.end())
        semi = masked.find(";", m.end())
        if brace < 0 or 0 <= semi < brace:
            continue
        close = match_close(masked, brace)
        if close > 0:
            kernels.append(KernelFunction(m.group(1), first, line_of(starts, close)))

    # which dispatches, kernel-name uses and MPSGraph definitions the file holds: the host
    # scanner's facts (the ones check reads), with the extents an edit needs added here
    host = scan_host("", text)
    dispatches = []
    for d in host.dispatches:
        line = d.line - 1
        has_semicolon = True
        if d.via is None:
            at = masked.find("REGISTER_DISPATCH", starts[line])
            close = match_close(masked, masked.find("(", at))
            has_semicolon = close > 0 and masked[close + 1 : close + 3].lstrip().startswith(";")
        dispatches.append(DispatchRegistration(d.stub, d.function, line, has_semicolon, via_macro=d.via))
    names = [KernelNameUse(u.kind, u.name, u.line - 1) for u in host.uses]

    ends = {c.start_line: c.end_line for c in metal.calls}
    impls = []
    for d, form in mpsgraph_definitions(host):
        line = d.line - 1
        if form == "macro_instance":  # an instance of a macro that writes the TORCH_IMPL_FUNC block or the function
            impls.append(MPSGraphImpl(d.name, form, line, ends.get(line, line), macro=d.macro))
        else:
            brace = masked.find("{", starts[line])
            close = match_close(masked, brace) if brace >= 0 else -1
            impls.append(MPSGraphImpl(d.name, form, line, line_of(starts, close) if close > 0 else line))

    namespace_end = None
    for m in _NAMESPACE.finditer(masked):
        if m.group(1) in ("at::native",):
            close = match_close(masked, masked.find("{", m.start()))
            if close > 0:
                namespace_end = line_of(starts, close)
    return MMSource(
        library,
        macros,
        helpers,
        helper_instances,
        tuple(kernels),
        tuple(dispatches),
        tuple(names),
        tuple(sorted(impls, key=lambda i: i.start_line)),
        namespace_end,
    )

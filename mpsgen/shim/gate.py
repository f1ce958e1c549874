"""The compile gate: before mpsgen writes a functor, it compiles it against its model of Metal
(``templates/try/metal_shim.h``, the same model ``mpsgen try`` runs) for every (input, output)
type pair the op registers, calling it as the registration macros' kernels do. A functor that
does not compile, or that uses what Metal rejects although C++ accepts it (``double``, the
standard library, ``printf``, exceptions, ``new``/``delete``, function pointers, recursion the
text shows), is a problem located where its text came from: ``--expr``, a ``--functor-file``
line, or a spec's ``file:line:col``.

The compiler runs with ``-fsyntax-only`` (templates instantiated, no code generated); its answer
is cached by the content it was given, so a re-run costs a hash. Without a C++ compiler the
Metal-language checks still run and the gate says, once, that it compiled nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from mpsgen.codegen.functor import render_functor, variant_specs
from mpsgen.core.errors import Location
from mpsgen.core.resources import resource_dir
from mpsgen.metal import NOT_METAL
from mpsgen.spec.op import FunctorSource, OpSpec
from mpsgen.spec.registrations import input_dtypes
from mpsgen.shim.diagnostics import compiler_errors, last_said
from mpsgen.shim.toolchain import install_compiler_command, refuse_too_large, syntax_only_compile
from mpsgen.shim.toolchain import compiler as find_compiler
from mpsgen.shim.trial import driver_source
from mpsgen.tree.source import mask_c_comments_and_strings, match_close


_FUNCTION = re.compile(r"(?:\boperator\s*\(\s*\)|\b([A-Za-z_]\w*))\s*\([^;{}]*\)\s*(?:const\s*)?\{")
_PLACE = re.compile(r"^([^:\n]*driver\.cpp):(\d+):(\d+):", re.M)
_CASE = re.compile(r"^  if \(which == \d+\) \{  // (\w+) -> (\w+)$")


@dataclass(frozen=True)
class GateResult:
    """What the gate found: ``problems`` block the write; ``compiler`` is None when no C++
    compiler was found (the Metal-language checks still ran); ``cached`` when the compiler's
    answer came from the cache."""

    problems: list[str]
    compiler: str | None
    cached: bool = False


NO_COMPILER = (
    "no C++ compiler (g++, clang++ or c++) on PATH: the functor was checked for what Metal rejects "
    f"but not compiled against mpsgen's Metal model before writing (install one: `{install_compiler_command()}`; "
    "`mpsgen doctor` checks it)."
)


def functor_place(functor: FunctorSource, text: str, line: int, col: int = 0) -> str:
    """Where ``line``/``col`` of the rendered functor ``text`` came from: a line of the spec file
    or --functor-file, or the column of --expr."""
    rendered = text.split("\n")[line - 1] if 0 < line <= len(text.split("\n")) else ""
    if functor.expr is not None:
        offset = rendered.find(functor.expr.strip())
        inside = col - 1 - offset if offset >= 0 and col else -1  # 0-based, in the expression
        if not 0 <= inside <= len(functor.expr):
            return str(Location(functor.origin, functor.line)) if functor.line else functor.origin
        if functor.line:  # the expr of a spec file
            return str(Location(functor.origin, functor.line, functor.column + inside + 1))
        return f"{functor.origin} (column {inside + 1} of the expression)"
    body = functor.body or ""
    lines = body.split("\n")
    wanted = rendered.strip()
    matches = [i for i, b in enumerate(lines) if b.strip() == wanted and wanted]
    if not matches or not functor.line:
        return functor.origin if not matches else f"{functor.origin}, functor line {matches[0] + 1}"
    index = min(matches, key=lambda i: abs(i - (line - 2)))
    body_col = col - (len(rendered) - len(rendered.lstrip())) + (len(lines[index]) - len(lines[index].lstrip())) if col else 0
    return str(Location(functor.origin, functor.line + index, functor.column + body_col if body_col > 0 else 0))


def metal_problems(functor: FunctorSource, text: str) -> list[str]:
    """What Metal rejects in the rendered functor ``text`` that a C++ compiler would accept."""
    masked = mask_c_comments_and_strings(text)
    found = []
    for pattern, why in NOT_METAL:
        m = pattern.search(masked)
        if m:
            line = masked.count("\n", 0, m.start()) + 1
            col = m.start() - (masked.rfind("\n", 0, m.start()) + 1) + 1
            found.append(f"{functor_place(functor, text, line, col)}: {why} (`{text.split(chr(10))[line - 1].strip()}`).")
    found += _recursion(functor, text, masked)
    return found


def _recursion(functor: FunctorSource, text: str, masked: str) -> list[str]:
    """A function of the functor that calls itself where it is the only one of its name (an
    overload calling another overload is not recursion, and the text alone cannot tell which
    one a call picks)."""
    defined: dict[str, list[tuple[int, int]]] = {}
    for m in _FUNCTION.finditer(masked):
        name = m.group(1) or "operator()"
        if name in ("if", "for", "while", "switch", "return", "sizeof", "static_cast", "struct"):
            continue
        end = match_close(masked, m.end() - 1)
        end = len(masked) if end < 0 else end  # (unclosed: to the end)
        defined.setdefault(name, []).append((m.end(), end))
    found = []
    for name, bodies in defined.items():
        if len(bodies) != 1:
            continue
        start, end = bodies[0]
        call = r"(?:\boperator\s*\(\s*\)|\(\s*\*\s*this\s*\))\s*\(" if name == "operator()" else rf"\b{re.escape(name)}\s*\("
        m = re.compile(call).search(masked, start, end)
        if m:
            line = masked.count("\n", 0, m.start()) + 1
            found.append(f"{functor_place(functor, text, line)}: {name} calls itself; Metal has no recursion (write it as a loop).")
    return found


def check_functor(spec: OpSpec, text: str, pairs: list[tuple[str, str]]) -> GateResult:
    """Compile the rendered functor ``text`` of ``spec`` for each registered (input, output)
    Metal type pair, as the kernels call it; every problem located at the functor's source."""
    refuse_too_large(spec.functor.expr or spec.functor.body or text, spec.functor.origin, "functor")
    problems = metal_problems(spec.functor, text)
    cxx = find_compiler()
    if cxx is None or not pairs:
        return GateResult(problems, cxx)
    source, first, last = driver_source(spec, pairs)
    shim = (resource_dir("templates") / "try" / "metal_shim.h").read_text(encoding="utf-8")
    code, stderr, cached = syntax_only_compile(source, shim, cxx)
    if code != 0:
        problems.append(_located_error(spec, text, stderr, source, first, last))
    return GateResult(problems, cxx, cached)


def _located_error(spec: OpSpec, text: str, stderr: str, source: str, first: int, last: int) -> str:
    """The compiler's first error, at the functor line it concerns and for the type pair whose
    call failed (when the error is in that call rather than in the functor)."""
    lines = source.split("\n")
    error = (compiler_errors(stderr) or [None])[0]
    message = error.message.strip() if error else last_said(stderr)
    in_driver = error is not None and error.file.endswith("driver.cpp")
    place = None
    line = col = 0
    if in_driver and error.inside(first, last):
        line, col = error.line, error.col
    else:  # in the shim or at a call: the first functor line the compiler's context names
        for m in _PLACE.finditer(stderr):
            if first <= int(m.group(2)) <= last:
                line, col = int(m.group(2)), int(m.group(3))
                break
    if line:
        place = functor_place(spec.functor, text, line - first + 1, col)
    pair = ""
    at = error.line if in_driver else 0
    for m in _PLACE.finditer(stderr):  # the call of the functor this error came from
        n = int(m.group(2))
        if n > last:
            at = n
            break
    if at > last:
        for k in range(min(at, len(lines)) - 1, last - 1, -1):
            if case := _CASE.match(lines[k]):
                pair = f" when called with {case.group(1)} inputs giving {case.group(2)}, as its registration does"
                break
    shown = f" (`{text.split(chr(10))[line - first].strip()}`)" if line else ""
    if re.search(r"is not a member of '(?:::)?(?:metal|c10::metal)'", message):
        shown += (
            "; if Metal or the tree's c10/metal headers have it, mpsgen's model lacks it: add it to "
            "templates/try/metal_shim.h, or pass --force to write the functor unchecked"
        )
    return (
        f"{place or spec.functor.origin}: the functor does not compile against mpsgen's Metal model{pair}: "
        f"{message}{shown}."
    )


def gate_spec(spec: OpSpec) -> GateResult:
    """The gate for a spec on its own (``spec validate``): its functor as new-op would write it,
    for every pair its dtype groups register. A spec without a functor has nothing to compile."""
    if not spec.has_functor:
        return GateResult([], find_compiler())
    kspec = spec if spec.kernel == spec.name else replace(spec, name=spec.kernel)
    problems: list[str] = []
    result = GateResult([], find_compiler(), True)
    for variant in variant_specs(kspec):  # (each case's kernel of a selector)
        result = check_functor(variant, render_functor(variant), input_dtypes(variant))
        problems += result.problems
    return GateResult(problems, result.compiler, result.cached)

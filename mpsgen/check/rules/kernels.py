"""Rules on the Metal kernels of TensorIterator ops and their functors: a kernel name host code
runs that no .metal file registers (MPS003), a registration without its functor (MPS004), an
(op, dtype) registered twice (MPS006), and registrations whose input dtypes no overload of the
functor takes (integers computed in float: MPS012; any other: MPS013).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from functools import partial

from mpsgen.check.model import ERROR, WARNING, Finding, lines_of, listed, rule
from mpsgen.tree.facts import Facts
from mpsgen.tree.functors import CATEGORY, FLOAT, INT
from mpsgen.tree.kernels import Registration


# -- where a finding's symbols are (bound with partial: computed when asked) --
def _kernel_name_sites(f: Facts, name: str, paired: str | None) -> list[tuple[str, int]]:
    return f.metal_sites(name) + ([(paired, 0)] if paired else [])


# -- MPS003 -------------------------------------------------------------------------------
@rule(
    "MPS003",
    "unregistered-metal-kernel",
    ERROR,
    "exec_unary/binary/ternary_kernel is called with a kernel name no .metal file registers",
    """
`lib.exec_binary_kernel(iter, "foo")` looks up the host names `foo_dense_<out>_<in>`,
`foo_strided_<out>_<in>`, ... that a `REGISTER_*_OP(foo, ...)` line of a kernels/*.metal file
instantiates (directly, through a helper macro like REGISTER_FLOAT_BINARY_OP(foo), or as a
line of a bulk macro such as INSTANTIATE_UNARY_KERNELS2). With no registration the lookup
fails at run time ("Failed to create function state object").

Fix: register the kernel in the .metal file (with its `foo_functor`), or correct the name
passed to exec_*_kernel.
""",
)
def unregistered_metal_kernel(f: Facts) -> Iterator[Finding]:
    for u in f.uses:
        if u.name not in f.registered:
            paired = f.index.paired(u.path)
            yield Finding(
                u.path, u.line, 0, "MPS003", ERROR,
                f'exec_{u.kind}_kernel(…, "{u.name}") names a kernel that no .metal file registers',
                symbols=(u.name,),
                locate=partial(_kernel_name_sites, f, u.name, paired),
            )


# -- MPS004 -------------------------------------------------------------------------------
@rule(
    "MPS004",
    "missing-functor",
    ERROR,
    "a REGISTER_*_OP(name, ...) has no name_functor in its .metal file or its includes",
    """
`REGISTER_UNARY_OP(foo, float, float)` instantiates the kernel templates with
`foo_functor`; the struct must be defined in the same .metal file (directly or through a
functor-defining macro of that file) or in a header it includes. Otherwise the Metal
library does not compile. Usually the functor was renamed or deleted and its registrations
were left behind.

Fix: define `struct foo_functor { ... };` before the registrations, or rename the
registrations to the functor's name.
""",
)
def missing_functor(f: Facts) -> Iterator[Finding]:
    for m in f.index.metal_files:
        missing = [op for op in m.ops if op not in m.functors and op not in m.header_functors]
        if not missing:
            continue
        seen: dict[str, list[Registration]] = {}
        # only the statements registering an op without functor, expanded in file order
        for r in m.expand_all(sorted({i for op in missing for i in m.ops[op]})):
            if m.needs_functor(r.macro) and r.op not in m.functors and r.op not in m.header_functors:
                seen.setdefault(r.op, []).append(r)
        for op, regs in seen.items():
            first = min(regs, key=lambda r: r.line)
            n = len(regs)
            yield Finding(
                m.path, first.line, 0, "MPS004", ERROR,
                f"{first.macro}({op}, …) registers {op} ({n} registration{'s' if n > 1 else ''}) but no {op}_functor is defined in {m.path} or its includes",
                symbols=(op, f"{op}_functor"),
                locate=partial(lines_of, m.path, tuple(r.line for r in regs)),
            )


# -- MPS006 -------------------------------------------------------------------------------
@rule(
    "MPS006",
    "duplicate-kernel-registration",
    ERROR,
    "the same (op, dtype) Metal kernel is registered twice in one .metal file",
    """
Two registrations of the same op for the same dtypes (`REGISTER_FLOAT_BINARY_OP(foo);` next
to `REGISTER_BINARY_OP(foo, float, float);`, or a bulk macro instantiated twice) produce the
same host name twice, and the Metal library fails to compile.

Fix: delete the repeated line, or narrow the helper macro to the dtypes not yet registered.
""",
)
def duplicate_registration(f: Facts) -> Iterator[Finding]:
    for m in f.index.metal_files:
        if not m.may_have_duplicates():
            continue  # the common case: decided on the statements' ops and keys alone
        first_seen: dict[tuple, Registration] = {}
        dups: dict[int, list[tuple[Registration, Registration]]] = defaultdict(list)
        for r in m.registrations:
            prev = first_seen.get(r.key)
            if prev is None:
                first_seen[r.key] = r
            else:
                dups[r.statement_line].append((prev, r))
        for line, pairs in sorted(dups.items()):
            what = listed(dict.fromkeys(f"{r.op}({', '.join(r.dtypes)})" for _, r in pairs))
            firsts = sorted({p.line for p, _ in pairs})
            yield Finding(
                m.path, line, 0, "MPS006", ERROR,
                f"{pairs[0][1].macro} registers {what} again (first at line{'s' if len(firsts) > 1 else ''} {listed(str(x) for x in firsts)})",
                symbols=tuple(dict.fromkeys(r.op for _, r in pairs)),
                locate=partial(lines_of, m.path, tuple(firsts)),
            )


# -- the functors' overloads and the dtypes registered (MPS012, MPS013) -----------------------
def _registration_categories(f: Facts, m, op: str) -> dict[tuple[str, str], Registration]:
    """(input category, output category) -> the first registration of ``op`` in ``m`` with them."""
    out: dict[tuple[str, str], Registration] = {}
    for r in m.registrations_of(op):
        if len(r.dtypes) < 2:
            continue
        cats = (CATEGORY.get(r.dtypes[0]), CATEGORY.get(r.dtypes[-1]))
        if None in cats:
            continue
        if cats not in out or r.line < out[cats].line:
            out[cats] = r
    return out


@rule(
    "MPS012",
    "missing-integer-overload",
    WARNING,
    "integer inputs are registered to compute in float, but the functor has no overload that takes integers",
    """
`REGISTER_UNARY_OP(foo, int, float)` (the int2float pattern: integer and bool inputs, a
float result) instantiates `foo_functor` with an integral T. If every `operator()` of the
functor is constrained to floating-point (or complex) types, that instantiation has no
viable overload and the Metal library does not compile, or, with an unconstrained
fallback elsewhere, computes in the integer type. Upstream functors give such ops an
overload `template <typename T, enable_if_t<is_scalar_integral_v<T>, bool> = true> float
operator()(T x)` that converts to float first.

Fix: add the integral overload (`mpsgen new-op foo --unary --int2float` writes one), or
drop the integer registrations.
""",
)
def missing_integer_overload(f: Facts) -> Iterator[Finding]:
    for m, defs in f.functor_defs:
        for d in defs:
            if d.name not in m.ops or d.accepts(INT):
                continue
            cats = _registration_categories(f, m, d.name)
            r = cats.get((INT, FLOAT))
            if r is not None:
                yield Finding(
                    m.path, r.line, 0, "MPS012", WARNING,
                    f"{r.macro}({d.name}, {', '.join(r.dtypes)}) computes integer inputs in float, but {d.name}_functor (line {d.line}) has no overload taking integers",
                    symbols=(d.name, f"{d.name}_functor"),
                    locate=partial(lines_of, m.path, (d.line,)),
                )


@rule(
    "MPS013",
    "unaccepted-dtype",
    WARNING,
    "a registration's input dtype is one no overload of the functor accepts",
    """
Each `REGISTER_*_OP(foo, <in>, <out>)` instantiates `foo_functor` for `<in>`. When every
`operator()` is constrained (`enable_if_t<is_scalar_floating_point_v<T>, ...>`,
`is_complex_v`, `is_scalar_integral_v`) and none admits that input type (a complex
`float2` registration with only real overloads, an integer one with only floating ones and
no float result), the instantiation fails and the Metal library does not compile.
Integer inputs computed in float are MPS012.

Fix: add an overload for that kind of input, or remove the registration.
""",
)
def unaccepted_dtype(f: Facts) -> Iterator[Finding]:
    for m, defs in f.functor_defs:
        for d in defs:
            if d.name not in m.ops or not d.overloads:
                continue
            for (cin, cout), r in sorted(_registration_categories(f, m, d.name).items(), key=lambda kv: kv[1].line):
                if d.accepts(cin) or (cin, cout) == (INT, FLOAT):
                    continue
                yield Finding(
                    m.path, r.line, 0, "MPS013", WARNING,
                    f"{r.macro}({d.name}, {', '.join(r.dtypes)}) registers {cin} inputs, but no overload of {d.name}_functor (line {d.line}) accepts them",
                    symbols=(d.name, f"{d.name}_functor"),
                    locate=partial(lines_of, m.path, (d.line,)),
                )

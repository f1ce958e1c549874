"""Rules on native_functions.yaml's dispatch rows and the stubs and host kernels they reach:
an MPS row naming a kernel no host source defines (MPS001), a shared stub-based kernel whose
stub has no MPS registration (MPS002), a stub registered twice (MPS005), MPSGraph code no row
dispatches to any more (MPS007), an op migrated half way (MPS008), a key named twice in a row
(MPS015).

A stub is tied to a yaml row only through a ``DECLARE_DISPATCH`` name the tree has
(:meth:`~mpsgen.tree.facts.Facts.tie_stub`): precision over recall.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from functools import partial

from mpsgen.check.model import ERROR, WARNING, Finding, lines_of, listed, rule
from mpsgen.tree.facts import Facts, mps_only, op_of, shared
from mpsgen.tree.native_rows import Dispatch as DispatchEntry
from mpsgen.tree.native_rows import Row as NativeFunction


# -- where a finding's symbols are (bound with partial: computed when asked) --
def _yaml_col(d: DispatchEntry) -> int:
    return d.text.find(d.kernel) + 1


def _stub_and_kernel_sites(f: Facts, stub: str, names: tuple[str, ...]) -> list[tuple[str, int]]:
    return f.stub_sites(stub) + [site for n in names for site in f.metal_sites(n)]


def _migrated_from(f: Facts, name: str) -> list[tuple[str, int]]:
    return list(f.migrated_from.get(name, ()))


def _lagging_row_sites(f: Facts, sibling_lines: tuple[int, ...], kernel: str) -> list[tuple[str, int]]:
    return [(f.yaml, n) for n in sibling_lines] + f.kernel_sites(kernel)


# -- MPS001 -------------------------------------------------------------------------------
@rule(
    "MPS001",
    "missing-mps-kernel",
    ERROR,
    "a native_functions.yaml MPS row names a kernel that no MPS host source defines",
    """
A dispatch line such as `MPS: foo_out_mps` makes the generated code call
at::native::foo_out_mps, so some file under aten/src/ATen/native/mps/ must define it: a
`TORCH_IMPL_FUNC(foo_out_mps)` block, a function `foo_out_mps(...) { ... }`, or an instance
of a macro of that file whose expansion produces one. Without it the build fails at link
time. Usually the implementation was deleted (an op moved to a Metal kernel) while the
yaml row still names it.

Fix: if the op now runs on a Metal kernel through its dispatch stub, put MPS on the shared
line instead (`CPU, CUDA: foo_out` -> `CPU, CUDA, MPS: foo_out`) and drop the `MPS:` line;
otherwise restore the implementation or correct the kernel name in the row.
""",
)
def missing_kernel(f: Facts) -> Iterator[Finding]:
    for e, d in f.mps_dispatch[0]:
        kernel = d.kernel.split("::")[-1]
        if kernel not in f.definitions:
            yield Finding(
                f.yaml, d.line, _yaml_col(d), "MPS001", ERROR,
                f"{e.name} dispatches MPS to {kernel}, but no file under aten/src/ATen/native/mps defines it",
                symbols=(e.name, kernel),
                locate=partial(f.kernel_sites, kernel),
            )


# -- MPS002 -------------------------------------------------------------------------------
@rule(
    "MPS002",
    "missing-stub-registration",
    ERROR,
    "a row puts MPS on a shared stub-based kernel whose stub has no MPS REGISTER_DISPATCH",
    """
`CPU, CUDA, MPS: foo_out` runs the shared structured kernel, which calls `foo_stub`; on an
MPS tensor the stub needs an MPS entry, registered in an operations/*.mm file with
`REGISTER_DISPATCH(foo_stub, &foo_mps_kernel)` or a helper macro of that file such as
`REGISTER_UNARY_TI_DISPATCH(foo);`. Without it the op fails at run time with "DispatchStub:
missing kernel for mps". The stub is tied to the row through the DECLARE_DISPATCH names of
the tree (foo_out -> foo_stub, pow_Tensor_Scalar_out -> pow_tensor_scalar_stub); rows whose
stub cannot be tied are not reported.

Fix: add the host kernel and its REGISTER_DISPATCH (`mpsgen new-op foo ...` writes both),
or take MPS off the shared line.
""",
)
def missing_stub_registration(f: Facts) -> Iterator[Finding]:
    for e, d in f.mps_dispatch[1]:
        stub = f.tie_stub(e, d.kernel)
        if stub and stub not in f.dispatches:
            header, hline = f.index.stubs[stub]
            op = op_of(e)
            names = dict.fromkeys((op, op.removeprefix("special_"), stub.removesuffix("_stub")))
            yield Finding(
                f.yaml, d.line, _yaml_col(d), "MPS002", ERROR,
                f"{e.name} puts MPS on the shared kernel {d.kernel}, but {stub} ({header}:{hline}) has no MPS REGISTER_DISPATCH",
                symbols=(e.name, stub),
                locate=partial(_stub_and_kernel_sites, f, stub, tuple(names)),
            )


# -- MPS005 -------------------------------------------------------------------------------
@rule(
    "MPS005",
    "duplicate-stub-registration",
    ERROR,
    "the same stub is registered twice for MPS",
    """
Each dispatch stub takes one MPS kernel: a second `REGISTER_DISPATCH(foo_stub, ...)` (or a
helper-macro instance producing one) in any mps/ source is a duplicate definition of the
stub's MPS entry and fails to link, or silently shadows the intended kernel.

Fix: delete one of the two registrations (keep the one next to the kernel the op should
run).
""",
)
def duplicate_stub(f: Facts) -> Iterator[Finding]:
    for stub, regs in f.dispatches.items():
        for later in regs[1:]:
            first = regs[0]
            yield Finding(
                later.path, later.line, 0, "MPS005", ERROR,
                f"{stub} is registered for MPS again (first at {first.path}:{first.line})",
                symbols=(stub,),
                locate=partial(lines_of, first.path, (first.line,)),
            )


# -- MPS007 -------------------------------------------------------------------------------
@rule(
    "MPS007",
    "dead-mpsgraph-impl",
    WARNING,
    "an MPSGraph *_mps implementation that no native_functions.yaml row dispatches to",
    """
After an op moves to a Metal kernel its rows no longer name `foo_out_mps`, but the old
MPSGraph code (`TORCH_IMPL_FUNC(foo_out_mps)` block, a `CREATE_MPS_..._FUNC(foo_out_mps, ...)`
line, or a non-static `Tensor& foo_out_mps(...)` function used nowhere else) stays behind. A
leftover TORCH_IMPL_FUNC no longer compiles (its structured class is not generated); a
leftover function is dead code.

Fix: delete the implementation, any static helper used only by it, and its
`#include <ATen/ops/foo_native.h>`.
""",
)
def dead_impl(f: Facts) -> Iterator[Finding]:
    uses = None
    for name, defs in sorted(f.definitions.items()):
        if not name.endswith("_mps") or name in f.yaml_kernels:
            continue
        for d in defs:
            if d.form == "function_macro":
                continue  # helper functions a macro stamps out: not tied to one row
            if d.form == "function":
                if d.static:
                    continue  # file-local: never a dispatched kernel
                if uses is None:
                    uses = _mps_word_counts(t for _, t in f.index.mps_texts())
                if uses[name[::-1]] > 1:
                    continue  # declared or called elsewhere: a helper, not a dispatched kernel
            yield Finding(
                d.path, d.line, 0, "MPS007", WARNING,
                f"{name} ({_FORMS[d.form]}{' ' + d.macro if d.macro else ''}) is not dispatched to by any native_functions.yaml row",
                symbols=(name,),
                # the rows that now put MPS on the kernel this one was the MPS half of
                locate=partial(_migrated_from, f, name),
            )


# in a reversed text: "spm_" (a literal to search for) not preceded by a word character
# (so "_mps" ends its word), and the rest of the word
_MPS_END_REVERSED = re.compile(r"spm_(?<=(?<!\w)spm_)\w*")


def _mps_word_counts(texts: Iterable[str]) -> Counter:
    """How often each word ending in ``_mps`` occurs as a whole word (where a regex
    ``word`` with no word character on either side matches) in ``texts``, keyed by the word
    *reversed*: the words are found and counted at C speed in the reversed texts."""
    counts: Counter = Counter()
    for text in texts:
        if "_mps" in text:
            counts.update(_MPS_END_REVERSED.findall(text[::-1]))
    return counts


_FORMS = {"impl_func": "TORCH_IMPL_FUNC", "function": "function", "impl_macro": "TORCH_IMPL_FUNC from macro", "function_macro": "function from macro"}


# -- MPS008 -------------------------------------------------------------------------------
@rule(
    "MPS008",
    "half-migrated-op",
    WARNING,
    "some rows of an op run MPS through the shared stub, others still through *_mps kernels",
    """
When an op moves to a Metal kernel every row whose CPU/CUDA kernel is stub-based should put
MPS on the shared line. A row still on `MPS: foo_<overload>_mps` while a sibling row uses
the shared stub means the op was migrated half way: the two paths can disagree on dtypes,
type promotion and results, and the old MPSGraph code is kept alive. Reported at each
lagging row whose own CPU/CUDA kernel is tied to a declared stub.

Fix: migrate the remaining rows (`mpsgen new-op foo --row <overload>`), or note in the row
why it must stay on MPSGraph.
""",
)
def half_migrated(f: Facts) -> Iterator[Finding]:
    rows: dict[str, list[NativeFunction]] = defaultdict(list)
    for e in f.mps_dispatch[2]:
        rows[op_of(e)].append(e)
    for op, entries in rows.items():
        migrated = [e for e in entries if any(shared(d, e) and f.tie_stub(e, d.kernel) for d in e.dispatch)]
        if not migrated:
            continue
        for e in entries:
            for d in e.dispatch:
                if mps_only(d) and not shared(d, e) and d.kernel.endswith("_mps") and f.row_stub(e):
                    yield Finding(
                        f.yaml, d.line, _yaml_col(d), "MPS008", WARNING,
                        f"{e.name} still dispatches MPS to {d.kernel} while {listed(x.name for x in migrated)} of {op} use{'s' if len(migrated) == 1 else ''} the shared stub",
                        symbols=(e.name, d.kernel),
                        locate=partial(_lagging_row_sites, f, tuple(x.start_line for x in migrated), d.kernel.rpartition("::")[2]),
                    )


# -- MPS015 -------------------------------------------------------------------------------
@rule(
    "MPS015",
    "repeated-dispatch-key",
    ERROR,
    "a native_functions.yaml row names one dispatch key twice",
    """
Each dispatch key of a row maps to one kernel. A key listed twice, on one line
(`CPU, CUDA, MPS, MPS: foo_out`) or on two lines of the row (`CPU, CUDA, MPS: foo_out` and
`MPS: foo_out_mps`), is a row torchgen does not build (or, for two lines, a YAML mapping whose
later line silently wins): a hand edit or a merge went wrong.

Fix: keep the key once, on the line whose kernel the row should run.
""",
)
def repeated_dispatch_key(f: Facts) -> Iterator[Finding]:
    for e in f.index.rows:
        seen: dict[str, int] = {}
        for d in e.dispatch:
            for key in d.keys:
                if key in seen:
                    where = "on this line" if seen[key] == d.line else f"also on line {seen[key]}"
                    yield Finding(
                        f.yaml, d.line, _yaml_col(d), "MPS015", ERROR,
                        f"{e.name} names the dispatch key {key} twice ({where})",
                        symbols=(e.name,),
                    )
                    break
                seen[key] = d.line

"""The rules of ``mpsgen check``. Each reads an :class:`~mpsgen.check.index.Index` (through
:class:`Facts`, which derives the cross-file tables once) and yields findings; none prints.

Precision over recall: a rule only reports what it can tie to a line with confidence
(a stub is tied to a yaml row only through a ``DECLARE_DISPATCH`` name the tree has).
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from functools import cached_property, partial
from collections.abc import Iterable, Iterator

from mpsgen.check.index import Definition, Dispatch, Index, KernelUse, Registration
from mpsgen.check.model import ERROR, WARNING, Finding, rule
from mpsgen.tree.native_rows import Dispatch as DispatchEntry
from mpsgen.tree.native_rows import Row as NativeFunction
from mpsgen.tree.functors import CATEGORY, COMPLEX, FLOAT, INT
from mpsgen.tree.resolver import StubResolver

SHARED_KEYS = frozenset({"CPU", "CUDA"})
MAX_LISTED = 4


def mps_only(d: DispatchEntry) -> bool:
    return d.has_mps and all(k.endswith("MPS") for k in d.keys)


def shared(d: DispatchEntry, e: NativeFunction | None = None) -> bool:
    """Whether the line puts MPS on the CPU/CUDA kernel: on their line (``CPU, CUDA, MPS: k``),
    or on a line of its own naming the kernel the row's ``CPU: k`` / ``CUDA: k`` lines share."""
    if not d.has_mps:
        return False
    if SHARED_KEYS & set(d.keys):
        return True
    return e is not None and any(SHARED_KEYS & set(x.keys) and x.kernel == d.kernel for x in e.dispatch)


def op_of(entry: NativeFunction) -> str:
    """``add_`` and ``add.out`` both belong to op ``add``."""
    return entry.base[:-1] if entry.base.endswith("_") and not entry.base.startswith("_") else entry.base


def listed(names: Iterable[str]) -> str:
    names = list(names)
    more = len(names) - MAX_LISTED
    return ", ".join(names[:MAX_LISTED]) + (f" and {more} more" if more > 0 else "")


class Facts:
    """Cross-file tables derived from an index, each computed on first use."""

    def __init__(self, index: Index):
        self.index = index
        self.yaml = index.yaml_path
        self._ties: dict[tuple[str, str], str | None] = {}

    @cached_property
    def definitions(self) -> dict[str, list[Definition]]:
        out: dict[str, list[Definition]] = defaultdict(list)
        for h in self.index.host_files:
            for d in h.definitions:
                out[d.name].append(d)
        return out

    @cached_property
    def dispatches(self) -> dict[str, list[Dispatch]]:
        out: dict[str, list[Dispatch]] = defaultdict(list)
        for h in self.index.host_files:
            for d in h.dispatches:
                out[d.stub].append(d)
        for regs in out.values():
            regs.sort(key=lambda d: (d.path, d.line))
        return out

    @cached_property
    def uses(self) -> list[KernelUse]:
        return [u for h in self.index.host_files for u in h.uses]

    @cached_property
    def registered(self) -> dict[str, list]:
        """Op name -> the .metal files registering it (the statements' op names: no expansion)."""
        out: dict[str, list] = defaultdict(list)
        for f in self.index.metal_files:
            for op in f.ops:
                out[op].append(f)
        return out

    def registrations(self, op: str) -> list[Registration]:
        """Every (op, dtypes) registration of ``op``, expanded on demand."""
        return [r for f in self.registered.get(op, ()) for r in f.registrations_of(op)]

    @cached_property
    def mps_dispatch(self) -> tuple[list[tuple[NativeFunction, DispatchEntry]], list[tuple[NativeFunction, DispatchEntry]], list[NativeFunction]]:
        """One pass over the yaml rows: (row, line) pairs that are MPS-only, pairs that put MPS
        on a CPU/CUDA line, and the rows with MPS on any line."""
        only, on_shared, rows = [], [], []
        for e in self.index.rows:
            has = False
            for d in e.dispatch:
                if "MPS" in d.keys:
                    has = True
                    on_host = shared(d, e)
                    if mps_only(d) and not on_host:
                        only.append((e, d))
                    if on_host:
                        on_shared.append((e, d))
            if has:
                rows.append(e)
        return only, on_shared, rows

    @cached_property
    def yaml_kernels(self) -> set[str]:
        return {d.kernel.rpartition("::")[2] for e in self.index.rows for d in e.dispatch}

    def tie_stub(self, entry: NativeFunction, kernel: str) -> str | None:
        """The declared stub a shared kernel of ``entry`` runs, if the tree's names tie them
        (asked by several rules for the same rows: worked out once per row and kernel)."""
        key = (entry.base, kernel)
        try:
            return self._ties[key]
        except KeyError:
            stub = self._ties[key] = self._tie_stub(entry, kernel)
            return stub

    @cached_property
    def resolver(self) -> StubResolver:
        """The one row -> stub resolver (mpsgen.tree.resolver), over this index's stubs."""
        # (the yaml, for a row's kind and schema where a kernel has several definitions, and for
        # forwards). The tree's one resolver: explain and coverage plan on the same tree, and a
        # second resolver would scan the .cpp sources again.
        index = self.index
        return StubResolver.of(index.tree, lambda: StubResolver(index.stubs, index.cpp_files, partial(index.read, self.yaml)))

    def _tie_stub(self, entry: NativeFunction, kernel: str) -> str | None:
        return self.resolver.resolve(entry, kernel).stub

    def row_stub(self, entry: NativeFunction) -> str | None:
        """The stub a row is tied to through its CPU/CUDA kernel (whatever MPS does)."""
        for d in entry.dispatch:
            if SHARED_KEYS & set(d.keys):
                stub = self.tie_stub(entry, d.kernel)
                if stub:
                    return stub
        return None

    # -- where a finding's symbols are (check PATHS keeps a finding located in a given file) --
    def metal_sites(self, kernel: str) -> list[tuple[str, int]]:
        """Where the Metal kernel ``kernel`` is registered and its functor defined, and the
        host file paired with each such .metal file (where its REGISTER_DISPATCH goes)."""
        out: list[tuple[str, int]] = []
        for m in self.registered.get(kernel, ()):
            out.append((m.path, m.statements[m.ops[kernel][0]].line))
        for m in self.index.metal_files:
            if kernel in m.functors:
                out.append((m.path, m.functors[kernel]))
        for path in {p for p, _ in out}:
            host = self.index.paired(path)
            if host:
                out.append((host, 0))
        return out

    def stub_sites(self, stub: str) -> list[tuple[str, int]]:
        """The stub's DECLARE_DISPATCH, its MPS registrations and its uses in MPS code."""
        out = [self.index.stubs[stub]] if stub in self.index.stubs else []
        out += [(d.path, d.line) for d in self.dispatches.get(stub, ())]
        return out + self.index.code_sites(stub)

    def kernel_sites(self, name: str) -> list[tuple[str, int]]:
        """Where a host function is defined, and used in MPS code."""
        return [(d.path, d.line) for d in self.definitions.get(name, ())] + self.index.code_sites(name)

    def row_sites(self, op: str) -> list[tuple[str, int]]:
        """The dispatch lines of the rows of ``op`` (``add``: add.Tensor, add.out, add_.Tensor)."""
        return [(self.yaml, d.line) for e in self.op_rows.get(op, ()) for d in e.dispatch]

    @cached_property
    def functor_defs(self) -> list:
        """(metal file, its functor structs), for the files that define any (read once for MPS010-MPS013)."""
        return [(m, structs) for m, structs in self.index.functor_structs() if structs]

    @cached_property
    def migrated_from(self) -> dict[str, list[tuple[str, int]]]:
        """``foo_out_mps`` -> the yaml lines putting MPS on ``foo_out`` (the shared kernel
        whose MPS half it was): where the edit that left it behind was made."""
        out: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for _e, d in self.mps_dispatch[1]:
            out[d.kernel.rpartition("::")[2] + "_mps"].append((self.yaml, d.line))
        return out

    @cached_property
    def op_rows(self) -> dict[str, list[NativeFunction]]:
        out: dict[str, list[NativeFunction]] = defaultdict(list)
        for e in self.index.rows:
            out[op_of(e)].append(e)
        return out

    @cached_property
    def functions_using(self) -> dict[str, list[KernelUse]]:
        out: dict[str, list[KernelUse]] = defaultdict(list)
        for u in self.uses:
            if u.function:
                out[u.function].append(u)
        return out

    def metal_kernel_names(self, stub: str) -> list[str] | None:
        """Kernel names the MPS function registered for ``stub`` passes to exec_*_kernel
        (None when the stub has no MPS registration or its function calls none)."""
        regs = self.dispatches.get(stub)
        if not regs:
            return None
        names = [u.name for r in regs for u in self.functions_using.get(r.function, [])]
        return names or None


# -- the locations of findings (see Finding.locate), bound with partial: computed when asked --
def _lines_of(path: str, lines: tuple[int, ...]) -> list[tuple[str, int]]:
    return [(path, n) for n in lines]


def _stub_and_kernel_sites(f: Facts, stub: str, names: tuple[str, ...]) -> list[tuple[str, int]]:
    return f.stub_sites(stub) + [site for n in names for site in f.metal_sites(n)]


def _kernel_name_sites(f: Facts, name: str, paired: str | None) -> list[tuple[str, int]]:
    return f.metal_sites(name) + ([(paired, 0)] if paired else [])


def _migrated_from(f: Facts, name: str) -> list[tuple[str, int]]:
    return list(f.migrated_from.get(name, ()))


def _lagging_row_sites(f: Facts, sibling_lines: tuple[int, ...], kernel: str) -> list[tuple[str, int]]:
    return [(f.yaml, n) for n in sibling_lines] + f.kernel_sites(kernel)


def _op_sites(f: Facts, op: str, kernels: tuple[str, ...]) -> list[tuple[str, int]]:
    return f.row_sites(op) + [site for n in kernels for site in f.metal_sites(n)]


def _yaml_col(d: DispatchEntry) -> int:
    return d.text.find(d.kernel) + 1


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
                locate=partial(_lines_of, m.path, tuple(r.line for r in regs)),
            )


# -- MPS005 / MPS006 ------------------------------------------------------------------------
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
                locate=partial(_lines_of, first.path, (first.line,)),
            )


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
                locate=partial(_lines_of, m.path, tuple(firsts)),
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


# -- MPS009 -------------------------------------------------------------------------------
@rule(
    "MPS009",
    "stale-mps-xfail",
    WARNING,
    "an xfail/skip entry in common_mps.py for an op whose every row now has a Metal kernel",
    """
Every device row of the op puts MPS on a shared stub that an operations/*.mm file registers
with a Metal kernel, yet mps_ops_modifier still lists the op in an xfail/skip dict. The
test now passes, and an expectedFailure that passes is reported as an unexpected success
(CI fails). Entries limited to dtypes are reported only when the Metal kernel registers
all of them.

Fix: delete the entry (or cut its dtype list down to the dtypes the kernel does not
cover); `mpsgen new-op` does this when it adds the kernel.
""",
)
def stale_xfail(f: Facts) -> Iterator[Finding]:
    path = f.index.common_mps_path
    if path is None:
        return
    ops = f.op_rows
    text = f.index.read(path)
    keys = set(_DICT_KEY.findall(text))
    wanted = {c for k in keys for c in _op_candidates(k)} & ops.keys()
    on_metal: dict[str, list[str]] = {}  # op -> Metal kernel names
    for op in wanted:
        names = _metal_names(f, ops[op])
        if names:
            on_metal[op] = names
    if not on_metal:
        return
    for entry in f.index.xfail_entries():
        op = next((c for c in _op_candidates(entry.key) if c in on_metal), None)
        if op is None:
            continue
        covered = {r.torch_input_dtype for n in on_metal[op] for r in f.registrations(n)}
        if entry.dtypes is not None and not set(entry.dtypes) <= covered:
            continue
        what = "every dtype" if entry.dtypes is None else ", ".join(entry.dtypes)
        yield Finding(
            path, entry.line, 0, "MPS009", WARNING,
            f'{entry.dict_name}["{entry.key}"] ({what}) is stale: every row of {op} now runs a Metal kernel ({listed(dict.fromkeys(on_metal[op]))})',
            symbols=(entry.key, op),
            locate=partial(_op_sites, f, op, tuple(dict.fromkeys(on_metal[op]))),
        )


def _metal_names(f: Facts, entries: list[NativeFunction]) -> list[str] | None:
    """Metal kernel names of an op whose every device row is on a Metal-backed stub."""
    names: list[str] = []
    device_rows = [e for e in entries if any(SHARED_KEYS & set(d.keys) or d.has_mps for d in e.dispatch)]
    if not device_rows:
        return None
    for e in device_rows:
        row_names = None
        for d in e.dispatch:
            if shared(d, e):
                stub = f.tie_stub(e, d.kernel)
                row_names = f.metal_kernel_names(stub) if stub else None
        if not row_names:
            return None
        names += row_names
    return names


_DICT_KEY = re.compile(r"""["']([\w.]+)["']\s*:""")


def _op_candidates(key: str) -> list[str]:
    out = [key]
    for prefix in ("special.", "linalg.", "fft."):
        if key.startswith(prefix):
            out.append(key.replace(".", "_"))
    if key.startswith("nn.functional."):
        out.append(key[len("nn.functional.") :])
    return out


# -- functor lints (MPS010-MPS013) -----------------------------------------------------------
def _functors(f: Facts):
    """(metal file, its functor structs) for the files that define any."""
    return f.functor_defs


_MIN_MAX = re.compile(r"((?:[\w]+\s*::\s*)*)\b(min|max)\s*\(")


@rule(
    "MPS010",
    "nan-dropping-min-max",
    WARNING,
    "a functor computes min/max on floats with a function that does not propagate NaN",
    """
torch.minimum/maximum (and clamp, and most ops built on a min or max) return NaN when an
input is NaN. Metal's `min`/`max` (what an unqualified call or `metal::min` picks for
floats) return the other operand instead, so the MPS result differs from CPU exactly on
NaN inputs, which the OpInfo tests feed. `c10::metal::min` and `c10::metal::max` propagate
NaN. Reported in overloads that take floating-point inputs; an integer-only overload may
use either.

Fix: call `c10::metal::min(a, b)` / `c10::metal::max(a, b)` (or `fmin`/`fmax` where
ignoring NaN is the op's meaning, as for torch.fmin/fmax).
""",
)
def nan_dropping_min_max(f: Facts) -> Iterator[Finding]:
    for m, defs in _functors(f):
        for d in defs:
            for o in d.overloads:
                if not o.accepts & {FLOAT, COMPLEX} or ("min" not in o.body and "max" not in o.body):
                    continue  # (_MIN_MAX has no literal to search from: it is tried at every offset)
                for c in _MIN_MAX.finditer(o.body):
                    qualifier = re.sub(r"\s+", "", c.group(1))
                    if qualifier.endswith("c10::metal::") or (qualifier and not qualifier.endswith("metal::") and qualifier != "::"):
                        continue  # c10::metal::min, or some other namespace's function
                    if not qualifier and o.body[: c.start()].rstrip().endswith(("::", ".", "->")):
                        continue  # a member: numeric_limits<T>::max(), x.max()
                    line = o.body_line + o.body.count("\n", 0, c.start())
                    yield Finding(
                        m.path, line, 0, "MPS010", WARNING,
                        f"{d.name}_functor calls {qualifier}{c.group(2)}() on floating-point inputs: NaN does not propagate (use c10::metal::{c.group(2)})",
                        symbols=(f"{d.name}_functor",),
                    )


_FAST_MATH = re.compile(r"\b(?:metal\s*::\s*)?fast\s*::\s*(\w+)")


@rule(
    "MPS011",
    "fast-math-in-functor",
    WARNING,
    "a functor uses metal::fast:: math",
    """
`metal::fast::` functions trade accuracy and the handling of denormals, infinities and NaN
for speed; the results then differ from CPU beyond the tolerances of the OpInfo tests, and
only on some inputs. Kernels that must match CPU use the default `metal::` functions or
`metal::precise::` (as upstream's unary kernels do for exp, log and friends).

Fix: call `precise::<fn>` (or the default `<fn>`) instead of `fast::<fn>`.
""",
)
def fast_math(f: Facts) -> Iterator[Finding]:
    for m, defs in _functors(f):
        for d in defs:
            for o in d.overloads:
                if "fast" not in o.body:
                    continue
                for c in _FAST_MATH.finditer(o.body):
                    line = o.body_line + o.body.count("\n", 0, c.start())
                    yield Finding(
                        m.path, line, 0, "MPS011", WARNING,
                        f"{d.name}_functor calls fast::{c.group(1)}(): results differ from CPU (use precise::{c.group(1)})",
                        symbols=(f"{d.name}_functor",),
                    )


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
    for m, defs in _functors(f):
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
                    locate=partial(_lines_of, m.path, (d.line,)),
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
    for m, defs in _functors(f):
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
                    locate=partial(_lines_of, m.path, (d.line,)),
                )


# -- MPS014 -------------------------------------------------------------------------------
@rule(
    "MPS014",
    "stale-aoti-c-shim",
    ERROR,
    "c_shim_mps.h does not declare what torchgen generates for the AOTInductor fallback ops",
    """
torchgen writes `torch/csrc/inductor/aoti_torch/generated/c_shim_mps.h` from
`torchgen/aoti/fallback_ops.py` and native_functions.yaml, and the build fails when the
checked-in header differs from what it generates. For each op of `inductor_fallback_ops`
whose row dispatches MPS, or delegates (`structured_delegate:`) to a structured out row that
does, torchgen declares `aoti_torch_mps_<op>[_<overload>]` (and `_v<N>` for each later
version of the entry, inside `#if TORCH_FEATURE_VERSION >= <since>` when the entry says
`since`); without an MPS kernel it falls back to the op's composite kernel
(CompositeExplicitAutograd, ...NonFunctional, CompositeImplicitAutograd, or no dispatch table
at all), and declares nothing for an op with neither, or whose schema has no C form (a
`Tensor[]` return, a `Dimname` argument). Reported: a declaration missing for such an op
(usually: MPS was just given to a fallback op), at the yaml line that gives it the kernel;
a declaration torchgen would not write (the op lost its MPS kernel, or left the list), or
one under another version guard, at the header line.

Fix: run `python torchgen/gen.py --update-aoti-c-shim` at the top of the checkout and commit
the header with the change (`mpsgen new-op` does this itself for the ops it adds).
""",
)
def stale_aoti_shim(f: Facts) -> Iterator[Finding]:
    from mpsgen.tree import aoti

    tree = f.index.tree
    if not (tree.exists(aoti.FALLBACK_OPS) and tree.exists(aoti.C_SHIM_MPS)):
        return
    fallback = aoti.read_fallback_ops(f.index.read(aoti.FALLBACK_OPS))
    if fallback is None:
        return
    header = aoti.C_SHIM_MPS
    declarations = aoti.read_declarations(f.index.read(header))
    declared = {d.name: d for d in declarations}
    owners: dict[str, tuple[aoti.Expected, str | None]] = {}
    for e in aoti.expected_shims(fallback, f.index.read(f.yaml)):
        for name, since in e.functions:
            owners[name] = (e, since)
        if not e.declared:
            continue
        for name, since in e.functions:
            d = declared.get(name)
            where = (f.yaml, e.site) if e.backend == "MPS" else (aoti.FALLBACK_OPS, e.op.line)
            sites = partial(_lines_at, ((f.yaml, e.site), (aoti.FALLBACK_OPS, e.op.line), (header, d.line if d else 0)))
            if d is None:
                yield Finding(
                    *where, 0, "MPS014", ERROR,
                    f"{e.op.key} ({aoti.FALLBACK_OPS}:{e.op.line}) {_runs_on(e)}, but {header} does not declare "
                    f"aoti_torch_mps_{name}: the build fails until `{aoti.REGENERATE}` adds it",
                    symbols=(e.op.key, f"aoti_torch_mps_{name}"),
                    locate=sites,
                )
            elif d.guard != since:
                yield Finding(
                    header, d.line, 0, "MPS014", ERROR,
                    f"aoti_torch_mps_{name} is declared {_guard(d.guard)}, but torchgen writes it {_guard(since)} "
                    f"({e.op.key} in {aoti.FALLBACK_OPS}:{e.op.line})",
                    symbols=(e.op.key, f"aoti_torch_mps_{name}"),
                    locate=sites,
                )
    whole = not any(aoti.shim_functions(op) is None and aoti.row_name(op.key) for op in fallback.values())
    for d in declarations:
        e, _since = owners.get(d.name, (None, None))
        if e is None:
            if whole:
                yield Finding(
                    header, d.line, 0, "MPS014", ERROR,
                    f"aoti_torch_mps_{d.name} is declared, but no op of inductor_fallback_ops ({aoti.FALLBACK_OPS}) "
                    "makes it: torchgen does not generate it",
                    symbols=(f"aoti_torch_mps_{d.name}",),
                )
            continue
        if e.declared is not False:
            continue
        if e.row is None:
            why = f"{e.op.key} is no op of {f.yaml}"
        elif e.backend is None:
            through = f", nor does {e.row.delegate}, which it delegates to," if e.row.delegate else ""
            why = f"{e.row.name} dispatches no MPS{through} and has no composite kernel"
        else:
            why = f"torchgen cannot write {e.row.name}'s schema in C"
        yield Finding(
            header, d.line, 0, "MPS014", ERROR,
            f"aoti_torch_mps_{d.name} is declared, but {why}: torchgen does not generate it "
            f"(`{aoti.REGENERATE}` removes it)",
            symbols=(e.op.key, f"aoti_torch_mps_{d.name}"),
            locate=partial(_lines_at, (((f.yaml, e.site),) if e.row else ()) + ((aoti.FALLBACK_OPS, e.op.line),)),
        )


def _lines_at(sites: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    return list(sites)


def _runs_on(e) -> str:
    """How the fallback op of ``e`` gets the kernel its MPS shim calls."""
    row = e.row
    if e.backend != "MPS":
        made = " (generated by its autogen:)" if e.generated else ""
        return f"has a {e.backend} kernel{made}, which torchgen's MPS shim calls"
    if "MPS" in row.keys:
        return f"has an MPS kernel (its row {row.name} dispatches MPS)"
    return f"has an MPS kernel (its row {row.name} delegates to {row.delegate}, which dispatches MPS)"


def _guard(since: str | None) -> str:
    return f"under `#if TORCH_FEATURE_VERSION >= {since}`" if since else "without a version guard"


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


# -- MPS016 -------------------------------------------------------------------------------
@rule(
    "MPS016",
    "interrupted-change",
    ERROR,
    "an mpsgen change to this tree was cut short (a kill or a power loss) while writing its files",
    """
mpsgen journals each change it applies (in the checkout's .git folder, or .mpsgen-journal.json
at its top without one) from before the first file is written until the last one is on disk.
A journal left behind means the process was killed or the machine lost power in between: some
files may hold the new content and others the old, a tree that may not build, and that the
other rules may not see as broken. A journal whose writer is still running (it holds the
lock mpsgen takes while writing) is a write in progress, not reported.

Fix: `mpsgen recover` lists each file's state; `mpsgen recover --resume` writes the rest of the
change, `mpsgen recover --abort` restores the files it had written.
""",
)
def interrupted_change(f: Facts) -> Iterator[Finding]:
    from mpsgen.tree import journal_path

    root = f.index.root
    if not os.path.exists(journal_path(root)):  # (the common case: a stat, no pathlib)
        return
    from pathlib import Path

    from mpsgen.errors import MpsgenError
    from mpsgen.journal import Journal, live_writer, recover_command

    if live_writer(root) is not None:  # a write in progress: its journal is no interrupted change
        return
    try:
        journal = Journal.find(Path(root))
    except MpsgenError as exc:
        yield Finding(".git", 1, 0, "MPS016", ERROR, str(exc))
        return
    if journal is None:
        return
    states = journal.states()
    paths = tuple(s.entry.path for s in states)
    written = sum(s.state == "written" for s in states)
    what = f"`mpsgen {journal.command}`" if journal.command else "an mpsgen change"
    said = {"written": "written", "pending": "not written yet", "changed": "changed since by someone else"}
    for s in states:
        yield Finding(
            s.entry.path, 1, 0, "MPS016", ERROR,
            f"this file is {said[s.state]} by {what}, which was cut short ({written} of {len(states)} file(s) "
            f"written): `{recover_command(root, '--resume')}` finishes it, `--abort` rolls it back",
            locate=lambda paths=paths: ((p, 1) for p in paths),
        )


# -- MPS017, MPS018: custom kernels' pipeline names --------------------------------------
class _Pipelines:
    """Both sides of every custom kernel, read once per run: the requests of each host file
    (None for a file with inline shaders) and the registration sites of every .metal file (the
    bundled library holds them all, so a host may use any file's), looked up by literal head
    and expanded into names only where a request could name them: linear in the tree."""

    def __init__(self, index: Index):
        from mpsgen.tree.pipelines import host_name_sites, pipeline_requests

        self.requests = {h.path: pipeline_requests(h.path, h.text) for h in index.host_files if h.path.endswith(".mm")}
        # (a tree whose host code asks for no pipeline by name has nothing to match: no site is read)
        asked = any(found for found in self.requests.values())
        self.sites_by_path = {m.path: host_name_sites(m.path, m.text) for m in index.metal_files} if asked else {}
        self._by_head: dict[str, list] = {}
        for sites in self.sites_by_path.values():
            for site in sites:
                self._by_head.setdefault(site.head, []).append(site)
        self._heads = sorted(self._by_head)
        # requests by their literal head ("" when they start with a hole or are not read)
        self._heads_of_requests: dict[str, list] = {}
        for found in self.requests.values():
            for r in found or ():
                self._heads_of_requests.setdefault(r.parts[0] or "", []).append(r)

    def registered(self, parts) -> bool:
        """Whether some .metal registers a name ``parts`` (a request) may be."""
        from bisect import bisect_left

        from mpsgen.tree.pipelines import may_match

        head = parts[0] or ""
        candidates = [s for k in range(len(head)) for s in self._by_head.get(head[:k], ())]  # heads it begins with
        for k in range(bisect_left(self._heads, head), len(self._heads)):  # heads that begin with it
            if not self._heads[k].startswith(head):
                break
            candidates += self._by_head[self._heads[k]]
        return any(may_match(parts, n.parts) for site in candidates for n in site.names())

    def names_in(self, path: str) -> list:
        return [n for site in self.sites_by_path.get(path, ()) for n in site.names()]

    def requests_of(self, name, own_host: str | None) -> list:
        """The requests that may ask for ``name``: those whose literal head begins it; one
        starting with a hole, or not read, counts only in ``name``'s own host file."""
        from mpsgen.tree.pipelines import may_match

        text = "".join(p or "" for p in name.parts) if name.parts[0] is not None else ""
        candidates = []
        for length in range(len(text) + 1):
            candidates += self._heads_of_requests.get(text[:length], [])
        if name.parts[0] is None:  # a pattern starting with a hole: any request may be it
            candidates = [r for rs in self._heads_of_requests.values() for r in rs]
        return [
            r for r in candidates
            if may_match(r.parts, name.parts) and (r.parts[0] is not None or r.path == own_host)
        ]


def _pipeline_sides(f: Facts) -> _Pipelines:
    if "pipelines" not in f.index._memo:
        f.index._memo["pipelines"] = _Pipelines(f.index)
    return f.index._memo["pipelines"]


@rule(
    "MPS017",
    "unregistered-pipeline",
    ERROR,
    "host code asks the shader library for a kernel name no .metal file registers (for a dtype it accepts)",
    """
A custom kernel's host code looks its pipeline up by name, usually built from the dtype:
`lib.getPipelineStateForFunc(fmt::format("pdist_forward_{}", scalarToMetalTypeString(t)))`.
The name must be one a .metal file registers with `[[host_name("pdist_forward_float")]]`
(through a per-dtype macro such as `REGISTER_PDIST_FORWARD_OP(float)`). A typo on either side,
or a dtype the host accepts that the shader never registers, compiles and links; it fails only
at run time on a Mac, when the library has no such function.

mpsgen reads names given as a literal, `fmt::format` with `{}` fields, `"x_" + ...`
concatenation, or a variable assigned one of these before the call; `{}` fields computed at
run time match any registered part. The dtypes a host accepts are read from the dtype
TORCH_CHECK new-kernel writes (`t.scalar_type() == kFloat || ...`). Files with their shaders
inline (`MetalShaderLibrary lib(R"...")`) are not checked.

Fix: make the host's name and the registration agree, or register the kernel for the dtype.
""",
)
def unregistered_pipeline(f: Facts) -> Iterator[Finding]:
    sides = _pipeline_sides(f)
    for path, found in sides.requests.items():
        for r in found or ():
            if r.parts == (None,):  # a name not read: nothing to say about it
                continue
            if not sides.registered(r.parts):
                yield Finding(
                    path, r.line, 0, "MPS017", ERROR,
                    f"asks the shader library for `{r.shown}`, which no kernels/*.metal registers with "
                    f"[[host_name(...)]]",
                    symbols=(r.shown,),
                )
                continue
            if r.dtype_hole < 0:
                continue
            for dtype in r.dtypes:
                parts = r.with_dtype(dtype)
                if not sides.registered(parts):
                    shown = "".join(p if p is not None else "{}" for p in parts)
                    yield Finding(
                        path, r.line, 0, "MPS017", ERROR,
                        f"accepts {dtype} (its dtype check) but no kernels/*.metal registers `{shown}`",
                        symbols=(shown,),
                    )


@rule(
    "MPS018",
    "unrequested-kernel",
    WARNING,
    "a .metal file registers a kernel name its host code never asks for",
    """
A `[[host_name("...")]]` that no host code asks for is a kernel nobody runs: usually the other
half of a typo between the host's pipeline name and the registration (MPS017 reports the
host's side), a kernel left behind when its host code changed, or a registration for a dtype
the host's dtype check refuses (`pdist_forward_int` when the host accepts float, half, bfloat).

Checked only for a kernels/X.metal whose operations/X.mm asks for pipelines by names mpsgen
reads; a name counts as asked for when any host file's request could produce it, or any
string literal of a host file begins it (names built at run time from a prefix).

Fix: correct the name on the side that is wrong, or remove the unused kernel.
""",
)
def unrequested_kernel(f: Facts) -> Iterator[Finding]:
    from mpsgen.tree.pipelines import may_match, string_literals

    sides = _pipeline_sides(f)
    literals: set[str] | None = None
    for m in f.index.metal_files:
        host = f.index.paired(m.path)
        if host is None or not sides.requests.get(host):
            continue
        for n in sides.names_in(m.path):
            matching = sides.requests_of(n, host)
            if matching:
                # asked for only through a dtype field whose dtype check refuses this one
                if None not in n.parts and all(r.dtype_hole >= 0 and r.dtypes for r in matching) and not any(
                    may_match(r.with_dtype(d), n.parts) for r in matching for d in r.dtypes
                ):
                    r = matching[0]
                    yield Finding(
                        m.path, n.line, 0, "MPS018", WARNING,
                        f"registers `{n.shown}`, but the host asking for `{r.shown}` ({r.path.rpartition('/')[2]}:{r.line}) "
                        f"accepts only {', '.join(r.dtypes)}: nothing runs it",
                        symbols=(n.shown,),
                    )
                continue
            if literals is None:
                literals = {s for h in f.index.host_files for s in string_literals(h.text)}
            head = n.parts[0] or ""
            if not head or any(head[:k] in literals for k in range(3, len(head) + 1)):
                continue
            yield Finding(
                m.path, n.line, 0, "MPS018", WARNING,
                f"registers `{n.shown}`, which no host code asks for (operations/*.mm's getPipelineStateForFunc names)",
                symbols=(n.shown,),
            )

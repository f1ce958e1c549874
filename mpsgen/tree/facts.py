"""The cross-file facts of a tree that ``check``'s rules and ``explain`` share: tables derived
from an :class:`~mpsgen.tree.index.Index` (which host files define which kernels, which stubs
have an MPS registration, which rows put MPS on a shared kernel, ...), each worked out on first
use, and the predicates on dispatch lines both read rows with (:func:`mps_only`,
:func:`shared`, :func:`op_of`). Nothing here prints or judges: the rules (``mpsgen.check.rules``)
decide what is a finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import cached_property, partial

from mpsgen.tree.index import Definition, Dispatch, Index, KernelUse, Registration
from mpsgen.tree.native_rows import Dispatch as DispatchEntry
from mpsgen.tree.native_rows import Row as NativeFunction
from mpsgen.tree.native_rows import op_name
from mpsgen.tree.resolver import StubResolver

SHARED_KEYS = frozenset({"CPU", "CUDA"})


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
    return op_name(entry.base)


class Facts:
    """Cross-file tables derived from an index, each computed on first use."""

    def __init__(self, index: Index):
        self.index = index
        self.yaml = index.yaml_path
        self._ties: dict[tuple[str, str], str | None] = {}
        self._tables: dict[str, object] = {}

    def table(self, name: str, make: Callable[[Index], object]):
        """A table a family of rules derives from the index for its own rules (the custom
        kernels' pipeline names of MPS017/MPS018): ``make(index)``, made once per run."""
        got = self._tables.get(name)
        if got is None:
            got = self._tables[name] = make(self.index)
        return got

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
        own = lambda: StubResolver(index.stubs, index.cpp_files, partial(index.read, self.yaml))  # noqa: E731
        # (an index with an overlay reads another tree than the tree's own resolver did)
        return own() if index.overlay else StubResolver.of(index.tree, own)

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

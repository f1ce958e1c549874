"""Rows of native_functions.yaml whose MPS dispatch is a kernel of its own (``MPS: acosh_out_mps``)
rather than the CPU/CUDA one: a fact of the yaml that ``op_facts.schema_rows`` (for a migration),
``migrate`` and ``reduction_migrate`` share."""

from __future__ import annotations

from dataclasses import dataclass

from mpsgen.tree import NATIVE_FUNCTIONS
from mpsgen.tree.native_yaml import DispatchEntry, NativeFunction


@dataclass(frozen=True)
class LegacyRow:
    """A row whose MPS dispatch is its own line, not the CPU/CUDA kernel."""

    entry: NativeFunction
    mps: DispatchEntry
    problem: str | None  # why MPS cannot simply join a shared `CPU, CUDA: <kernel>` line

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def migratable(self) -> bool:
        return self.problem is None


def _row_problem(entry: NativeFunction, mps: DispatchEntry) -> str | None:
    where = f"{NATIVE_FUNCTIONS}:{mps.line}"
    if mps.keys != ("MPS",):
        others = ", ".join(k for k in mps.keys if k != "MPS")
        return f"its MPS line `{mps.text.strip()}` ({where}) also names {others}; split it by hand first"
    shared = entry.shared_entry
    if shared is not None:
        return None
    cpu = [d for d in entry.dispatch if "CPU" in d.keys]
    cuda = [d for d in entry.dispatch if "CUDA" in d.keys]
    if cpu and cuda and cpu[0].kernel == cuda[0].kernel:
        return None  # `MPS: <x>_mps` becomes `MPS: <the kernel CPU and CUDA share>`
    if cpu and cuda:
        return f"CPU and CUDA use different kernels ({cpu[0].kernel}, {cuda[0].kernel}): no shared kernel for MPS to join"
    only = "CPU" if cpu else "CUDA"
    return f"only {only} has a kernel here: no shared CPU/CUDA kernel for MPS to join"


def legacy_rows(rows: list[NativeFunction]) -> list[LegacyRow]:
    """Rows with an MPS line of its own whose kernel is not the CPU/CUDA one."""
    found = []
    for e in rows:
        host = {d.kernel for d in e.dispatch if "CPU" in d.keys or "CUDA" in d.keys}
        if not host:
            continue
        for d in e.dispatch:
            if d.has_mps and not d.shared_cpu_cuda and d.kernel not in host:
                found.append(LegacyRow(e, d, _row_problem(e, d)))
                break
    return found

"""Rules on PyTorch's MPS test lists (common_mps.py): an xfail/skip entry left behind for an op
whose every row now runs a Metal kernel (MPS009).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial

from mpsgen.check.model import WARNING, Finding, listed, rule
from mpsgen.tree.facts import SHARED_KEYS, Facts, shared
from mpsgen.tree.native_rows import Row as NativeFunction


# -- where a finding's symbols are (bound with partial: computed when asked) --
def _op_sites(f: Facts, op: str, kernels: tuple[str, ...]) -> list[tuple[str, int]]:
    return f.row_sites(op) + [site for n in kernels for site in f.metal_sites(n)]


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

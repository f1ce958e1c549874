"""Rules on custom (non-TensorIterator) kernels' pipeline names: host code asking the shader
library for a name no .metal file registers (MPS017), and a registered name no host code asks
for (MPS018). The names on both sides are read by :mod:`mpsgen.tree.pipelines`.
"""

from __future__ import annotations

from collections.abc import Iterator

from mpsgen.check.model import ERROR, WARNING, Finding, rule
from mpsgen.tree.facts import Facts
from mpsgen.tree.pipeline_sides import pipeline_sides
from mpsgen.tree.pipelines import may_match, string_literals


# -- MPS017, MPS018: custom kernels' pipeline names --------------------------------------
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
    sides = pipeline_sides(f)
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
    sides = pipeline_sides(f)
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

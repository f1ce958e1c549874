"""Rules on a functor's math where Metal's functions differ from CPU's results: min/max that
drop NaN (MPS010) and ``metal::fast::`` functions (MPS011). Read in the functor structs
written out in .metal files (:attr:`~mpsgen.tree.facts.Facts.functor_defs`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from mpsgen.check.model import WARNING, Finding, rule
from mpsgen.tree.facts import Facts
from mpsgen.tree.functors import COMPLEX, FLOAT

# -- MPS010 -------------------------------------------------------------------------------
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
    for m, defs in f.functor_defs:
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


# -- MPS011 -------------------------------------------------------------------------------
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
    for m, defs in f.functor_defs:
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

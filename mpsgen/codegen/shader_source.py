"""What ``torch.mps.compile_shader`` compiles for a generated test: a ``.metal`` text as a change
writes it, its params header inlined. compile_shader resolves ``#include <c10/metal/...>`` from
the installed torch's headers itself; a kernel's own params header (``kernels/<stem>.h``) is in
no installed torch, so its struct takes the include's place."""

from __future__ import annotations

import math

COMMON = "#include <c10/metal/common.h>"


def with_params_inlined(metal_text: str, header_include: str, struct: str) -> str:
    """``metal_text`` with ``#include <header_include>`` replaced by c10/metal/common.h (which
    the struct's ``::c10::metal::array`` needs) and ``struct``."""
    line = f"#include <{header_include}>"
    if line not in metal_text:
        raise ValueError(f"{line} is not in the kernel text")
    return metal_text.replace(line, f"{COMMON}\n\n{struct}\n", 1)


# struct module format of each Metal field type of a params struct (natural alignment)
STRUCT_CODES = {"float": "f", "long": "q", "bool": "?"}


def py_literal(value: object) -> str:
    """``value`` (lists, dicts, strings, numbers, booleans) as Python source."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    if isinstance(value, float) and math.isinf(value):
        return 'float("inf")' if value > 0 else 'float("-inf")'
    if isinstance(value, float) and math.isnan(value):
        return 'float("nan")'
    return repr(value)

"""Edit (or start) a ``kernels/*.h`` header shared by a ``.metal`` file and its ``.mm``: add
the params struct of a params-kind op after the structs the header has."""

from __future__ import annotations

import re

from mpsgen.core.errors import Refused


def new_header(struct_text: str) -> str:
    """A header holding only ``struct_text``, in the shape of upstream's kernels/*.h (plain
    templated structs, no includes, no namespace)."""
    return f"#pragma once\n\n{struct_text}\n"


def add_struct(text: str, struct_text: str, struct: str, relpath: str) -> str:
    """``text`` with ``struct_text`` after its last top-level ``};`` (before a closing
    ``#else``/``#endif`` guard when there is no struct yet, else at the end). A struct of the
    same name is kept when it is the same text, refused when it differs."""
    found = re.search(rf"^\s*(?:template\s*<[^>]*>\s*)?struct\s+{re.escape(struct)}\b", text, re.M)
    if found is not None:
        if struct_text.strip() in text:
            return text
        line = text.count("\n", 0, found.start()) + 1
        raise Refused(
            f"{relpath}:{line} already defines struct {struct}, with other fields than the op's stub needs; "
            "mpsgen does not change a struct other code may use.",
            hint="Rename or remove that struct by hand, or give the op's kernel another name.",
        )
    lines = text.split("\n")
    ends = [i for i, ln in enumerate(lines) if ln.rstrip() == "};"]
    if ends:
        at = ends[-1] + 1
    else:
        guards = [i for i, ln in enumerate(lines) if re.match(r"#\s*(else|endif)\b", ln)]
        at = guards[-1] if guards else len(lines) - (1 if lines and lines[-1] == "" else 0)
    block = ["", *struct_text.split("\n")]
    return "\n".join(lines[:at] + block + lines[at:])

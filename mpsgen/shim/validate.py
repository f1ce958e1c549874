"""``mpsgen spec validate``'s check of one spec file, whatever its kind: its keys with their
locations, then its code compiled against mpsgen's Metal model (an op's functor through the
compile gate, a kernel's body with the op's schema as the installed torch gives it, a reduction's
kernel written against the installed torch's ``c10/metal/reduction_utils.h``).

The kernel and reduction machinery (and torch) are imported only for a spec of that kind: a
run over op specs does not pay for them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.codegen.reduction import kernel_source, read_helpers
from mpsgen.core.errors import MpsgenError
from mpsgen.shim.gate import NO_COMPILER, gate_spec
from mpsgen.shim.kernel_trial import check_kernel_body, torch_signature
from mpsgen.shim.reduction_trial import build, installed_header
from mpsgen.shim.toolchain import compiler
from mpsgen.shim.trial import import_torch
from mpsgen.spec.load import file_kind, parse, shipped_spec_path


@dataclass(frozen=True)
class SpecCheck:
    """The problems of one spec file (``file:line:col: what``), and a note on what was not
    checked here; ``note_once``: the note is about this machine, worth saying once a run."""

    problems: list[str] = field(default_factory=list)
    note: str | None = None
    note_once: bool = False


def check_spec_file(path: Path) -> SpecCheck:
    """Every problem of the spec file ``path`` (an op spec also by the name of one mpsgen ships:
    ``acosh``, ``specs/acosh.yaml``)."""
    kind = file_kind(path)
    if kind == "kernel":
        return _kernel_check(path)
    if kind == "reduction":
        return _reduction_check(path)
    spec, problems = parse(shipped_spec_path(path), display=str(path))
    shown = [f"{loc}: {msg}" for loc, msg in problems]
    if spec is None:
        return SpecCheck(shown)
    gate = gate_spec(spec)  # the functor compiles against mpsgen's Metal model
    note = f"note: {NO_COMPILER}" if gate.compiler is None else None
    return SpecCheck(shown + gate.problems, note, note_once=True)


def _kernel_check(path: Path) -> SpecCheck:
    """A kernel spec's problems: its keys, and its body compiled against mpsgen's Metal model
    with the op's schema as torch gives it (new-kernel compiles it with the tree's)."""
    spec, problems = parse(path, display=str(path))
    if problems:
        return SpecCheck([f"{loc}: {msg}" for loc, msg in problems])
    torch = import_torch()
    if torch is None:
        return SpecCheck(note=f"note: {path}: without torch the body is not compiled here (new-kernel compiles it with the tree's schema).")
    missing = [f"{path}: try_inputs names aten::{op}, which torch {torch.__version__} does not have."
               for op, _args, _which in spec.try_inputs.values() if getattr(torch.ops.aten, op, None) is None]
    try:
        return SpecCheck(missing + check_kernel_body(spec, torch_signature(torch, spec)))
    except MpsgenError as exc:  # (its message names the spec file when it is about it)
        return SpecCheck(missing + [str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}"])


def _reduction_check(path: Path) -> SpecCheck:
    """A reduction spec's problems: its keys, and its kernel written against the installed
    torch's c10/metal/reduction_utils.h and compiled against mpsgen's Metal model."""
    spec, problems = parse(path, display=str(path))
    if problems:
        return SpecCheck([f"{loc}: {msg}" for loc, msg in problems])
    torch, cxx = import_torch(), compiler()
    if torch is None or cxx is None:
        return SpecCheck(note=f"note: {path}: without torch and a C++ compiler its kernel is not compiled here (mpsgen try compiles it).")
    try:
        header = installed_header(torch)
        text = header.read_text(encoding="utf-8")
        build(spec, text, kernel_source(spec, read_helpers(text), str(header)), cxx)
    except MpsgenError as exc:
        return SpecCheck([str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}"])
    return SpecCheck()

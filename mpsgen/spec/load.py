"""A spec file of any kind read and parsed by its ``kind`` (:func:`load`: an op, a custom kernel
or a reduction), and the specs mpsgen ships (``specs/``) that a command falls back on: the op's,
the kernel's, the reduction serving an op. The spec a command line's flags make is
:mod:`mpsgen.spec.flags`'s. Returns specs, or raises :class:`~mpsgen.core.errors.MpsgenError`
naming the file, line or flag; prints nothing."""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path

from mpsgen.core.errors import BadInput, MpsgenError, SpecErrors
from mpsgen.core.resources import resource_dir
from mpsgen.spec.kernel import FILE_STEM, KERNEL_DTYPES, KernelSpec, is_kernel_spec_text, load_kernel_spec, parse_kernel_spec_text
from mpsgen.spec.op import OpSpec, check_name, parse_spec_text, read_spec_file
from mpsgen.spec.reduction import (
    ReductionSpec,
    is_reduction_spec_text,
    parse_reduction_spec_text,
    shipped_reduction_spec,
)
from mpsgen.tree.source import read_bounded

SPEC_LIMIT = 1024 * 1024  # a spec file is read whole, up to 1 MB


# -- a spec file of any kind ----------------------------------------------------------------------


def _text_head(path: Path) -> str | None:
    """A ``.yaml``/``.yml`` file's text, to tell its kind by; None for anything else or a file
    that cannot be read (the parse that follows says why)."""
    try:
        if not (path.is_file() and path.suffix in (".yaml", ".yml")):
            return None
        return read_bounded(path, "spec file", limit=SPEC_LIMIT).decode("utf-8", "replace")
    except (OSError, MpsgenError):
        return None


def _kind_of_text(path: Path, text: str | None) -> str:
    if text is None or path.suffix not in (".yaml", ".yml"):
        return "op"
    if is_kernel_spec_text(text):
        return "kernel"
    if is_reduction_spec_text(text):
        return "reduction"
    return "op"


def file_kind(path: Path) -> str:
    """``kernel``, ``reduction`` or ``op``: the spec a ``.yaml`` file holds, by its top-level
    ``kind`` (an op spec's kind is its arity: unary, binary, ...); ``op`` for any other file."""
    return _kind_of_text(path, _text_head(path))


def is_kernel_file(path: Path) -> bool:
    """Whether ``path`` is a kernel spec file (``kind: kernel``)."""
    return file_kind(path) == "kernel"


_PARSERS = {"kernel": parse_kernel_spec_text, "reduction": parse_reduction_spec_text, "op": parse_spec_text}


def parse(path: Path | str, *, display: str | None = None) -> tuple[OpSpec | KernelSpec | ReductionSpec | None, list]:
    """(spec, problems) of one spec file of any kind (:func:`file_kind`), each problem with
    its location."""
    shown = display or str(path)
    text, problems = read_spec_file(Path(path), shown)
    if text is None:
        return None, problems
    return _PARSERS[_kind_of_text(Path(path), text)](text, shown)


def load(path: Path | str, *, display: str | None = None) -> OpSpec | KernelSpec | ReductionSpec:
    """One spec file of any kind, valid; raise SpecErrors listing every problem."""
    spec, problems = parse(path, display=display)
    if problems:
        raise SpecErrors(problems)
    assert spec is not None
    return spec


# -- the specs mpsgen ships -----------------------------------------------------------------------


def shipped_spec_path(spec_file: Path) -> Path:
    """``--spec``: the file as given; when it does not exist and names ``specs/<op>.yaml`` (or
    ``<op>.yaml``, or ``<op>``), the spec mpsgen ships under that name, so README commands work
    from a PyTorch checkout."""
    if spec_file.exists() or len(spec_file.parts) > 2 or (len(spec_file.parts) == 2 and spec_file.parts[0] != "specs"):
        return spec_file
    name = spec_file.name if spec_file.suffix == ".yaml" else f"{spec_file.name}.yaml"
    shipped = resource_dir("specs") / name
    return shipped if shipped.is_file() else spec_file


def shipped_op_spec(op: str) -> Path | None:
    """``specs/<op>.yaml``, when mpsgen ships it."""
    shipped = resource_dir("specs") / f"{op}.yaml"
    return shipped if shipped.is_file() else None


def reduction_spec_path(target: str, path: Path) -> Path | None:
    """The reduction spec ``try`` runs: a spec file of ``kind: reduction``, or the shipped one
    serving the op (``specs/reductions/``: prod; var, std, var_mean, std_mean)."""
    if path.is_file() and path.suffix in (".yaml", ".yml"):
        text = read_bounded(path, "spec file", limit=SPEC_LIMIT).decode("utf-8", "replace")
        return path if is_reduction_spec_text(text) else None
    if not path.exists() and check_name(target, "OP") is None:
        return shipped_reduction_spec(target)
    return None


def _did_you_mean(name: str, folder: str = "") -> str | None:
    """"Did you mean X?" for the spec mpsgen ships (under ``specs/<folder>``) closest to ``name``."""
    names = sorted(p.stem for p in (resource_dir("specs") / folder).glob("*.yaml") if not p.stem.startswith("README"))
    near = difflib.get_close_matches(name, names, n=1)
    return f"Did you mean {near[0]}?" if near else None


def try_spec_path(target: str) -> Path:
    """The spec file ``mpsgen try TARGET`` runs: a spec file by that path, else the one mpsgen
    ships for the op (a kernel spec, a reduction spec serving it, or ``specs/<op>.yaml``)."""
    path = Path(target)
    kernel_spec = resource_dir("specs") / "kernels" / f"{target}.yaml"
    if not path.exists() and check_name(target, "OP") is None and kernel_spec.is_file():
        path = kernel_spec
    if is_kernel_file(path):
        return path
    reduction = reduction_spec_path(target, path)
    if reduction is not None:
        return reduction
    if not path.exists() and check_name(target, "OP") is None:
        path = resource_dir("specs") / f"{target}.yaml"
        if not path.is_file():
            raise BadInput(
                f"{target}: no spec file by that name, and mpsgen ships no specs/{target}.yaml.",
                hint=_did_you_mean(target) or _did_you_mean(target, "kernels"),
            )
    return shipped_spec_path(path)


# -- custom kernels -------------------------------------------------------------------------------


def kernel_spec_for(op: str | None, spec_file: Path | None, file: str | None, dtypes: str | None) -> KernelSpec:
    """The kernel spec of ``new-kernel OP``: the given file, else the one mpsgen ships; --file
    and --dtypes override it."""
    if op is not None and (why := check_name(op, "OP")):
        raise BadInput(why)
    if spec_file is None:
        shipped = resource_dir("specs") / "kernels" / f"{op}.yaml"
        if not shipped.is_file():
            near = _did_you_mean(op, "kernels")
            raise BadInput(
                f"new-kernel {op}: no --spec given and mpsgen ships no kernel spec for {op}. "
                + (f"{near} " if near else "")
                + "The kernel body is the spec's: copy specs/kernels/_pdist_forward.yaml (explained in "
                f"specs/kernels/README.md), write the body of {op}'s kernel, then run "
                f"`mpsgen new-kernel {op} --spec YOUR.yaml --dry-run`."
            )
        spec_file = shipped
    spec = load_kernel_spec(spec_file, display=str(spec_file))
    if op is not None and spec.name != op:
        raise BadInput(f"{spec_file}: the spec is for {spec.name}, not {op}; give the op the spec names, or another --spec.")
    return kernel_overrides(spec, file, dtypes)


def kernel_overrides(spec: KernelSpec, file: str | None, dtypes: str | None) -> KernelSpec:
    """``spec`` with the files' stem of ``--file`` and the dtypes of ``--dtypes`` (comma-separated)."""
    if file is not None:
        if not FILE_STEM.match(file):
            raise BadInput(f"--file {file!r}: give a file stem like Distance (CamelCase letters and digits, no path or suffix).")
        spec = dataclasses.replace(spec, file=file)
    if dtypes is not None:
        torch_names = {"float32": "float", "float16": "half", "bfloat16": "bfloat"}
        wanted = [torch_names.get(d.strip().replace("torch.", ""), d.strip()) for d in dtypes.split(",") if d.strip()]
        bad = [d for d in wanted if d not in KERNEL_DTYPES]
        if bad or not wanted:
            raise BadInput(f"--dtypes {dtypes!r}: a custom kernel registers {', '.join(KERNEL_DTYPES)}; give some of them, comma-separated.")
        spec = dataclasses.replace(spec, dtypes=tuple(d for d in KERNEL_DTYPES if d in wanted))
    return spec

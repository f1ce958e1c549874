"""The spec of a ``new-op`` or ``migrate-from-mpsgraph`` command line (:func:`build_spec`): its
flags alone, with the kind and dtypes the tree says where no flag gives them, or the flags beside
a spec file (:func:`spec_with_flags`); and the reduction spec a migration falls back on. Returns
specs, or raises :class:`~mpsgen.core.errors.MpsgenError` naming the flag or file; prints nothing."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from mpsgen.core.errors import BadInput
from mpsgen.spec.load import SPEC_LIMIT, shipped_op_spec, shipped_spec_path
from mpsgen.spec.op import KINDS, FunctorSource, OpSpec, check_dtype_groups, check_name, load_spec, spec_problems
from mpsgen.spec.reduction import shipped_reduction_spec
from mpsgen.tree import PytorchTree
from mpsgen.tree.op_facts import kind_and_dtypes_from_tree, kind_flag
from mpsgen.tree.source import read_bounded


@dataclasses.dataclass(frozen=True)
class SpecFlags:
    """What ``new-op`` and ``migrate-from-mpsgraph`` were told about the op's spec."""

    op: str
    unary: bool = False
    binary: bool = False
    kind: str | None = None
    int2float: bool = False
    integer: bool = False
    integer_no_bool: bool = False
    complex_: bool = False
    opmath: bool = False
    expr: str | None = None
    functor_file: Path | None = None
    spec_file: Path | None = None
    stub: str | None = None
    rows: list[str] | None = None

    @property
    def kind_or_dtypes(self) -> bool:
        """A kind or dtype flag was given (an elementwise op's)."""
        return bool(self.unary or self.binary or self.kind or self.int2float or self.integer or self.integer_no_bool or self.complex_ or self.opmath)


def migration_reduction(flags: SpecFlags, partial: bool) -> Path | None:
    """The shipped reduction spec serving ``migrate-from-mpsgraph OP`` (prod; var, std,
    var_mean, std_mean) when the command line asks for nothing of an elementwise op: no
    --spec, kind, dtype, functor, --stub, --row or --partial, and no specs/<op>.yaml."""
    if flags.spec_file is not None or flags.kind_or_dtypes or check_name(flags.op, "op name"):
        return None
    if shipped_op_spec(flags.op) is not None:
        return None
    if flags.rows or partial or flags.expr is not None or flags.functor_file is not None or flags.stub is not None:
        return None
    return shipped_reduction_spec(flags.op)


def build_spec(flags: SpecFlags, *, root: Path | None = None, migrate: bool = False) -> tuple[OpSpec, list[str]]:
    """The spec of this run and notes on how it was chosen: the ``--spec`` file, or the spec
    mpsgen ships for the op when no functor is typed (--expr, --functor-file), with the flags
    checked against it (:func:`spec_with_flags`); else the flags, with the kind read from the
    rows' schemas and the dtype groups from the op's OpInfo where no flag gives them; checked
    once by :func:`mpsgen.spec.op.spec_problems`, however it was assembled."""
    op, kind, stub, rows = flags.op, flags.kind, flags.stub, flags.rows
    if why := check_name(op, "op name"):
        raise BadInput(why, hint="Give the aten op name, e.g. `mpsgen new-op heaviside --binary`.")
    chosen = [k for k, on in (("unary", flags.unary), ("binary", flags.binary)) if on] + ([kind] if kind else [])
    if len(chosen) > 1:
        raise BadInput(f"--unary, --binary and --kind are mutually exclusive (got {', '.join('--' + c for c in chosen)}).")
    if kind and kind not in KINDS[2:]:
        raise BadInput(f"--kind {kind}: not a kind mpsgen writes; use --unary, --binary or --kind {'|'.join(KINDS[2:])}.")
    notes: list[str] = []
    if flags.expr is not None and flags.functor_file is not None:
        raise BadInput("--expr and --functor-file are mutually exclusive: give the functor one way.")
    groups = tuple(g for g, on in (
        ("int2float", flags.int2float), ("integer", flags.integer), ("integer_no_bool", flags.integer_no_bool),
        ("complex", flags.complex_), ("opmath", flags.opmath),
    ) if on)

    functor: FunctorSource | None = None
    if flags.expr is not None:
        functor = FunctorSource(expr=flags.expr, origin="--expr")
    elif flags.functor_file is not None:
        try:
            body = read_bounded(flags.functor_file, "--functor-file", limit=SPEC_LIMIT).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--functor-file {flags.functor_file}: cannot read it ({exc}).") from None
        functor = FunctorSource(body=body, origin=f"--functor-file {flags.functor_file}", line=1)

    spec_file = flags.spec_file
    if spec_file is None and functor is None and check_name(op, "op name") is None:
        # no functor of one's own: the spec mpsgen ships for the op, if any, is the spec of the
        # run (kind, dtypes and functor), the kind and dtype flags checked against it
        spec_file = shipped_op_spec(op)
    if spec_file is not None:
        spec_file = shipped_spec_path(spec_file)
        base = load_spec(spec_file)
        if base.name != op:
            raise BadInput(f"--spec {spec_file} describes {base.name!r}, not {op!r}.")
        spec, said = spec_with_flags(base, _spec_shown(spec_file, op), chosen[0] if chosen else None, groups)
        notes += said
        spec = dataclasses.replace(spec, stub=stub or base.stub, rows=tuple(rows) if rows else base.rows, functor=functor or base.functor)
        origin = f"--spec {spec_file} with the flags given"
    else:
        def flags_spec(kind: str, groups: tuple[str, ...]) -> OpSpec:
            return OpSpec(
                name=op, kind=kind, functor=functor or FunctorSource(), dtypes=groups, stub=stub or "", rows=tuple(rows) if rows else None
            )

        origin = "the flags"
        if chosen and (problems := spec_problems(flags_spec(chosen[0], groups))):
            raise BadInput(f"{origin}: " + " ".join(problems))  # before the tree is read
        # the kind from the rows' schemas (a kind flag is checked against them), the dtypes from the OpInfo
        found, found_groups, how = kind_and_dtypes_from_tree(
            PytorchTree.locate(root), op, migrate=migrate, kind=chosen[0] if chosen else None,
            flag=kind_flag(chosen[0]) if chosen else "", dtypes=not groups,
        )
        if not chosen:
            notes.append(f"kind {found} ({kind_flag(found)}): read from the rows' schema")
        if not groups:
            groups = found_groups
            notes.append(how)
        spec = flags_spec(found, groups)
    problems = spec_problems(spec)
    if problems:
        raise BadInput(f"{origin}: " + " ".join(problems))
    return spec, notes


# the dtype groups a flag types (float is always registered; bool_out is the functor's own)
_FLAG_GROUPS = {"int2float": "--int2float", "integer": "--integer", "integer_no_bool": "--integer-no-bool", "complex": "--complex", "opmath": "--opmath"}


def _spec_shown(spec_file: Path, op: str) -> str:
    """How an error names the spec of a run: the shipped one by its place in mpsgen."""
    shipped = shipped_op_spec(op)
    with contextlib.suppress(OSError):
        if shipped is not None and spec_file.resolve() == shipped.resolve():
            return f"specs/{op}.yaml (the spec mpsgen ships for {op})"
    return str(spec_file)


def spec_with_flags(base: OpSpec, shown: str, kind: str | None, groups: tuple[str, ...]) -> tuple[OpSpec, list[str]]:
    """``base`` with the kind and dtype flags typed beside it, and notes on what they did: a
    kind flag must say the spec's kind; dtype flags choose among the spec's dtype groups (its
    functor is written for those only), and a group the spec does not list is refused, naming
    the flag and the spec; without dtype flags the spec's dtypes are used."""
    if kind is not None and kind != base.kind:
        raise BadInput(
            f"{kind_flag(kind)} contradicts {shown}: its kind is {base.kind} ({kind_flag(base.kind)}). Leave the kind flag out "
            f"to use the spec, or give a functor of your own for that kind (--expr or --functor-file) or another --spec; nothing written."
        )
    notes = []
    if kind is not None:
        notes.append(f"kind {base.kind} ({kind_flag(kind)}): {shown} says the same")
    if not groups:
        return base, notes
    if problems := check_dtype_groups(base.kind, list(groups)):
        raise BadInput("the flags: " + " ".join(problems))
    foreign = [g for g in groups if g not in base.dtypes]
    if foreign:
        own = [_FLAG_GROUPS[g] for g in base.dtypes if g in _FLAG_GROUPS]
        fewer = f", or give only flags of its groups ({', '.join(own)}) to register fewer" if own else ""
        raise BadInput(
            f"{', '.join(_FLAG_GROUPS[g] for g in foreign)} contradicts {shown}: it registers dtypes {', '.join(base.dtypes)}, "
            f"and its functor is written for those only. Leave the dtype flags out to use the spec's dtypes{fewer}; for other "
            f"dtypes give a functor of your own (--expr or --functor-file) or another --spec. Nothing written."
        )
    dtypes = tuple(g for g in base.dtypes if g in groups or g not in _FLAG_GROUPS)
    notes.append(f"dtypes {', '.join(dtypes)}: the dtype flags given, out of {shown}'s {', '.join(base.dtypes)}")
    return dataclasses.replace(base, dtypes=dtypes), notes

"""The commands that change a tree for an op: ``new-op`` and ``migrate-from-mpsgraph`` (one
flow, :func:`plan_and_report`), ``new-kernel``; and ``spec validate``. Each reads its flags,
gets its spec from :mod:`mpsgen.spec.load`, calls its planner and shows or writes the change
(:mod:`mpsgen.cli.change`).

The planners, the spec machinery and what they import (yaml, libcst, the compile gate) are
imported inside the commands, for start-up speed: ``--help`` and the other commands do not
pay for them."""

from __future__ import annotations

import contextlib
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import typer

from mpsgen.cli.change import applied, report
from mpsgen.cli.options import (
    BinaryOpt,
    ComplexOpt,
    DryRunOpt,
    ExprOpt,
    ForceOpt,
    FunctorFileOpt,
    Int2FloatOpt,
    IntegerNoBoolOpt,
    IntegerOpt,
    KindOpt,
    OpmathOpt,
    OpSpecOpt,
    PatchOpt,
    PrOpt,
    RootOption,
    StrictOpt,
    StubOpt,
    UnaryOpt,
    WithBenchOpt,
    WithTestOpt,
)
from mpsgen.cli.output import Text, busy, err, fail, out, write_out
from mpsgen.core.errors import BadInput, MpsgenError
from mpsgen.tree import PytorchTree

if TYPE_CHECKING:
    from mpsgen.patch.changeset import Changeset

SideFile = tuple[Path, str, bool, str]  # (path, text, whether it may replace a file there, what to say once written)


class Delivery:
    """How a change command delivers its change: --dry-run, --patch, --strict, --force. (Plain
    classes here: a dataclass costs the start-up of every command a millisecond.)"""

    def __init__(self, dry_run: bool = False, patch: Optional[Path] = None, strict: bool = False, force: bool = False) -> None:
        if dry_run and patch is not None:
            raise BadInput("--dry-run and --patch are mutually exclusive.")
        self.dry_run, self.patch, self.strict, self.force = dry_run, patch, strict, force


class Companions:
    """What a change command writes or prints beside the change: --with-test, --with-bench,
    --pr-description."""

    def __init__(self, with_test: bool = False, with_bench: bool = False, pr: bool = False) -> None:
        self.with_test, self.with_bench, self.pr = with_test, with_bench, pr

    @property
    def asked(self) -> list[str]:
        return [f for f, on in (("--with-test", self.with_test), ("--with-bench", self.with_bench), ("--pr-description", self.pr)) if on]

    @property
    def given(self) -> frozenset[str]:
        return frozenset(self.asked)


# -- the companions of new-op and migrate-from-mpsgraph ------------------------------------------


def companion_files(spec, command: str, companions: Companions) -> list[SideFile]:
    """The side files to write with the change, checked before anything is written."""
    files = []
    if companions.with_test:
        from mpsgen.plan.companions import shader_test

        name, text = shader_test(spec, command)
        files.append(side_file("--with-test", name, text, f"on a Mac, `python -m pytest {name} -v` checks the functor before you build"))
    if companions.with_bench:
        from mpsgen.plan.companions import bench_files, bench_script

        name, text = bench_script(spec, command)
        _script, before, after = bench_files(spec.name)
        files.append(side_file("--with-bench", name, text, f"run it on a Mac before and after the change (`python {name} --help` "
                               f"says how); `python {name} --compare {before} {after}` prints the table for the PR"))
    return files


def reduction_side_files(tree: PytorchTree, spec, op: str, changeset: Changeset, command: str, companions: Companions) -> tuple[list[SideFile], str | None]:
    """A reduction's side files and PR text: made from the planned change (the test embeds the
    kernel as the change writes it), before anything is written."""
    from mpsgen.plan.reduction_companions import companion_files as reduction_files, reduction_pr_description

    files = [side_file(flag, name, text, said) for flag, name, text, said in
             reduction_files(tree, spec, changeset, command, with_test=companions.with_test, with_bench=companions.with_bench)]
    test = next((path.name for path, *_rest in files if path.name.startswith("test_")), None)
    pr_text = reduction_pr_description(tree, spec, op, changeset, test=test, bench=companions.with_bench) if companions.pr else None
    return files, pr_text


def write_companions(
    spec, changeset: Changeset, command: str, files: list[SideFile], pr: bool, delivery: Delivery, pr_text: str | None = None
) -> None:
    """After the change (``report`` wrote the side files with it): what a dry run would have
    written (or --patch did not), and the PR description (``pr_text``, or the op's)."""
    shown = delivery.dry_run or delivery.patch is not None
    for path, _text, _replace, _said in files:
        if delivery.dry_run:
            err.print(f"dry run: would write {path}")
        elif delivery.patch is not None:
            err.print(f"not written with --patch: {path} (run without --patch to write it with the change)")
    if pr:
        if pr_text is None:
            from mpsgen.plan.companions import bench_files, pr_description

            bench = any(path.name == bench_files(spec.name)[0] for path, *_rest in files)
            pr_text = pr_description(spec, changeset, command, bench=bench)
        with applied(changeset, "printing the PR description") if not shown else contextlib.nullcontext():
            write_out("\n" + pr_text)


def side_file(flag: str, name: str, text: str, said: str) -> SideFile:
    """A side file to write in the current folder with the change: (path, text, whether it may
    replace a file there, what to say once written); one there already is refused."""
    path = Path.cwd() / name
    if path.exists():
        raise BadInput(f"{flag}: {path} exists; move it aside or run from another folder. Nothing written.")
    return path, text, False, said


# -- new-op and migrate-from-mpsgraph --------------------------------------------------------------


def plan_and_report(
    command: str, op: str, spec, plan: Callable[[PytorchTree], Changeset], doing: str, *,
    root: Optional[Path], delivery: Delivery, companions: Companions, notes: tuple[str, ...] | list[str] = (),
    reducing: bool = False,
) -> None:
    """The flow new-op and migrate-from-mpsgraph share: the tree (a change cut short there is
    refused first), the plan (``plan(tree)``, saying ``doing`` meanwhile), then the change
    shown or written with its companions."""
    from mpsgen.patch.journal import refuse_interrupted

    tree = PytorchTree.locate(root)
    refuse_interrupted(tree.root)  # a change cut short comes first
    with busy(doing):
        changeset = plan(tree)
    changeset.notes[:0] = notes
    if reducing:
        files, pr_text = reduction_side_files(tree, spec, op, changeset, command, companions)
    else:
        files, pr_text = companion_files(spec, command, companions), None
    report(
        changeset, dry_run=delivery.dry_run, patch=delivery.patch, strict=delivery.strict, op=op, force=delivery.force,
        side_files=files, given=companions.given,
    )
    write_companions(spec, changeset, command, files, companions.pr, delivery, pr_text)


def new_op(
    op: str = typer.Argument(..., metavar="OP", help="aten op name, e.g. heaviside or special_ndtri"),
    unary: bool = UnaryOpt,
    binary: bool = BinaryOpt,
    kind: Optional[str] = KindOpt,
    int2float: bool = Int2FloatOpt,
    integer: bool = IntegerOpt,
    integer_no_bool: bool = IntegerNoBoolOpt,
    complex_: bool = ComplexOpt,
    opmath: bool = OpmathOpt,
    expr: Optional[str] = ExprOpt,
    functor_file: Optional[Path] = FunctorFileOpt,
    spec_file: Optional[Path] = OpSpecOpt,
    stub: Optional[str] = StubOpt,
    row: Optional[list[str]] = typer.Option(None, "--row", metavar="ROW", help="native_functions row to dispatch (repeatable)"),
    partial: bool = typer.Option(False, "--partial", help="add MPS to the rows without any MPS kernel even if other rows of the op stay on theirs (MPSGraph)"),
    root: Optional[Path] = RootOption,
    dry_run: bool = DryRunOpt,
    patch: Optional[Path] = PatchOpt,
    strict: bool = StrictOpt,
    force: bool = ForceOpt,
    with_test: bool = WithTestOpt,
    with_bench: bool = WithBenchOpt,
    pr: bool = PrOpt,
) -> None:
    """Add a new unary or binary Metal op: functor, registrations, host kernel, dispatch, tests.

    Example: mpsgen new-op heaviside --binary --integer --expr "a == T(0) ? b : static_cast<T>(a > T(0))" --dry-run"""
    from mpsgen.plan import newop
    from mpsgen.spec.flags import SpecFlags, build_spec

    try:
        delivery = Delivery(dry_run, patch, strict, force)
        flags = SpecFlags(op, unary, binary, kind, int2float, integer, integer_no_bool, complex_, opmath, expr, functor_file, spec_file, stub, row)
        spec, notes = build_spec(flags, root=root)
        plan_and_report(
            "new-op", op, spec, lambda tree: newop.plan_new_op(tree, spec, partial=partial),
            f"planning {op}: reading the tree, compiling the functor against mpsgen's Metal model...",
            root=root, delivery=delivery, companions=Companions(with_test, with_bench, pr), notes=notes,
        )
    except MpsgenError as exc:
        fail(exc)


class ListFormat(str, Enum):
    table = "table"
    json = "json"


def migrate_from_mpsgraph(
    op: Optional[str] = typer.Argument(None, help="aten op name, e.g. acosh (omit with --list)"),
    unary: bool = UnaryOpt,
    binary: bool = BinaryOpt,
    kind: Optional[str] = KindOpt,
    int2float: bool = Int2FloatOpt,
    integer: bool = IntegerOpt,
    integer_no_bool: bool = IntegerNoBoolOpt,
    complex_: bool = ComplexOpt,
    opmath: bool = OpmathOpt,
    expr: Optional[str] = ExprOpt,
    functor_file: Optional[Path] = FunctorFileOpt,
    spec_file: Optional[Path] = OpSpecOpt,
    stub: Optional[str] = StubOpt,
    row: Optional[list[str]] = typer.Option(None, "--row", metavar="ROW", help="native_functions row to migrate (repeatable)"),
    partial: bool = typer.Option(False, "--partial", help="migrate the rows that can be; leave (and name) the others"),
    list_: bool = typer.Option(False, "--list", help="list the ops of this tree that could be migrated"),
    format_: Optional[ListFormat] = typer.Option(None, "--format", help="--list output: table (default) or json"),
    root: Optional[Path] = RootOption,
    dry_run: bool = DryRunOpt,
    patch: Optional[Path] = PatchOpt,
    strict: bool = StrictOpt,
    force: bool = ForceOpt,
    with_test: bool = WithTestOpt,
    with_bench: bool = WithBenchOpt,
    pr: bool = PrOpt,
    allow_dtype_loss: bool = typer.Option(
        False, "--allow-dtype-loss", help="migrate even if the Metal kernel serves fewer dtypes than MPSGraph did"
    ),
) -> None:
    """Move an op from its MPSGraph kernel onto a Metal one: new-op's edits, the yaml rows, and
    the MPSGraph code removed. `--list` shows the candidates of the tree.

    Example: mpsgen migrate-from-mpsgraph acosh --dry-run"""
    import json

    from mpsgen.plan import migrate
    from mpsgen.report.explain import migration_candidates
    from mpsgen.spec.flags import SpecFlags, build_spec, migration_reduction

    try:
        if list_:
            given = [
                flag
                for flag, on in (
                    ("OP", op is not None), ("--unary", unary), ("--binary", binary), ("--kind", kind is not None),
                    ("--int2float", int2float), ("--integer", integer), ("--integer-no-bool", integer_no_bool),
                    ("--complex", complex_), ("--opmath", opmath), ("--expr", expr is not None),
                    ("--functor-file", functor_file is not None), ("--spec", spec_file is not None),
                    ("--stub", stub is not None), ("--row", bool(row)), ("--partial", partial),
                    ("--dry-run", dry_run), ("--patch", patch is not None), ("--strict", strict),
                )
                if on
            ]
            if given:
                raise BadInput(f"--list takes only --format and --root (got {', '.join(given)}).", hint="Run the listing and the migration separately.")
            candidates = migration_candidates(PytorchTree.locate(root))
            if format_ == ListFormat.json:
                out.print(Text(json.dumps([c.as_dict() for c in candidates], indent=2)))
            else:
                out.print(Text(migrate.format_table(candidates)))
            return
        if format_ is not None:
            raise BadInput("--format applies to --list only.")
        if op is None:
            raise BadInput(
                "give the op to migrate, e.g. `mpsgen migrate-from-mpsgraph acosh --unary --int2float`, "
                "or --list to see the candidates."
            )
        delivery = Delivery(dry_run, patch, strict, force)
        companions = Companions(with_test, with_bench, pr)
        flags = SpecFlags(op, unary, binary, kind, int2float, integer, integer_no_bool, complex_, opmath, expr, functor_file, spec_file, stub, row)
        shipped_reduction = migration_reduction(flags, partial)
        if shipped_reduction is not None:  # an op a reduction spec serves (prod; var, std, var_mean, std_mean)
            from mpsgen.plan import reduction
            from mpsgen.spec.reduction import load_reduction_spec

            rspec = load_reduction_spec(shipped_reduction, display=f"specs/reductions/{shipped_reduction.name}")
            plan_and_report(
                f"mpsgen migrate-from-mpsgraph {op}" + (" --allow-dtype-loss" if allow_dtype_loss else ""), op, rspec,
                lambda tree: reduction.plan_reduction_migration(tree, rspec, op, allow_dtype_loss=allow_dtype_loss),
                f"planning the migration of {op}: reading the tree...", root=root, delivery=delivery, companions=companions,
                reducing=True,
            )
            return
        spec, notes = build_spec(flags, root=root, migrate=True)
        plan_and_report(
            "migrate-from-mpsgraph", op, spec,
            lambda tree: migrate.plan_migrate(tree, spec, partial=partial, allow_dtype_loss=allow_dtype_loss),
            f"planning the migration of {op}: reading the tree, compiling the functor...",
            root=root, delivery=delivery, companions=companions, notes=notes,
        )
    except MpsgenError as exc:
        fail(exc)


# -- new-kernel ------------------------------------------------------------------------------------


def new_kernel(
    op: str = typer.Argument(..., metavar="OP", help="aten op name, e.g. _pdist_forward"),
    spec_file: Optional[Path] = typer.Option(None, "--spec", metavar="SPEC", help="a kernel spec YAML file (default: the one mpsgen ships for OP)"),
    file: Optional[str] = typer.Option(None, "--file", metavar="STEM", help="the files' stem: kernels/STEM.{h,metal}, operations/STEM.mm (default: the spec's 'file')"),
    dtypes: Optional[str] = typer.Option(None, "--dtypes", metavar="LIST", help="register only these dtypes, comma-separated (float,half,bfloat)"),
    root: Optional[Path] = RootOption,
    dry_run: bool = DryRunOpt,
    patch: Optional[Path] = PatchOpt,
    strict: bool = StrictOpt,
    force: bool = ForceOpt,
    with_test: bool = typer.Option(
        False, "--with-test",
        help="also write test_<kernel>_shader.py here: compiles the kernel with torch.mps.compile_shader on a Mac and "
        "compares it with the CPU op (skipped without MPS)",
    ),
    pr: bool = PrOpt,
) -> None:
    """Add a custom (non-elementwise) Metal kernel: params header, kernel with one host_name per
    dtype, host function, dispatch, test lists, AOTI shim; the body comes from a kernel spec.

    Example: mpsgen new-kernel _pdist_forward --dry-run"""
    from mpsgen.patch.journal import refuse_interrupted
    from mpsgen.plan.newkernel import kernel_target, plan_new_kernel
    from mpsgen.spec.load import kernel_spec_for

    try:
        Delivery(dry_run, patch)  # (--dry-run and --patch exclude each other)
        spec = kernel_spec_for(op, spec_file, file, dtypes)
        tree = PytorchTree.locate(root)
        refuse_interrupted(tree.root)
        with busy(f"planning {op}: reading the tree, compiling the kernel body against mpsgen's Metal model..."):
            changeset = plan_new_kernel(tree, spec)
        target = kernel_target(tree, spec)  # (read before the change is applied)
        host_function, row_name = target.host_function, target.row.name
        companions = []
        if with_test:
            from mpsgen.plan.kernel_companions import kernel_shader_test

            name, text = kernel_shader_test(tree, spec)
            companions.append(side_file("--with-test", name, text, f"on a Mac, `python -m pytest {name} -v` checks the kernel before you build"))
        given = frozenset({"--with-bench"} | ({"--with-test"} if with_test else set()) | ({"--pr-description"} if pr else set()))
        report(changeset, dry_run=dry_run, patch=patch, strict=strict, op=op, force=force, side_files=companions, given=given)
        for path, *_rest in companions:
            if dry_run:
                err.print(f"dry run: would write {path}")
            elif patch is not None:
                err.print(f"not written with --patch: {path} (run without --patch to write it with the change)")
        if pr:
            from mpsgen.plan.kernel_companions import kernel_pr_description

            with applied(changeset, "printing the PR description") if not (dry_run or patch is not None) else contextlib.nullcontext():
                write_out("\n" + kernel_pr_description(spec, changeset, host_function, row_name))
    except MpsgenError as exc:
        fail(exc)


# -- spec validate ---------------------------------------------------------------------------------


def spec_validate(files: list[Path] = typer.Argument(..., help="spec files")) -> None:
    """Report every problem in the given spec files, as file:line:col.

    Example: mpsgen spec validate specs/heaviside.yaml examples/specs/*.yaml"""
    from mpsgen.shim.validate import check_spec_file

    bad = 0
    said: set[str] = set()
    for f in files:
        checked = check_spec_file(f)
        if checked.note is not None and not (checked.note_once and checked.note in said):
            err.print(checked.note)
            said.add(checked.note)
        for line in checked.problems:
            err.print(line)
        bad += bool(checked.problems)
        if not checked.problems:
            err.print(f"{f}: ok")
    raise typer.Exit(2 if bad else 0)

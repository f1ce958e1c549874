"""The command line: a thin typer layer over spec, tree, edits and changeset."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from typer.core import TyperGroup

from mpsgen.errors import BadInput, MpsgenError, Refused, blank_value
from mpsgen.files import write_whole
from mpsgen.resources import resource_dir
from mpsgen.text import visible
from mpsgen.spec import (
    KINDS,
    FunctorSource,
    OpSpec,
    check_dtype_groups,
    check_name,
    load_spec,
    parse_spec,
    spec_problems,
)
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import read_bounded

class _Group(TyperGroup):
    """The app's command groups: every option of a command they hand out refuses an empty or
    whitespace-only value given on the command line (one rule: :func:`mpsgen.errors.blank_value`)."""

    def get_command(self, ctx, cmd_name):
        command = super().get_command(ctx, cmd_name)
        for param in getattr(command, "params", ()):
            if getattr(param, "param_type_name", "") == "option" and not param.is_flag and not hasattr(param, "_mpsgen_raw"):
                param._mpsgen_raw = param.process_value
                param.process_value = functools.partial(_nonblank, param)
        return command


def _nonblank(param, ctx, value):
    """``param``'s processing of ``value``, once the value passed :func:`blank_value`."""
    given = getattr(ctx.get_parameter_source(param.name), "name", "") in ("COMMANDLINE", "ENVIRONMENT")
    if given and (refused := blank_value(param.opts[0], value)) is not None:
        fail(refused)
    return param._mpsgen_raw(ctx, value)


app = typer.Typer(
    cls=_Group,
    add_completion=True,  # --install-completion / --show-completion
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: typer's rich help formatter costs ~60 ms of start-up
    no_args_is_help=True,
    help="Write the boilerplate of a Metal (MPS) operator in a PyTorch checkout, and check MPS dispatch.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
spec_app = typer.Typer(cls=_Group, no_args_is_help=True, rich_markup_mode=None, help="Work with op spec files (schema: specs/README.md).")
app.add_typer(spec_app, name="spec")

if TYPE_CHECKING:
    from mpsgen.changeset import Changeset


class _Console:
    """A rich Console made on first use (rich costs start-up that --help and errors do not need)."""

    def __init__(self, **options) -> None:
        self._options = options
        self._console = None

    def __getattr__(self, name: str):
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)

    def print(self, *objects, **options) -> None:
        """Print, a tree's or a user's text made visible (:func:`mpsgen.text.visible`): a
        str here, a ``Text`` where it is made. A closed stream is an OSError, as a full one."""
        if (sys.stderr if self._options.get("stderr") else sys.stdout) is None:
            raise OSError(errno.EBADF, "the output is closed")
        self.__getattr__("print")(*(visible(o) if isinstance(o, str) else o for o in objects), **options)


def Text(text: str = "", style: str = ""):  # noqa: N802 (rich's name)
    from rich.text import Text as RichText

    return RichText(visible(text), style=style)


@contextlib.contextmanager
def busy(what: str):
    """Say what is being done on stderr while it lasts, when stderr is a terminal (a spinner
    that leaves no line behind); nothing otherwise, so pre-commit and CI logs stay clean."""
    if sys.stderr is not None and sys.stderr.isatty():
        with err.status(what):
            yield
    else:
        yield


def write_out(text: str) -> None:
    """Standard output for text that may hold a tree's names or paths (not for data a program
    reads back as it is, such as `--patch -`)."""
    if sys.stdout is None:
        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.write(visible(text))
    sys.stdout.flush()  # a full output fails here, inside the caller's handling


out = _Console(highlight=False, soft_wrap=True, markup=False)  # user text (paths, ops) is never markup
err = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

RootOption = typer.Option(None, "--root", metavar="DIR", help="PyTorch checkout (default: nearest ancestor holding native_functions.yaml).")

# The generation flags shared by new-op and migrate-from-mpsgraph.
UnaryOpt = typer.Option(False, "--unary", help="one tensor input")
BinaryOpt = typer.Option(False, "--binary", help="two tensor inputs")
KindOpt = typer.Option(None, "--kind", metavar="KIND", help="unary_alpha, binary_alpha or ternary")
Int2FloatOpt = typer.Option(False, "--int2float", help="integer and bool inputs computed in float")
IntegerOpt = typer.Option(False, "--integer", help="integer and bool inputs, same-type output")
IntegerNoBoolOpt = typer.Option(False, "--integer-no-bool", help="integer inputs without bool")
ComplexOpt = typer.Option(False, "--complex", help="complex64/complex32 (float2/half2)")
OpmathOpt = typer.Option(False, "--opmath", help="half/bfloat computed in float (REGISTER_OPMATH_*)")
ExprOpt = typer.Option(None, "--expr", metavar="EXPR", help="functor as one C++ expression of x (unary) or a, b")
FunctorFileOpt = typer.Option(None, "--functor-file", metavar="FILE", help="file with the functor's struct body")
StubOpt = typer.Option(None, "--stub", metavar="STUB", help="dispatch stub name (default: the stub the row's CPU/CUDA kernel calls)")
DryRunOpt = typer.Option(False, "--dry-run", help="print the diff, write nothing")
PatchOpt = typer.Option(None, "--patch", metavar="FILE", help="write a git-apply-able patch instead of editing")
StrictOpt = typer.Option(False, "--strict", help="exit 1 when there is nothing to do")


def fail(exc: MpsgenError) -> None:
    _REPORTED.append(exc.exit_code)
    try:
        err.print(Text("error: ", style="bold red") + Text(str(exc)))
    except (OSError, ValueError):  # stderr closed or full: the exit status still says it
        pass
    raise typer.Exit(exc.exit_code)


def print_diff(diff: str) -> None:
    """The diff, coloured by line, printed as one text (a print per line cost rich's rendering
    once per line: ~60 ms for a new-op's diff)."""
    text = Text()
    for line in diff.splitlines():
        style = None
        if line.startswith(("+++", "---", "diff --git")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        text.append(visible(line), style=style)
        text.append("\n")
    out.print(text, end="")


WithTestOpt = typer.Option(
    False, "--with-test", help="also write test_<op>_shader.py here: compiles the functor with torch.mps.compile_shader and compares it with the CPU op"
)
PrOpt = typer.Option(False, "--pr-description", help="print a PR title and body in PyTorch's style")
WithBenchOpt = typer.Option(
    False, "--with-bench",
    help="also write bench_<op>.py here: times the op before and after the change on a Mac (every dtype x size x layout) "
    "and prints a markdown table for the PR (an existing one is replaced only with --force)",
)


def prepare_companions(spec, command: str, with_test: bool, with_bench: bool = False, force: bool = False) -> list[tuple[Path, str, bool, str]]:
    """The side files to write with the change, checked before anything is written: (path,
    text, whether it may replace a file there, what to say once it is written)."""
    files = []
    if with_test:
        from mpsgen.companions import shader_test

        name, text = shader_test(spec, command)
        files.append(side_file("--with-test", name, text, f"on a Mac, `python -m pytest {name} -v` checks the functor before you build"))
    if with_bench:
        from mpsgen.companions import bench_files, bench_script

        name, text = bench_script(spec, command)
        _script, before, after = bench_files(spec.name)
        files.append(side_file("--with-bench", name, text, f"run it on a Mac before and after the change (`python {name} --help` "
                               f"says how); `python {name} --compare {before} {after}` prints the table for the PR"))
    return files


def side_file(flag: str, name: str, text: str, said: str) -> tuple[Path, str, bool, str]:
    """A side file to write in the current folder with the change: (path, text, whether it may
    replace a file there, what to say once written); one there already is refused."""
    path = Path.cwd() / name
    if path.exists():
        raise BadInput(f"{flag}: {path} exists; move it aside or run from another folder. Nothing written.")
    return path, text, False, said


def write_companions(spec, changeset, command: str, files: list[tuple[Path, str, bool, str]], pr: bool, dry_run: bool) -> None:
    """After the change (``report`` wrote the side files with it): what a dry run would have
    written, and the PR description."""
    for path, _text, _replace, _said in files:
        if dry_run:
            err.print(f"dry run: would write {path}")
    if pr:
        from mpsgen.companions import bench_files, pr_description

        bench = any(path.name == bench_files(spec.name)[0] for path, *_rest in files)
        with applied(changeset, "printing the PR description") if not dry_run else contextlib.nullcontext():
            write_out("\n" + pr_description(spec, changeset, command, bench=bench))


ForceOpt = typer.Option(
    False, "--force", help="write even when the result would not build, link or dispatch (the problems are still printed)"
)


def report(
    changeset: Changeset, *, dry_run: bool, patch: Optional[Path], strict: bool, op: str, force: bool = False,
    side_files: list[tuple[Path, str, bool, str]] = (),
    given: frozenset[str] = frozenset(),
) -> None:
    """Show the change, then write it (or its patch). ``side_files`` (--with-test,
    --with-bench) belong to the change: written first, as new files, and removed again if
    the change is not applied; never written with a dry run or a patch."""
    for w in changeset.warnings:
        err.print(Text("warning: ", style="bold yellow") + Text(w))
    for k in changeset.kept:
        err.print(Text("kept: ", style="bold") + Text(k))
    blocked = bool(changeset.blockers) and not changeset.empty
    for b in changeset.blockers:
        label = "problem (--force): " if force else "error: "
        err.print(Text(label, style="bold red") + Text(b))
    if blocked and not force and not dry_run:
        err.print(
            "refused: the change above would not build, link or dispatch; nothing written. Fix the cause, "
            "or pass --force to write it anyway."
        )
        raise typer.Exit(1)
    if changeset.empty:
        err.print(f"nothing to do: {op} is already in place in {changeset.tree.root}.")
        raise typer.Exit(1 if strict else 0)
    if dry_run:
        print_diff(changeset.diff())
        for note in changeset.notes:
            err.print(f"  {note}", markup=False)
        err.print(f"dry run: {len(changeset.changed)} file(s) would change; nothing written.")
        if blocked and not force:
            raise typer.Exit(1)
        print_next_steps(changeset, given)
        return
    if patch is not None and str(patch) == "-":
        sys.stdout.write(changeset.diff())
        err.print(f"wrote the patch to standard output ({len(changeset.changed)} file(s)).")
        return
    if patch is not None:
        changeset.write_patch(patch, force=force)
        err.print(f"wrote {patch} ({len(changeset.changed)} file(s)); apply it with `git apply {patch}` at {changeset.tree.root}.")
        return
    made: list[Path] = []
    _APPLYING.append(changeset)  # (an interrupt from here on reads what is on disk: changeset.applied)
    try:
        for path, text, _replace, _said in side_files:
            try:
                write_whole(path, text.encode("utf-8"), replace=False)  # (a new file: checked absent before)
            except FileExistsError:
                raise BadInput(f"{path} appeared meanwhile; nothing written.") from None
            except OSError as exc:
                raise BadInput(f"cannot write {path} ({exc.strerror}); nothing written.",
                               hint="Run from a folder you can write to, or leave out --with-test/--with-bench.") from None
            made.append(path)
        written = changeset.apply(command=f"{sys.argv[1] if len(sys.argv) > 1 else ''} {op}".strip())
    except BaseException:
        if changeset.applied is None:  # the change was not applied: its side files go too
            for path in made:
                path.unlink(missing_ok=True)
        raise
    with applied(changeset, "printing what it did"):
        for note in changeset.notes:
            err.print(f"  {note}")
        err.print(f"updated {len(written)} file(s) in {changeset.tree.root}.")
        for path, _text, _replace, said in side_files:
            err.print(f"wrote {path}: {said}")
        print_next_steps(changeset, given)


_APPLYING: list[Changeset] = []  # the changes this run applies or applied, for an interrupt that comes after
_REPORTED: list[int] = []  # the exit codes of the errors this run has printed


def _interrupt_message() -> str:
    done = [c for c in _APPLYING if c.applied is not None]
    if done:
        return f"interrupted after the change was applied ({len(done[-1].applied)} file(s) in {done[-1].tree.root}): it is complete."
    return "interrupted; nothing written."


class AppliedBut(MpsgenError):
    """The tree was changed; something after that failed: exit 3, never 'nothing written'."""

    exit_code = 3


@contextlib.contextmanager
def applied(changeset: Changeset, what: str):
    """After the tree changed: a failure of ``what`` (a full or closed stdout/stderr, an
    unwritable side file) says the change is applied, with exit status 3, no traceback."""
    try:
        yield
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        raise AppliedBut(
            f"the change is applied ({len(changeset.changed)} file(s) in {changeset.tree.root}); {what} failed "
            f"({exc.strerror or exc}{where})."
        ) from None


_COMPANION_HINTS = (
    ("--with-test", "--with-test writes a shader test to check the kernel on a Mac before building"),
    ("--with-bench", "--with-bench a benchmark script for the PR"),
    ("--pr-description", "--pr-description prints a PR text"),
)


def print_next_steps(changeset: Changeset, given: frozenset[str] = frozenset()) -> None:
    """The change's next steps, and a hint at the companion flags not ``given``."""
    if changeset.next_steps:
        err.print("next steps:")
        for step in changeset.next_steps:
            err.print(f"  {step}")
        hints = [text for flag, text in _COMPANION_HINTS if flag not in given]
        if hints:
            err.print("  hint:   " + "; ".join(hints))


def shipped_spec_path(spec_file: Path) -> Path:
    """``--spec``: the file as given; when it does not exist and names ``specs/<op>.yaml`` (or
    ``<op>.yaml``, or ``<op>``), the spec mpsgen ships under that name, so README commands work
    from a PyTorch checkout."""
    if spec_file.exists() or len(spec_file.parts) > 2 or (len(spec_file.parts) == 2 and spec_file.parts[0] != "specs"):
        return spec_file
    name = spec_file.name if spec_file.suffix == ".yaml" else f"{spec_file.name}.yaml"
    shipped = resource_dir("specs") / name
    return shipped if shipped.is_file() else spec_file


def build_spec(
    op: str,
    unary: bool,
    binary: bool,
    kind: Optional[str],
    int2float: bool,
    integer: bool,
    integer_no_bool: bool,
    complex_: bool,
    opmath: bool,
    expr: Optional[str],
    functor_file: Optional[Path],
    spec_file: Optional[Path],
    stub: Optional[str],
    rows: Optional[list[str]],
    *,
    root: Optional[Path] = None,
    migrate: bool = False,
) -> tuple[OpSpec, list[str]]:
    """The spec of this run and notes on how it was chosen: the ``--spec`` file, or the spec
    mpsgen ships for the op when no functor is typed (--expr, --functor-file), with the flags
    checked against it (:func:`spec_with_flags`); else the flags, with the kind read from the
    rows' schemas and the dtype groups from the op's OpInfo where no flag gives them; checked
    once by :func:`mpsgen.spec.spec_problems`, however it was assembled."""
    if why := check_name(op, "op name"):
        raise BadInput(why, hint="Give the aten op name, e.g. `mpsgen new-op heaviside --binary`.")
    chosen = [k for k, on in (("unary", unary), ("binary", binary)) if on] + ([kind] if kind else [])
    if len(chosen) > 1:
        raise BadInput(f"--unary, --binary and --kind are mutually exclusive (got {', '.join('--' + c for c in chosen)}).")
    if kind and kind not in KINDS[2:]:
        raise BadInput(f"--kind {kind}: not a kind mpsgen writes; use --unary, --binary or --kind {'|'.join(KINDS[2:])}.")
    notes: list[str] = []
    if expr is not None and functor_file is not None:
        raise BadInput("--expr and --functor-file are mutually exclusive: give the functor one way.")
    groups = tuple(g for g, on in (("int2float", int2float), ("integer", integer), ("integer_no_bool", integer_no_bool), ("complex", complex_), ("opmath", opmath)) if on)

    functor: FunctorSource | None = None
    if expr is not None:
        functor = FunctorSource(expr=expr, origin="--expr")
    elif functor_file is not None:
        try:
            body = read_bounded(functor_file, "--functor-file", limit=1024 * 1024).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"--functor-file {functor_file}: cannot read it ({exc}).") from None
        functor = FunctorSource(body=body, origin=f"--functor-file {functor_file}", line=1)

    if spec_file is None and functor is None and check_name(op, "op name") is None:
        # no functor of one's own: the spec mpsgen ships for the op, if any, is the spec of the
        # run (kind, dtypes and functor), the kind and dtype flags checked against it
        shipped = resource_dir("specs") / f"{op}.yaml"
        if shipped.is_file():
            spec_file = shipped
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
        from mpsgen.newop import kind_and_dtypes_from_tree, kind_flag

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
    shipped = resource_dir("specs") / f"{op}.yaml"
    with contextlib.suppress(OSError):
        if spec_file.resolve() == shipped.resolve():
            return f"specs/{op}.yaml (the spec mpsgen ships for {op})"
    return str(spec_file)


def spec_with_flags(base: OpSpec, shown: str, kind: Optional[str], groups: tuple[str, ...]) -> tuple[OpSpec, list[str]]:
    """``base`` with the kind and dtype flags typed beside it, and notes on what they did: a
    kind flag must say the spec's kind; dtype flags choose among the spec's dtype groups (its
    functor is written for those only), and a group the spec does not list is refused, naming
    the flag and the spec; without dtype flags the spec's dtypes are used."""
    from mpsgen.newop import kind_flag

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


@app.command("new-op")
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
    spec_file: Optional[Path] = typer.Option(None, "--spec", metavar="SPEC", help="an op spec YAML file (default without --expr/--functor-file: specs/<op>.yaml if shipped)"),
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
    from mpsgen.newop import plan_new_op

    try:
        if dry_run and patch is not None:
            raise BadInput("--dry-run and --patch are mutually exclusive.")
        spec, notes = build_spec(
            op, unary, binary, kind, int2float, integer, integer_no_bool, complex_, opmath, expr, functor_file, spec_file, stub, row, root=root
        )
        tree = PytorchTree.locate(root)
        from mpsgen.journal import refuse_interrupted

        refuse_interrupted(tree.root)  # a change cut short comes first
        with busy(f"planning {op}: reading the tree, compiling the functor against mpsgen's Metal model..."):
            changeset = plan_new_op(tree, spec, partial=partial)
        changeset.notes[:0] = notes
        companions = prepare_companions(spec, "new-op", with_test, with_bench, force)
        given = frozenset(f for f, on in (("--with-test", with_test), ("--with-bench", with_bench), ("--pr-description", pr)) if on)
        report(changeset, dry_run=dry_run, patch=patch, strict=strict, op=op, force=force, side_files=companions, given=given)
        write_companions(spec, changeset, "new-op", companions, pr, dry_run or patch is not None)
    except MpsgenError as exc:
        fail(exc)


@app.command("new-kernel")
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
    from mpsgen.newkernel import plan_new_kernel

    try:
        if dry_run and patch is not None:
            raise BadInput("--dry-run and --patch are mutually exclusive.")
        spec = kernel_spec_for(op, spec_file, file, dtypes)
        tree = PytorchTree.locate(root)
        from mpsgen.journal import refuse_interrupted

        refuse_interrupted(tree.root)
        with busy(f"planning {op}: reading the tree, compiling the kernel body against mpsgen's Metal model..."):
            changeset = plan_new_kernel(tree, spec)
        from mpsgen.newkernel import kernel_target

        target = kernel_target(tree, spec)  # (read before the change is applied)
        host_function, row_name = target.host_function, target.row.name
        companions = []
        if with_test:
            from mpsgen.kernel_companions import kernel_shader_test

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
            from mpsgen.kernel_companions import kernel_pr_description

            with applied(changeset, "printing the PR description") if not (dry_run or patch is not None) else contextlib.nullcontext():
                write_out("\n" + kernel_pr_description(spec, changeset, host_function, row_name))
    except MpsgenError as exc:
        fail(exc)


def kernel_spec_for(op: Optional[str], spec_file: Optional[Path], file: Optional[str], dtypes: Optional[str]):
    """The kernel spec of ``new-kernel OP``: the given file, else the one mpsgen ships; --file
    and --dtypes override it."""
    from dataclasses import replace

    from mpsgen.kernelspec import KERNEL_DTYPES, _STEM, load_kernel_spec

    if op is not None and (why := check_name(op, "OP")):
        raise BadInput(why)
    if spec_file is None:
        shipped = resource_dir("specs") / "kernels" / f"{op}.yaml"
        if not shipped.is_file():
            raise BadInput(
                f"new-kernel {op}: no --spec given and mpsgen ships no kernel spec for {op}. The kernel body is the "
                "spec's: copy specs/kernels/_pdist_forward.yaml (explained in specs/kernels/README.md), write the "
                f"body of {op}'s kernel, then run `mpsgen new-kernel {op} --spec YOUR.yaml --dry-run`."
            )
        spec_file = shipped
    spec = load_kernel_spec(spec_file, display=str(spec_file))
    if op is not None and spec.name != op:
        raise BadInput(f"{spec_file}: the spec is for {spec.name}, not {op}; give the op the spec names, or another --spec.")
    if file is not None:
        if not _STEM.match(file):
            raise BadInput(f"--file {file!r}: give a file stem like Distance (CamelCase letters and digits, no path or suffix).")
        spec = replace(spec, file=file)
    if dtypes is not None:
        torch_names = {"float32": "float", "float16": "half", "bfloat16": "bfloat"}
        wanted = [torch_names.get(d.strip().replace("torch.", ""), d.strip()) for d in dtypes.split(",") if d.strip()]
        bad = [d for d in wanted if d not in KERNEL_DTYPES]
        if bad or not wanted:
            raise BadInput(f"--dtypes {dtypes!r}: a custom kernel registers {', '.join(KERNEL_DTYPES)}; give some of them, comma-separated.")
        spec = replace(spec, dtypes=tuple(d for d in KERNEL_DTYPES if d in wanted))
    return spec


@spec_app.command("validate")
def spec_validate(files: list[Path] = typer.Argument(..., help="spec files")) -> None:
    """Report every problem in the given spec files, as file:line:col.

    Example: mpsgen spec validate specs/heaviside.yaml examples/specs/*.yaml"""
    from mpsgen.compile_gate import NO_COMPILER, gate_spec

    bad = 0
    said_no_compiler = False
    for f in files:
        if _is_kernel_spec(f) or (f.is_file() and _reduction_spec_path(str(f), f) is not None):
            shown = _kernel_spec_problems(f) if _is_kernel_spec(f) else _reduction_spec_problems(f)
            for line in shown:
                err.print(line)
            bad += bool(shown)
            if not shown:
                err.print(f"{f}: ok")
            continue
        spec, problems = parse_spec(shipped_spec_path(f), display=str(f))
        shown = [f"{loc}: {msg}" for loc, msg in problems]
        if spec is not None:  # the functor compiles against mpsgen's Metal model
            gate = gate_spec(spec)
            shown += gate.problems
            if gate.compiler is None and not said_no_compiler:
                err.print(f"note: {NO_COMPILER}")
                said_no_compiler = True
        for line in shown:
            err.print(line)
        bad += bool(shown)
        if not shown:
            err.print(f"{f}: ok")
    raise typer.Exit(2 if bad else 0)


@app.command("demo")
def demo(
    op: str = typer.Option("heaviside", "--op", help="an op with a shipped spec: heaviside, special_ndtri (new-op), acosh, sub (migrate), atan2"),
    keep: Optional[Path] = typer.Option(None, "--keep", help="build the practice tree here and keep it"),
) -> None:
    """Build a practice tree in a temporary folder and show the diff mpsgen makes there: new-op
    for an op MPS lacks, migrate-from-mpsgraph for one on MPSGraph.

    Example: mpsgen demo --op acosh"""
    from mpsgen.explain import explain_op
    from mpsgen.practice import build_practice_tree

    try:
        spec_path = resource_dir("specs") / f"{op}.yaml"
        if not spec_path.is_file():
            shipped = ", ".join(sorted(p.stem for p in resource_dir("specs").glob("*.yaml")))
            raise BadInput(f"--op {op}: no shipped spec specs/{op}.yaml; ops with one: {shipped}.")
        spec = load_spec(spec_path, display=f"specs/{op}.yaml")
        import tempfile  # (here: --help and the other commands do not pay its import)

        with tempfile.TemporaryDirectory(prefix="mpsgen-demo-") as tmp:
            if keep is not None and (keep.is_file() or keep.is_symlink() or (keep.is_dir() and any(keep.iterdir()))):
                raise BadInput(
                    f"--keep {keep}: it exists and is not an empty folder; the practice tree would overwrite it.",
                    hint="Name a new folder (it is created) or an empty one.",
                )
            root = keep or Path(tmp) / "pytorch"
            root, real = build_practice_tree(root)
            where = str(root) if keep is not None else "a temporary folder (removed when the demo ends)"
            err.print(
                f"practice tree: {where}, with " + ("the real native_functions.yaml, test lists and headers of the installed torch wheel" if real else "mpsgen's own sample files only (install torch==2.13.0 for the real yaml and test files)")
            )
            at = f" --root {root}" if keep is not None else ""  # a temporary tree is gone by the time one could type it
            tree = PytorchTree(root)
            status = explain_op(tree, op).status
            if status == "missing":
                from mpsgen.newop import plan_new_op

                command = f"mpsgen new-op {op} --spec specs/{op}.yaml"
                err.print(f"$ {command} --dry-run{at}")
                changeset = plan_new_op(tree, spec)
            elif status == "mps-kernel":
                from mpsgen.migrate import plan_migrate

                command = f"mpsgen migrate-from-mpsgraph {op}"
                err.print(f"$ {command} --dry-run{at}")
                try:
                    changeset = plan_migrate(tree, spec)
                except Refused as exc:  # the demo shows a refusal as what mpsgen does here
                    err.print(f"mpsgen refuses this migration on this tree, and says why (exit 1 when you run it):\n  {exc}")
                    _demo_end(keep, None)
                    return
            else:
                err.print(f"$ mpsgen explain {op}{at}")
                err.print(f"{op} is {status} in this tree (torch 2.13 already runs it on Metal): nothing to write; `mpsgen demo` shows heaviside.")
                _demo_end(keep, None)
                return
            for w in changeset.warnings:
                err.print(Text("warning: ", style="bold yellow") + Text(w))
            for b in changeset.blockers:  # what would make the real command refuse (exit 1)
                err.print(Text("error: ", style="bold red") + Text(b))
            print_diff(changeset.diff())
            err.print(f"{len(changeset.changed)} file(s) would change (nothing written):")
            changed = [e.relpath for e in changeset.changed]
            for rel in changed:  # each file and what changes in it
                said = [n[len(rel) + 2 :] for n in changeset.notes if n.startswith(rel + ": ")]
                err.print(f"  {rel}" + (f": {'; '.join(said)}" if said else ""))
            for note in changeset.notes:  # how mpsgen decided (the stub it found, ...)
                if not any(note.startswith(rel + ": ") for rel in changed):
                    err.print(f"  note: {note}")
            for k in changeset.kept:
                err.print(f"  kept: {k}")
            _demo_end(keep, command)
    except MpsgenError as exc:
        fail(exc)


def _demo_end(keep: Optional[Path], command: Optional[str]) -> None:
    """What the demo leaves behind: the kept practice tree and what to try there, or that the
    temporary one is gone."""
    if keep is None:
        err.print("the practice tree is removed now; `mpsgen demo --keep DIR` keeps one to try the commands in.")
        return
    err.print(f"the practice tree stays in {keep}:")
    if command is not None:
        err.print(f"  cd {keep} && {command}   (writes the change; `mpsgen check` then checks the tree)")
    err.print(f"  cd {keep} && mpsgen coverage   (what else there is to do)")


class ListFormat(str, Enum):
    table = "table"
    json = "json"


def _shipped_reduction(op: str, row, partial: bool, expr, functor_file, stub) -> Optional[Path]:
    """The shipped reduction spec serving ``op`` (prod, var, ...) when nothing else was asked for."""
    from mpsgen.reduction import shipped_reduction_spec

    if row or partial or expr is not None or functor_file is not None or stub is not None:
        return None
    return shipped_reduction_spec(op)


@app.command("migrate-from-mpsgraph")
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
    spec_file: Optional[Path] = typer.Option(None, "--spec", metavar="SPEC", help="an op spec YAML file (default without --expr/--functor-file: specs/<op>.yaml if shipped)"),
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

    from mpsgen.explain import migration_candidates
    from mpsgen.migrate import format_table, plan_migrate

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
                out.print(Text(format_table(candidates)))
            return
        if format_ is not None:
            raise BadInput("--format applies to --list only.")
        if op is None:
            raise BadInput(
                "give the op to migrate, e.g. `mpsgen migrate-from-mpsgraph acosh --unary --int2float`, "
                "or --list to see the candidates."
            )
        if dry_run and patch is not None:
            raise BadInput("--dry-run and --patch are mutually exclusive.")
        elementwise_flags = unary or binary or kind or int2float or integer or integer_no_bool or complex_ or opmath
        if (
            spec_file is None and not elementwise_flags and not check_name(op, "op name")
            and not (resource_dir("specs") / f"{op}.yaml").is_file()
            and (reduction := _shipped_reduction(op, row, partial, expr, functor_file, stub)) is not None
        ):
            # an op a reduction spec serves (prod; var, std, var_mean, std_mean)
            from mpsgen.journal import refuse_interrupted
            from mpsgen.reduction import load_reduction_spec
            from mpsgen.reduction_migrate import plan_reduction_migration

            asked = [f for f, on in (("--with-test", with_test), ("--with-bench", with_bench), ("--pr-description", pr)) if on]
            if asked:
                raise BadInput(f"{', '.join(asked)}: not written for a reduction ({reduction.name}) yet.", hint="Run without them.")
            tree = PytorchTree.locate(root)
            refuse_interrupted(tree.root)
            spec = load_reduction_spec(reduction, display=f"specs/reductions/{reduction.name}")
            with busy(f"planning the migration of {op}: reading the tree..."):
                changeset = plan_reduction_migration(tree, spec, op, allow_dtype_loss=allow_dtype_loss)
            report(changeset, dry_run=dry_run, patch=patch, strict=strict, op=op, force=force)
            return
        spec, notes = build_spec(
            op, unary, binary, kind, int2float, integer, integer_no_bool, complex_, opmath, expr, functor_file, spec_file, stub, row,
            root=root, migrate=True,
        )
        tree = PytorchTree.locate(root)
        from mpsgen.journal import refuse_interrupted

        refuse_interrupted(tree.root)  # a change cut short comes first
        with busy(f"planning the migration of {op}: reading the tree, compiling the functor..."):
            changeset = plan_migrate(tree, spec, partial=partial, allow_dtype_loss=allow_dtype_loss)
        changeset.notes[:0] = notes
        companions = prepare_companions(spec, "migrate-from-mpsgraph", with_test, with_bench, force)
        given = frozenset(f for f, on in (("--with-test", with_test), ("--with-bench", with_bench), ("--pr-description", pr)) if on)
        report(changeset, dry_run=dry_run, patch=patch, strict=strict, op=op, force=force, side_files=companions, given=given)
        write_companions(spec, changeset, "migrate-from-mpsgraph", companions, pr, dry_run or patch is not None)
    except MpsgenError as exc:
        fail(exc)


@app.command(
    "check",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
def check(ctx: typer.Context) -> None:
    """Check MPS dispatch consistency (read-only unless --fix). Exit 0 clean, 1 findings, 2 could
    not run. `mpsgen check --help` for the options."""
    from mpsgen.cli_check import main as check_main

    raise typer.Exit(check_main(list(ctx.args)))


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"


@app.command("explain")
def explain_cmd(
    op: str = typer.Argument(..., metavar="OP", help="aten op name, e.g. acosh or heaviside"),
    format_: ExplainFormat = typer.Option(ExplainFormat.text, "--format", help="text or json"),
    root: Optional[Path] = RootOption,
) -> None:
    """Everything about one op: its rows and their MPS status, stub, kernels, registered dtypes,
    the tests holding it back, and the mpsgen command for the next step.

    Example: mpsgen explain acosh"""
    from mpsgen.explain import explain_op, op_text

    try:
        if why := check_name(op, "op name"):
            raise BadInput(why)
        with busy(f"reading the tree and planning the next step for {op}..."):
            report = explain_op(PytorchTree.locate(root), op)
    except MpsgenError as exc:
        fail(exc)
    if format_ == ExplainFormat.json:
        import json

        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        write_out(op_text(report))


class CoverageFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    html = "html"


@app.command("coverage")
def coverage_cmd(
    format_: CoverageFormat = typer.Option(CoverageFormat.table, "--format", help="table, json, markdown or html"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="write to this new file instead of standard output"),
    force: bool = typer.Option(False, "--force", help="with -o: replace the file if it exists"),
    limit: Optional[int] = typer.Option(None, "--limit", metavar="N", help="table and markdown: the first N migration candidates and addable ops (default 20)"),
    all_: bool = typer.Option(False, "--all", help="table and markdown: every migration candidate and addable op"),
    root: Optional[Path] = RootOption,
) -> None:
    """The tree's MPS coverage: how many ops run on Metal, on their own *_mps kernels (MPSGraph),
    composite, missing, with what each status means; counts by tag; the migration candidates,
    easiest first; the missing ops new-op can add. html is one self-contained page with a filter.

    Example: mpsgen coverage --format html -o mps-coverage.html"""
    import shutil

    from mpsgen.explain import addable_ops, coverage, coverage_html, coverage_table

    try:
        if all_ and limit is not None:
            raise BadInput("--all lists everything; --limit N the first N: give one of them.")
        if limit is not None and limit < 1:
            raise BadInput(f"--limit {limit}: give a number of 1 or more (or --all).")
        if force and output is None:
            raise BadInput("--force replaces the file of -o/--output: give -o FILE too.")
        with busy("reading the tree and planning each migration candidate and addable op..."):
            tree = PytorchTree.locate(root)
            cov = addable_ops(tree, coverage(tree))
        if format_ == CoverageFormat.json:
            import json

            text = json.dumps(cov.as_dict(), indent=2) + "\n"
        elif format_ == CoverageFormat.html:
            text = coverage_html(cov)
        else:
            width = shutil.get_terminal_size((80, 24)).columns  # COLUMNS, else the terminal's, else 80
            text = coverage_table(cov, markdown=format_ == CoverageFormat.markdown, width=width, limit=None if all_ else limit or 20)
        if output is not None:
            try:
                write_whole(output, text.encode("utf-8"), replace=force)  # whole or not at all
            except FileExistsError:
                raise BadInput(f"--output {output}: the file exists; name a new file, or add --force to replace it.") from None
            except OSError as exc:
                raise BadInput(f"--output {output}: cannot write it ({exc.strerror}); nothing written.") from None
            err.print(f"wrote {output} ({len(cov.ops)} ops).")
        else:
            write_out(text)
    except MpsgenError as exc:
        fail(exc)


@app.command("doctor")
def doctor_cmd(root: Optional[Path] = RootOption) -> None:
    """Check the set-up MPS work needs and say how to fix each miss: the checkout and its
    version, the files mpsgen edits, their git state, build folder, ninja, clang-format, what
    `mpsgen try` needs (a C++17 compiler, torch), and on a Mac the Metal toolchain and
    torch.mps. Exit 0 when the needed checks pass.

    Example: mpsgen doctor --root ~/pytorch"""
    from mpsgen.doctor import exit_status, run_doctor

    checks = run_doctor(root)
    for c in checks:
        line = f"{c.status:<5} {c.name}: {c.detail}"
        if c.fix and c.status != "ok":
            line += f"\n      fix: {c.fix}"
        out.print(line)
    code = exit_status(checks)
    err.print("doctor: ready." if code == 0 else "doctor: fix the FAIL lines above first.")
    raise typer.Exit(code)


@app.command("recover")
def recover_cmd(
    resume: bool = typer.Option(False, "--resume", help="finish the interrupted change: write the files it had not written yet"),
    abort: bool = typer.Option(False, "--abort", help="roll the interrupted change back: restore the files it had written"),
    root: Optional[Path] = RootOption,
) -> None:
    """Finish or roll back a change that a kill or a power loss cut short.

    mpsgen journals every change it applies (in the checkout's .git folder) until the last
    file is on disk; a change cut short is refused by the next new-op or migrate and reported
    by `mpsgen check`. Without a flag this shows each file's state.

    Example: mpsgen recover --abort"""
    from mpsgen.journal import Journal, remove_cut_short, writer_lock

    try:
        if resume and abort:
            raise BadInput("--resume and --abort: give one of them (finish the change, or roll it back).")
        tree = PytorchTree.locate(root)
        with writer_lock(tree.root):  # (a journal of a live write is not an interrupted change)
            journal = Journal.find(tree.root)
            if journal is None:
                stale = remove_cut_short(tree.root)  # (a kill while the journal itself was written)
                if stale is not None:
                    err.print(f"removed {stale}, a journal cut short before any file of the tree was touched; nothing else to recover.")
                    return
                err.print(f"nothing to recover: no interrupted mpsgen change in {tree.root}.")
                return
            if not (resume or abort):
                out.print(journal.summary() + ":")
                for s in journal.states():
                    out.print(f"  {s.state:<8} {s.entry.path}")
                err.print("finish it with --resume, or roll it back with --abort.")
                raise typer.Exit(1)
            done = journal.resume() if resume else journal.abort()
        verb = "finished" if resume else "rolled back"
        err.print(f"{verb} the interrupted change ({len(done)} file(s) {'written' if resume else 'restored'}).")
    except MpsgenError as exc:
        fail(exc)


@app.command("tutorial")
def tutorial_cmd(
    yes: bool = typer.Option(False, "--yes", "-y", help="run straight through, without waiting between steps"),
    keep: Optional[Path] = typer.Option(None, "--keep", help="build the practice tree here (a new or empty folder) and keep it"),
) -> None:
    """A guided first MPS op on a practice tree: explain an op, add it with new-op, see the diff,
    check it, break it and see check catch it.

    Example: mpsgen tutorial"""
    import subprocess

    from mpsgen.practice import build_practice_tree
    from mpsgen.tutorial import break_registration, steps

    if keep is not None and (keep.is_file() or keep.is_symlink() or (keep.is_dir() and any(keep.iterdir()))):
        fail(BadInput(f"--keep {keep}: it exists and is not an empty folder; the practice tree would overwrite it."))
    interactive = not yes and sys.stdin.isatty()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mpsgen-tutorial-") as tmp:
        root, _real = build_practice_tree(keep or Path(tmp) / "pytorch")
        out.print(f"A practice PyTorch tree is at {root}: mpsgen's own sample kernels with torch 2.13's real yaml and test lists.\n")
        for step in steps(root):
            out.print(Text(step.title, style="bold"))
            out.print(step.say)
            if step.action == "break":
                out.print(f"  ({break_registration(root)})")
            if step.args:
                out.print(Text("$ mpsgen " + " ".join(step.args), style="cyan"))
                proc = subprocess.run([sys.executable, "-m", "mpsgen", *step.args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
                sys.stdout.write(proc.stdout)
                sys.stdout.write(proc.stderr)
                if proc.returncode not in step.expect:
                    fail(MpsgenError(f"tutorial step {step.title!r} ended with exit status {proc.returncode}; expected {step.expect}."))
            out.print("")
            if interactive:
                try:
                    if input("Enter to go on, q to stop: ").strip().lower() == "q":
                        break
                except EOFError:
                    interactive = False
        out.print("Done." + (f" The practice tree stays at {root}." if keep else " The practice tree is removed."))


@app.command("try")
def try_cmd(
    target: str = typer.Argument(..., metavar="OP|SPEC", help="an op with a shipped spec (acosh) or a spec file"),
    dtypes: Optional[str] = typer.Option(None, "--dtypes", metavar="LIST", help="only these input dtypes, comma-separated (float32,int64 or float,long)"),
    samples: int = typer.Option(64, "--samples", metavar="N", help="random values per dtype, beside the edge values"),
) -> None:
    """Run a spec's functor on this machine's CPU (compiled against mpsgen's model of Metal) and
    compare it with PyTorch's CPU op for every registered dtype: no Mac needed. Exit 1 on a
    mismatch, 2 when the functor uses something the model does not cover.

    Example: mpsgen try heaviside"""
    from mpsgen.trial import run_trial, table

    try:
        path = Path(target)
        kernel_spec = resource_dir("specs") / "kernels" / f"{target}.yaml"
        if not path.exists() and check_name(target, "OP") is None and kernel_spec.is_file():
            path = kernel_spec
        if _is_kernel_spec(path):
            _try_kernel(path, dtypes)
            return
        reduction = _reduction_spec_path(target, path)
        if reduction is not None:
            _try_reduction(reduction, dtypes)
            return
        if not path.exists() and check_name(target, "OP") is None:
            path = resource_dir("specs") / f"{target}.yaml"
            if not path.is_file():
                raise BadInput(f"{target}: no spec file by that name, and mpsgen ships no specs/{target}.yaml.")
        path = shipped_spec_path(path)
        spec = load_spec(path, display=str(path))
        if samples < 1 or samples > 100_000:
            raise BadInput("--samples must be between 1 and 100000.")
        wanted = {d.strip().replace("torch.", "") for d in dtypes.split(",") if d.strip()} if dtypes else None
        with busy(f"compiling {spec.name}_functor (cached after the first run) and comparing it with torch's CPU op..."):
            result = run_trial(spec, dtypes=wanted, samples=samples)
    except MpsgenError as exc:
        fail(exc)
    write_out(table(result))
    raise typer.Exit(0 if result.ok else 1)


def _is_kernel_spec(path: Path) -> bool:
    from mpsgen.kernelspec import is_kernel_spec_text

    try:
        return path.is_file() and path.suffix in (".yaml", ".yml") and is_kernel_spec_text(read_bounded(path, "spec file", limit=1024 * 1024).decode("utf-8", "replace"))
    except (OSError, MpsgenError):
        return False


def _kernel_spec_problems(path: Path) -> list[str]:
    """A kernel spec's problems: its keys, and its body compiled against mpsgen's Metal model
    with the op's schema as torch gives it (new-kernel compiles it with the tree's)."""
    from mpsgen.errors import SpecErrors
    from mpsgen.kernel_trial import check_kernel_body, torch_signature
    from mpsgen.kernelspec import load_kernel_spec
    from mpsgen.trial import import_torch

    try:
        spec = load_kernel_spec(path, display=str(path))
    except SpecErrors as exc:
        return [f"{loc}: {msg}" for loc, msg in exc.problems]
    torch = import_torch()
    if torch is None:
        err.print(f"note: {path}: without torch the body is not compiled here (new-kernel compiles it with the tree's schema).")
        return []
    missing = [f"{path}: try_inputs names aten::{op}, which torch {torch.__version__} does not have."
               for op, _args, _which in spec.try_inputs.values() if getattr(torch.ops.aten, op, None) is None]
    try:
        return missing + check_kernel_body(spec, torch_signature(torch, spec))
    except MpsgenError as exc:  # (its message names the spec file when it is about it)
        return missing + [str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}"]


def _try_kernel(path: Path, dtypes: Optional[str]) -> None:
    """``mpsgen try`` of a kernel spec: the body once per output element, against torch's CPU op."""
    from mpsgen.kernel_trial import kernel_table, run_kernel_trial

    spec = kernel_spec_for(None, path, None, dtypes)
    with busy(f"compiling {spec.kernel} (cached after the first run) and comparing it with torch's CPU op..."):
        result = run_kernel_trial(spec)
    write_out(kernel_table(result))
    raise typer.Exit(1 if result.failures else 0)


def _reduction_spec_path(target: str, path: Path) -> Path | None:
    """The reduction spec ``try`` runs: a spec file of ``kind: reduction``, or the shipped one
    serving the op (``specs/reductions/``: prod; var, std, var_mean, std_mean)."""
    from mpsgen.reduction import is_reduction_spec_text, shipped_reduction_spec

    if path.is_file() and path.suffix in (".yaml", ".yml"):
        text = read_bounded(path, "spec file", limit=1024 * 1024).decode("utf-8", "replace")
        return path if is_reduction_spec_text(text) else None
    if not path.exists() and check_name(target, "OP") is None:
        return shipped_reduction_spec(target)
    return None


def _reduction_spec_problems(path: Path) -> list[str]:
    """A reduction spec's problems: its keys, and its kernel written against the installed
    torch's c10/metal/reduction_utils.h and compiled against mpsgen's Metal model."""
    from mpsgen.errors import SpecErrors
    from mpsgen.reduction import load_reduction_spec
    from mpsgen.reduction_kernel import kernel_source, read_helpers
    from mpsgen.reduction_trial import build, installed_header
    from mpsgen.toolchain import compiler
    from mpsgen.trial import import_torch

    try:
        spec = load_reduction_spec(path, display=str(path))
    except SpecErrors as exc:
        return [f"{loc}: {msg}" for loc, msg in exc.problems]
    torch, cxx = import_torch(), compiler()
    if torch is None or cxx is None:
        err.print(f"note: {path}: without torch and a C++ compiler its kernel is not compiled here (mpsgen try compiles it).")
        return []
    try:
        header = installed_header(torch)
        text = header.read_text(encoding="utf-8")
        build(spec, text, kernel_source(spec, read_helpers(text), str(header)), cxx)
    except MpsgenError as exc:
        return [str(exc) if str(exc).startswith(str(path)) else f"{path}: {exc}"]
    return []


def _try_reduction(path: Path, dtypes: Optional[str]) -> None:
    """``mpsgen try`` of a reduction spec: the kernel, threadgroup by threadgroup, against torch's CPU op."""
    from mpsgen.reduction import REDUCTION_DTYPES, load_reduction_spec
    from mpsgen.reduction_trial import run_reduction_trial, table

    spec = load_reduction_spec(path, display=str(path))
    pairs = None
    if dtypes:
        wanted = {d.strip().replace("torch.", "") for d in dtypes.split(",") if d.strip()}
        pairs = {(i, o) for i, o in spec.dtypes if i in wanted or REDUCTION_DTYPES[i] in wanted}
        if not pairs:
            raise BadInput(f"--dtypes {dtypes}: no input type the spec registers ({', '.join(dict.fromkeys(i for i, _ in spec.dtypes))}).")
    with busy(f"compiling {spec.kernel_function} (cached after the first run) and running it threadgroup by threadgroup..."):
        result = run_reduction_trial(spec, pairs=pairs)
    write_out(table(result))
    raise typer.Exit(1 if result.failures else 0)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("mpsgen")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        sys.stdout.write(f"mpsgen {v}\n")
        raise typer.Exit(0)


@app.callback()
def _app_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version and exit"),
) -> None:
    """Write the boilerplate of a Metal (MPS) operator in a PyTorch checkout, and check MPS dispatch."""


def main() -> None:
    """Run the app; an interrupt before anything is written ends with a message and exit 130
    (not "Aborted!" or a traceback from an import inside a command)."""
    import signal

    from typer._click import exceptions as click_exceptions

    if hasattr(signal, "SIGXFSZ"):
        # over a file-size limit (ulimit -f) a write should fail (EFBIG, and the staged files are
        # removed) rather than kill the process half-way through staging
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _APPLYING.clear()
    _REPORTED.clear()
    try:
        code = app(standalone_mode=False)
        if code == 130 and not _REPORTED:  # typer turns a Ctrl-C in a command into exit 130, silently
            err.print(_interrupt_message())
    except (KeyboardInterrupt, typer.Abort):
        err.print(_interrupt_message())
        sys.exit(130)
    except click_exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)

    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except RecursionError:
        err.print("error: the input is nested too deeply to read; nothing written.")
        sys.exit(2)
    except OSError as exc:  # the system refused a path (a name too long, a loop of symlinks, ...)
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}; nothing written. Check the path and try again.")
        sys.exit(2)
    except BaseException as exc:
        # a library may wrap an interrupt in its own error (libcst re-raises a KeyboardInterrupt
        # from inside its code generator as an error carrying a dump of the tree)
        if _interrupted(exc):
            err.print(_interrupt_message())
            sys.exit(130)
        raise
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted(exc: BaseException | None) -> bool:
    seen = 0
    while exc is not None and seen < 50:
        if isinstance(exc, KeyboardInterrupt):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


if __name__ == "__main__":
    main()

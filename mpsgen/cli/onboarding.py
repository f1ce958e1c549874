"""The onboarding and overview commands: ``explain`` (one op), ``coverage`` (the whole tree),
``doctor`` (the set-up), ``tutorial`` and ``demo`` (a practice tree). Each reads its flags, calls
one report and prints it.

The reports, the practice tree, the spec reader and what they import are imported inside the
commands, for start-up speed: ``--help`` and the other commands do not pay for them."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from mpsgen.cli.options import RootOption
from mpsgen.cli.output import Text, busy, err, fail, out, print_diff, write_out
from mpsgen.core.errors import BadInput, MpsgenError, Refused
from mpsgen.core.files import write_whole
from mpsgen.core.resources import resource_dir
from mpsgen.tree import PytorchTree


class ExplainFormat(str, Enum):
    text = "text"
    json = "json"


def explain_cmd(
    op: str = typer.Argument(..., metavar="OP", help="aten op name, e.g. acosh or heaviside"),
    format_: ExplainFormat = typer.Option(ExplainFormat.text, "--format", help="text or json"),
    root: Optional[Path] = RootOption,
) -> None:
    """Everything about one op: its rows and their MPS status, stub, kernels, registered dtypes,
    the tests holding it back, and the mpsgen command for the next step.

    Example: mpsgen explain acosh"""
    from mpsgen.report.explain import explain_op, op_text
    from mpsgen.spec.op import check_name

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

    from mpsgen.report.explain import addable_ops, coverage, coverage_html, coverage_table

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


def doctor_cmd(root: Optional[Path] = RootOption) -> None:
    """Check the set-up MPS work needs and say how to fix each miss: the checkout and its
    version, the files mpsgen edits, their git state, build folder, ninja, clang-format, what
    `mpsgen try` needs (a C++17 compiler, torch), and on a Mac the Metal toolchain and
    torch.mps. Exit 0 when the needed checks pass.

    Example: mpsgen doctor --root ~/pytorch"""
    from mpsgen.report.doctor import exit_status, run_doctor

    checks = run_doctor(root)
    for c in checks:
        line = f"{c.status:<5} {c.name}: {c.detail}"
        if c.fix and c.status != "ok":
            line += f"\n      fix: {c.fix}"
        out.print(line)
    code = exit_status(checks)
    err.print("doctor: ready." if code == 0 else "doctor: fix the FAIL lines above first.")
    raise typer.Exit(code)



def tutorial_cmd(
    yes: bool = typer.Option(False, "--yes", "-y", help="run straight through, without waiting between steps"),
    keep: Optional[Path] = typer.Option(None, "--keep", help="build the practice tree here (a new or empty folder) and keep it"),
) -> None:
    """A guided first MPS op on a practice tree: explain an op, add it with new-op, see the diff,
    check it, break it and see check catch it.

    Example: mpsgen tutorial"""
    import subprocess

    from mpsgen.report.practice import build_practice_tree, commit_practice_tree, what_it_holds
    from mpsgen.report.tutorial import break_registration, steps

    if keep is not None and (keep.is_file() or keep.is_symlink() or (keep.is_dir() and any(keep.iterdir()))):
        fail(BadInput(f"--keep {keep}: it exists and is not an empty folder; the practice tree would overwrite it."))
    interactive = not yes and sys.stdin.isatty()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mpsgen-tutorial-") as tmp:
        root, real = build_practice_tree(keep or Path(tmp) / "pytorch")
        said = f"A practice PyTorch tree is at {root}: {what_it_holds(real)}."
        if keep is not None:  # (kept: in git, so that `git diff` shows what the tutorial wrote)
            why_not = commit_practice_tree(root)
            said += " It is in git, its files committed." if why_not is None else f" It is not in git ({why_not})."
        out.print(said + "\n")
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



def demo(
    op: str = typer.Option("heaviside", "--op", help="an op with a shipped spec: heaviside, special_ndtri (new-op), acosh, sub (migrate), atan2"),
    keep: Optional[Path] = typer.Option(None, "--keep", help="build the practice tree here and keep it"),
) -> None:
    """Build a practice tree in a temporary folder and show the diff mpsgen makes there: new-op
    for an op MPS lacks, migrate-from-mpsgraph for one on MPSGraph.

    Example: mpsgen demo --op acosh"""
    from mpsgen.report.explain import explain_op
    from mpsgen.report.practice import build_practice_tree, commit_practice_tree, what_it_holds
    from mpsgen.spec.op import load_spec

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
            err.print(f"practice tree: {where}: {what_it_holds(real)}")
            if keep is not None:
                why_not = commit_practice_tree(root)
                err.print("  in git, its files committed: `git diff` and `mpsgen check --changed` work there" if why_not is None
                          else f"  not in git ({why_not}): `git diff` and `mpsgen check --changed` need it in git")
            at = f" --root {root}" if keep is not None else ""  # a temporary tree is gone by the time one could type it
            tree = PytorchTree(root)
            status = explain_op(tree, op).status
            if status == "missing":
                from mpsgen.plan.newop import plan_new_op

                command = f"mpsgen new-op {op} --spec specs/{op}.yaml"
                err.print(f"$ {command} --dry-run{at}")
                changeset = plan_new_op(tree, spec)
            elif status == "mps-kernel":
                from mpsgen.plan.migrate import plan_migrate

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

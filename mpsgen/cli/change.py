"""Showing a change and writing it: warnings, problems and the diff of a changeset, then the
change applied (with the side files that belong to it), written as a patch, or only shown;
the next steps after it. Every change command ends here."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from mpsgen.cli.output import APPLYING, Text, err, print_diff
from mpsgen.core.errors import BadInput, MpsgenError
from mpsgen.core.files import write_whole

if TYPE_CHECKING:
    from mpsgen.patch.changeset import Changeset


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
    APPLYING.append(changeset)  # (an interrupt from here on reads what is on disk: changeset.applied)
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

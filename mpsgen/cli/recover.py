"""``mpsgen recover``: finish or roll back a change that a kill or a power loss cut short.

The journal is imported inside the command, for start-up speed."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from mpsgen.cli.options import RootOption
from mpsgen.cli.output import err, fail, out
from mpsgen.core.errors import BadInput, MpsgenError
from mpsgen.tree import PytorchTree


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
    from mpsgen.patch.journal import Journal, remove_cut_short, writer_lock

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

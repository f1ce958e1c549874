"""Rules on mpsgen's own changes to a tree: a change cut short while writing its files, as its
journal left behind tells (MPS016; :mod:`mpsgen.patch.journal`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from mpsgen.check.model import ERROR, Finding, rule
from mpsgen.core.errors import MpsgenError
from mpsgen.tree import journal_path
from mpsgen.tree.facts import Facts


# -- MPS016 -------------------------------------------------------------------------------
@rule(
    "MPS016",
    "interrupted-change",
    ERROR,
    "an mpsgen change to this tree was cut short (a kill or a power loss) while writing its files",
    """
mpsgen journals each change it applies (in the checkout's .git folder, or .mpsgen-journal.json
at its top without one) from before the first file is written until the last one is on disk.
A journal left behind means the process was killed or the machine lost power in between: some
files may hold the new content and others the old, a tree that may not build, and that the
other rules may not see as broken. A journal whose writer is still running (it holds the
lock mpsgen takes while writing) is a write in progress, not reported.

Fix: `mpsgen recover` lists each file's state; `mpsgen recover --resume` writes the rest of the
change, `mpsgen recover --abort` restores the files it had written.
""",
)
def interrupted_change(f: Facts) -> Iterator[Finding]:
    root = f.index.root
    if not os.path.exists(journal_path(root)):  # (the common case: a stat, no pathlib)
        return
    from pathlib import Path  # (local: check loads pathlib only where a journal is left)

    from mpsgen.patch.journal import Journal, live_writer, recover_command  # (local: check loads patch/ only where a journal is left)

    if live_writer(root) is not None:  # a write in progress: its journal is no interrupted change
        return
    try:
        journal = Journal.find(Path(root))
    except MpsgenError as exc:
        yield Finding(".git", 1, 0, "MPS016", ERROR, str(exc))
        return
    if journal is None:
        return
    states = journal.states()
    paths = tuple(s.entry.path for s in states)
    written = sum(s.state == "written" for s in states)
    what = f"`mpsgen {journal.command}`" if journal.command else "an mpsgen change"
    said = {"written": "written", "pending": "not written yet", "changed": "changed since by someone else"}
    for s in states:
        yield Finding(
            s.entry.path, 1, 0, "MPS016", ERROR,
            f"this file is {said[s.state]} by {what}, which was cut short ({written} of {len(states)} file(s) "
            f"written): `{recover_command(root, '--resume')}` finishes it, `--abort` rolls it back",
            locate=lambda paths=paths: ((p, 1) for p in paths),
        )

"""The record of a change being applied, so that one cut short by a kill or a power loss is
recognised, and finished or rolled back, on a later run.

Before any file of the tree is touched, :meth:`Journal.begin` writes (whole, flushed) a small
JSON file in the checkout's git folder (``.git/mpsgen-journal.json``; beside the tree's files
as ``.mpsgen-journal.json`` when there is no git folder), like git's own ``index.lock``. It
names, for every file the change writes, the temporary file holding the new content, the
hard link keeping the old content once the rename replaces it, and the SHA-256 of both. The
journal is removed once every rename is on disk. Any file left with content other than the
old or the new one was changed since by someone else, and recovery leaves it to the user.

One writer at a time: a writer (and ``recover``) holds an exclusive ``flock`` on the folder
holding the journal (:func:`writer_lock`; no lock file is made) from its last conflict check
to its last rename. The kernel drops it when the process ends, however it ends, so a journal
whose folder is locked is a live write (its writer's pid is in it), one whose folder is not
is an interrupted one (:func:`live_writer`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from mpsgen.core.errors import BadInput, Refused
from mpsgen.core.files import sync_folder
from mpsgen.tree import journal_path

FORMAT = 1
WRITER_WAIT = 10.0  # seconds a second writer (or recover) waits for a live one to finish


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class JournalEntry:
    path: str  # the tree's file, relative to the root
    new_copy: str  # the staged new content, relative to the root
    old_copy: str  # a hard link (or copy) of the old content, relative to the root
    old: str | None  # SHA-256 of the old content; None for a file the change creates
    new: str  # SHA-256 of the new content


@dataclass(frozen=True)
class FileState:
    entry: JournalEntry
    state: str  # "written" | "pending" | "changed" (neither old nor new: someone else's edit)
    new_copy_ok: bool  # the staged new content is there, whole
    old_copy_ok: bool  # the kept old content is there, whole


@dataclass(frozen=True)
class Journal:
    root: Path
    command: str
    entries: tuple[JournalEntry, ...]
    pid: int | None = None  # the writer's process (None: a journal written before mpsgen named it)

    @property
    def path(self) -> Path:
        return Path(journal_path(self.root))

    # -- while applying ----------------------------------------------------------------------
    @classmethod
    def plan(cls, root: Path, command: str, files: list[tuple[str, bytes | None, bytes]]) -> Journal:
        """The journal of writing ``files`` ((relpath, old bytes or None for a new file, new
        bytes)), with fresh names for the staged and kept copies beside each file."""
        entries = []
        for rel, old, new in files:
            folder, _slash, name = rel.rpartition("/")
            prefix = f"{folder}/" if folder else ""
            token = secrets.token_hex(4)
            entries.append(
                JournalEntry(
                    path=rel,
                    new_copy=f"{prefix}.{name}.{token}.mpsgen",
                    old_copy=f"{prefix}.{name}.{token}.mpsgen-old",
                    old=None if old is None else sha256(old),
                    new=sha256(new),
                )
            )
        return cls(root, command, tuple(entries), os.getpid())

    def begin(self) -> None:
        """Write the journal, whole and on disk, before anything of the tree is touched: to
        ``<journal>.new`` (a fixed name: a kill before the rename leaves a file the next run
        recognises and removes, the tree untouched), then renamed into place."""
        data = {"mpsgen_journal": FORMAT, "command": self.command, "pid": self.pid, "files": [asdict(e) for e in self.entries]}
        path = self.path
        new = cut_short_path(self.root)
        with open(new, "wb") as fh:
            fh.write((json.dumps(data, indent=1) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(new, path)
        sync_folder(str(path.parent))

    def end(self) -> None:
        """The change is whole on disk (or was rolled back): drop the kept copies, then the journal."""
        for e in self.entries:
            _unlink(self.root / e.old_copy)
            _unlink(self.root / e.new_copy)
        _unlink(self.path)
        sync_folder(str(self.path.parent))

    # -- after an interruption ---------------------------------------------------------------
    @classmethod
    def find(cls, root: Path) -> Journal | None:
        """The journal of a change to ``root`` that did not finish, if there is one."""
        path = Path(journal_path(root))
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise BadInput(f"{path}: cannot read mpsgen's journal of an interrupted change ({exc.strerror}).") from None
        try:
            data = json.loads(raw)
            if data.get("mpsgen_journal") != FORMAT:
                raise ValueError("an unknown format")
            entries = tuple(
                JournalEntry(**{k: None if k == "old" and f[k] is None else str(f[k]) for k in JournalEntry.__dataclass_fields__})
                for f in data["files"]
            )
            for e in entries:
                for rel in (e.path, e.new_copy, e.old_copy):
                    if rel.startswith("/") or ".." in rel.split("/") or "\\" in rel or "\0" in rel:
                        raise ValueError(f"a path outside the tree ({rel!r})")
            pid = data.get("pid")
            return cls(root, str(data.get("command", "")), entries, pid if isinstance(pid, int) and not isinstance(pid, bool) else None)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BadInput(
                f"{path}: mpsgen's journal of an interrupted change is not readable ({exc}).",
                hint="Check the files it names by hand (git status, git diff), then delete the journal.",
            ) from None

    def states(self) -> list[FileState]:
        out = []
        for e in self.entries:
            now = _digest(self.root / e.path)  # None: no such file
            state = "written" if now == e.new else "pending" if now == e.old else "changed"
            out.append(
                FileState(
                    e, state,
                    new_copy_ok=_digest(self.root / e.new_copy) == e.new,
                    old_copy_ok=e.old is None or _digest(self.root / e.old_copy) == e.old,
                )
            )
        return out

    def summary(self) -> str:
        """One sentence: what was being done and how far it got."""
        states = self.states()
        written = sum(s.state == "written" for s in states)
        changed = [s.entry.path for s in states if s.state == "changed"]
        what = f"`mpsgen {self.command}`" if self.command else "an mpsgen change"
        text = f"{what} was interrupted while writing {self.root}: {written} of {len(states)} file(s) written"
        if changed:
            text += f"; changed since by someone else: {', '.join(changed)}"
        return text

    def resume(self) -> list[str]:
        """Finish the change: put the staged new content in place of every file not yet written."""
        return self._settle(
            "pending", "finish", lambda s: s.new_copy_ok, _put_new,
            "the interrupted change cannot be finished: the new content of {} was not staged whole before the "
            "interruption; nothing written.",
            f"Roll it back with `{recover_command(self.root, '--abort')}`, then run the command again.",
        )

    def abort(self) -> list[str]:
        """Roll the change back: put the kept old content in place of every file written."""
        return self._settle(
            "written", "roll back", lambda s: s.old_copy_ok, _put_old,
            "the interrupted change cannot be rolled back: the old content of {} was not kept; nothing written.",
            f"Finish it with `{recover_command(self.root, '--resume')}`, or restore the files with git (git checkout -- FILE).",
        )

    def _settle(self, state: str, verb: str, ready, move, refusal: str, hint: str) -> list[str]:
        """Move every file in ``state`` (``move(root, entry)``), after checking that none was
        changed by someone else and that each has the copy it needs (``ready``); then drop
        the journal. Nothing moves when a check fails."""
        states = self.states()
        _refuse_changed(self, states, verb)
        missing = [s.entry.path for s in states if s.state == state and not ready(s)]
        if missing:
            raise Refused(refusal.format(", ".join(missing)), hint=hint)
        done = []
        for s in states:
            if s.state == state:
                move(self.root, s.entry)
                done.append(s.entry.path)
        self._sync(states)
        self.end()
        return done

    def _sync(self, states: list[FileState]) -> None:
        for folder in {str((self.root / s.entry.path).parent) for s in states}:
            sync_folder(folder)


def cut_short_path(root: Path) -> Path:
    """Where :meth:`Journal.begin` writes the journal before renaming it into place: a file
    left there means a kill came before any file of the tree was touched."""
    return Path(journal_path(root) + ".new")


def remove_cut_short(root: Path) -> Path | None:
    """Remove a journal cut short while it was written; the path removed, or None."""
    stale = cut_short_path(root)
    if not stale.is_file():
        return None
    _unlink(stale)
    return stale


@contextlib.contextmanager
def writer_lock(root: Path, wait: float | None = None):
    """Be the one mpsgen writing to the tree at ``root``: an exclusive ``flock`` on the folder
    holding its journal, held for the duration. A live writer holding it is waited for up to
    ``wait`` seconds (:data:`WRITER_WAIT`), then refused, named. Without ``fcntl`` (not a POSIX
    system) there is no lock; the conflict checks still guard."""
    try:
        import fcntl  # (local: check --fix and its lintrunner output load no fcntl; POSIX only)
    except ImportError:
        yield
        return
    wait = WRITER_WAIT if wait is None else wait
    fd = os.open(os.path.dirname(journal_path(root)), os.O_RDONLY)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Refused(
                        f"{_writer(root)} has been writing to {root} for {wait:.0f} s (a write in progress, not an "
                        "interrupted one); nothing written.",
                        hint="Wait for it to finish, then run the command again.",
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def live_writer(root: Path | str) -> str | None:
    """Who is writing to the tree at ``root`` now ("another mpsgen (pid N, `mpsgen CMD`)"), or
    None: no process holds :func:`writer_lock`, so a journal there is an interrupted change."""
    try:
        import fcntl  # (local: check --fix and its lintrunner output load no fcntl; POSIX only)
    except ImportError:
        return None
    try:
        fd = os.open(os.path.dirname(journal_path(root)), os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _writer(Path(root))
    except OSError:
        return None
    finally:
        os.close(fd)  # (and the shared lock with it)
    return None


def _writer(root: Path) -> str:
    """The live writer, named by its journal when it has written one."""
    try:
        journal = Journal.find(root)
    except BadInput:
        journal = None
    if journal is None or journal.pid is None:
        return "another mpsgen"
    return f"another mpsgen (pid {journal.pid}, `mpsgen {journal.command}`)" if journal.command else f"another mpsgen (pid {journal.pid})"


def wait_for_writer(root: Path, wait: float | None = None) -> None:
    """Wait up to ``wait`` seconds (:data:`WRITER_WAIT`) for a live writer of ``root`` to finish;
    refuse, naming it, if it has not."""
    wait = WRITER_WAIT if wait is None else wait
    deadline = time.monotonic() + wait
    while (who := live_writer(root)) is not None:
        if time.monotonic() > deadline:
            raise Refused(
                f"{who} is writing to {root} (a write in progress, not an interrupted one); nothing written.",
                hint="Wait for it to finish, then run the command again.",
            )
        time.sleep(0.05)


def refuse_interrupted(root: Path, *, tidy: bool = False) -> None:
    """Refuse to plan or write on a tree where an earlier change was cut short. A live write
    is waited for (:func:`wait_for_writer`) first. ``tidy`` (a writer, holding the tree's
    lock): remove a journal that a kill cut short while it was being written
    (``<journal>.new``; nothing of the tree was touched then)."""
    if tidy:
        remove_cut_short(root)
    else:
        wait_for_writer(root)
    journal = Journal.find(root)
    if journal is not None:
        raise Refused(
            f"{journal.summary()}; nothing written.",
            hint=f"Finish it with `{recover_command(root, '--resume')}`, or roll it back with "
            f"`{recover_command(root, '--abort')}`; `{recover_command(root)}` shows each file's state.",
        )


def _put_new(root: Path, entry: JournalEntry) -> None:
    if entry.old is None:  # a new file: never replaces one that appeared
        os.link(root / entry.new_copy, root / entry.path)
    else:
        os.replace(root / entry.new_copy, root / entry.path)


def _put_old(root: Path, entry: JournalEntry) -> None:
    if entry.old is None:  # a file the change created
        os.unlink(root / entry.path)
    else:
        os.replace(root / entry.old_copy, root / entry.path)


def recover_command(root: Path, flag: str = "") -> str:
    """The `mpsgen recover` command line for the tree at ``root``, ready to paste."""
    import shlex  # (local: check --fix and its lintrunner output load no shlex)

    return " ".join(["mpsgen", "recover", *([flag] if flag else []), "--root", shlex.quote(str(root))])


def keep_old(root: Path, entry: JournalEntry) -> None:
    """Keep the old content of ``entry``'s file under its ``old_copy`` name: a hard link (no
    copy, the rename leaves it the only name of the old file), or a copy where links fail."""
    src, dst = root / entry.path, root / entry.old_copy
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
        with open(dst, "rb+") as fh:
            os.fsync(fh.fileno())


def _refuse_changed(journal: Journal, states: list[FileState], verb: str) -> None:
    changed = [s for s in states if s.state == "changed"]
    if changed:
        places = "; ".join(
            f"{s.entry.path} (mpsgen's new content: {s.entry.new_copy if s.new_copy_ok else 'not kept'}, "
            f"the old one: {s.entry.old_copy if s.old_copy_ok else 'not kept'})"
            for s in changed
        )
        raise Refused(
            f"cannot {verb} the interrupted change: {places} changed since, neither mpsgen's old nor new content; "
            "nothing written.",
            hint=f"Settle those files by hand (the copies named are beside them), then delete {journal.path}.",
        )


def _digest(path: Path) -> str | None:
    try:
        return sha256(path.read_bytes())
    except OSError:
        return None


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass

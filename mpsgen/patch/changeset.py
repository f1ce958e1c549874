"""A set of file edits computed in memory, then shown, exported or applied all-or-nothing.

Applying re-reads every file first and refuses if any changed since the plan was made;
then writes each new content to a temporary file beside its target and renames them into
place, restoring the originals if any step fails.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import signal
import threading
import stat
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.core.errors import BadInput, MpsgenError, Refused
from mpsgen.core.files import sync_folder, write_whole
from mpsgen.patch.journal import Journal, JournalEntry, keep_old, recover_command, refuse_interrupted, writer_lock
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import SourceFile


def _lines(text: str) -> list[str]:
    """Lines with their endings, split at "\\n" only (``str.splitlines`` would also split at
    form feeds and other separators that C sources may hold inside a line)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _edit_script(a: list[str], b: list[str]) -> list[tuple[str, str]]:
    """(" " | "-" | "+", line) for turning ``a`` into ``b``, with every run of pure
    insertions or deletions slid down as far as the lines allow (as git does), so a block
    added after a ``};`` reads as that block, not as its tail plus the previous one's."""
    script: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag == "equal":
            script += [(" ", x) for x in a[i1:i2]]
        else:
            script += [("-", x) for x in a[i1:i2]] + [("+", x) for x in b[j1:j2]]
    i = 0
    while i < len(script):
        op = script[i][0]
        if op == " ":
            i += 1
            continue
        j = i
        while j < len(script) and script[j][0] == op:
            j += 1
        pure = (i == 0 or script[i - 1][0] == " ") and (j == len(script) or script[j][0] == " ")
        if pure and j < len(script) and script[j][1] == script[i][1]:
            # the context line after the run equals its first line: the run moves down one
            script[i], script[j] = (" ", script[i][1]), (op, script[j][1])
            i += 1
        else:
            i = j
    return script


def _range(start: int, length: int) -> str:
    """A unified-diff range from a 0-based start ("after line N" when empty)."""
    if length == 1:
        return f"{start + 1}"
    return f"{start if length == 0 else start + 1},{length}"


_KEEP = 50  # unchanged lines kept beside a change: room for context and for sliding


def _regions(a: list[str], b: list[str]) -> list[tuple[int, int, int, int]]:
    """Slices (a_lo, a_hi, b_lo, b_hi) holding the changes, cut at long unchanged runs, so
    the line-by-line work stays proportional to what changed, not to the file."""
    regions = []
    a_lo = b_lo = 0
    changed = False
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            changed = True
        elif i2 - i1 > 2 * _KEEP:
            if changed:
                regions.append((a_lo, i1 + _KEEP, b_lo, j1 + _KEEP))
            a_lo, b_lo, changed = i2 - _KEEP, j2 - _KEEP, False
    if changed:
        regions.append((a_lo, len(a), b_lo, len(b)))
    return regions


def _hunks(script: list[tuple[str, str]], a_base: int, b_base: int, context: int) -> list[str]:
    changes = [k for k, (op, _) in enumerate(script) if op != " "]
    if not changes:
        return []
    groups, first = [], changes[0]
    for prev, cur in zip(changes, changes[1:]):
        if cur - prev - 1 > 2 * context:
            groups.append((first, prev))
            first = cur
    groups.append((first, changes[-1]))
    a_at, b_at, a_no, b_no = [], [], a_base, b_base
    for op, _ in script:
        a_at.append(a_no)
        b_at.append(b_no)
        a_no += op != "+"
        b_no += op != "-"
    out = []
    for g_first, g_last in groups:
        lo, hi = max(0, g_first - context), min(len(script), g_last + context + 1)
        chunk = script[lo:hi]
        a_len = sum(op != "+" for op, _ in chunk)
        b_len = sum(op != "-" for op, _ in chunk)
        out.append(f"@@ -{_range(a_at[lo], a_len)} +{_range(b_at[lo], b_len)} @@\n")
        out += [op + line for op, line in chunk]
    return out


def _unified_diff(old: list[str], new: list[str], a: str, b: str, context: int = 3) -> list[str]:
    """A unified diff computed only between the common head and tail of the two files and,
    inside that, only around the changes (the 1.4 MB OpInfo file costs milliseconds), with
    insertions placed as git places them."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    if head == len(old) == len(new):
        return []
    start = max(0, head - context)
    a_mid = old[start : len(old) - tail + min(tail, _KEEP)]
    b_mid = new[start : len(new) - tail + min(tail, _KEEP)]
    out = [f"--- {a}\n", f"+++ {b}\n"]
    for a_lo, a_hi, b_lo, b_hi in _regions(a_mid, b_mid):
        script = _edit_script(a_mid[a_lo:a_hi], b_mid[b_lo:b_hi])
        out += _hunks(script, start + a_lo, start + b_lo, context)
    return out if len(out) > 2 else []


@dataclass(frozen=True)
class FileEdit:
    source: SourceFile  # for a file the change creates: empty, and ``created`` is set
    new_text: str  # LF text; written back in the file's newline style
    created: bool = False

    @property
    def relpath(self) -> str:
        return self.source.relpath

    @property
    def new_bytes(self) -> bytes:
        return self.source.encode(self.new_text)

    @property
    def changed(self) -> bool:
        return self.created or self.new_bytes != self.source.raw

    @property
    def old_bytes(self) -> bytes | None:
        """The file's content before the change; None for a file the change creates."""
        return None if self.created else self.source.raw


@dataclass
class Changeset:
    tree: PytorchTree
    edits: list[FileEdit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was decided, for the user
    warnings: list[str] = field(default_factory=list)
    # problems that mean the result would not build, link or dispatch: the CLI refuses to
    # write (exit 1) unless --force
    blockers: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # test-list entries deliberately left, and why
    next_steps: list[str] = field(default_factory=list)  # commands to build and test the change
    # set by :meth:`apply` right after the last rename (signals held): the paths now holding the
    # change. Whoever reports an interrupt reads it to say what is on disk.
    applied: list[str] | None = None

    def add(self, source: SourceFile, new_text: str) -> None:
        for i, e in enumerate(self.edits):
            if e.relpath == source.relpath:
                self.edits[i] = FileEdit(e.source, new_text, e.created)
                return
        self.edits.append(FileEdit(source, new_text))

    def create(self, relpath: str, text: str) -> SourceFile:
        """Add a new file of the tree (refused at apply time if one appears there meanwhile).
        Returns the (empty) source it is planned from, for chained edits."""
        if self.tree.exists(relpath):
            raise Refused(f"{relpath} exists already; mpsgen creates only new files.")
        source = SourceFile(relpath, b"", "", "\n")
        self.edits.append(FileEdit(source, text, created=True))
        return source

    def current_text(self, source: SourceFile) -> str:
        """The text of a file with this changeset's edits so far (for chained edits)."""
        for e in self.edits:
            if e.relpath == source.relpath:
                return e.new_text
        return source.text

    @property
    def changed(self) -> list[FileEdit]:
        return [e for e in self.edits if e.changed]

    @property
    def empty(self) -> bool:
        return not self.changed

    # -- showing ------------------------------------------------------------------------------
    def diff(self) -> str:
        """A unified diff, ``git apply``-able at the tree root."""
        chunks = []
        for e in sorted(self.changed, key=lambda e: e.relpath):
            old = _lines(e.source.raw.decode("utf-8"))
            new = _lines(e.new_bytes.decode("utf-8"))
            body = _unified_diff(old, new, "/dev/null" if e.created else f"a/{e.relpath}", f"b/{e.relpath}")
            if not body:
                continue
            chunks.append(f"diff --git a/{e.relpath} b/{e.relpath}\n")
            if e.created:
                chunks.append("new file mode 100644\n")
            for line in body:
                if line.startswith(("--- ", "+++ ")):
                    chunks.append(line.rstrip("\n") + "\n")
                elif line.endswith("\n"):
                    chunks.append(line)
                else:
                    chunks.append(line + "\n\\ No newline at end of file\n")
        return "".join(chunks)

    # -- applying -----------------------------------------------------------------------------
    def check_unchanged(self) -> None:
        """Refuse if any file differs from the content the plan was computed from."""
        for e in self.changed:
            now = self.tree.read_fresh_bytes(e.relpath)
            if now != e.old_bytes:
                raise Refused(
                    f"{e.relpath} appeared since mpsgen planned to create it; nothing was written."
                    if e.created
                    else f"{e.relpath} changed since mpsgen read it; nothing was written.",
                    hint="Run the command again to plan against the current content.",
                )

    def check_writable(self) -> None:
        for e in self.changed:
            path = self.tree.resolve(e.relpath)
            if e.created:
                if not os.access(path.parent, os.W_OK):
                    raise BadInput(
                        f"{path.parent} is read-only: {e.relpath} cannot be created; nothing was written.",
                        hint="Make the folder writable, or use --patch FILE to write a patch instead.",
                    )
                continue
            mode = path.stat().st_mode
            if not mode & stat.S_IWUSR or not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
                raise BadInput(
                    f"{e.relpath} is read-only (mode {stat.filemode(mode)}); nothing was written.",
                    hint="Make it writable (chmod u+w) or use --patch FILE to write a patch instead.",
                )

    def apply(self, command: str = "") -> list[str]:
        """Write every changed file, or none. Returns the paths written.

        SIGINT/SIGTERM/SIGHUP that arrive while staging or renaming are held until the step is
        over (all files written, or none), then reported as :class:`Interrupted`; every temporary
        file is removed on every path. A journal (:mod:`mpsgen.patch.journal`, naming ``command``)
        is on disk from before the first file is staged until the last rename is, so that a kill
        or a power loss in between is found, and finished or rolled back, by a later run."""
        self.check_writable()
        with writer_lock(self.tree.root):
            refuse_interrupted(self.tree.root, tidy=True)
            self.check_unchanged()
            with signals_held() as held:
                written = self._apply(command)
        if held:
            raise Interrupted(
                f"interrupted ({held[0]}) while writing; the change was completed first: all {len(written)} file(s) "
                "were written, none half-way."
            )
        return written

    def _apply(self, command: str) -> list[str]:
        root = self.tree.root
        journal = Journal.plan(root, command, [(e.relpath, e.old_bytes, e.new_bytes) for e in self.changed])
        pairs = list(zip(journal.entries, self.changed))
        try:
            journal.begin()
        except OSError as exc:
            raise Refused(
                f"could not write mpsgen's journal {journal.path} ({exc.strerror}); nothing was written."
            ) from None
        try:
            for j, e in pairs:
                path = root / j.path
                fd = os.open(root / j.new_copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(e.new_bytes)
                    fh.flush()
                    os.fsync(fh.fileno())  # on disk before any rename makes it the file
                if e.created:
                    os.chmod(root / j.new_copy, _new_file_mode())
                else:
                    os.chmod(root / j.new_copy, stat.S_IMODE(path.stat().st_mode))
                    keep_old(root, j)
            sync_folders(root, journal)
            self.check_unchanged()  # last look just before the renames
        except OSError as exc:
            journal.end()
            raise Refused(f"could not stage the edits ({exc.strerror}: {exc.filename}); nothing was written.") from None
        except BaseException:
            journal.end()
            raise
        done: list[JournalEntry] = []
        try:
            for j, e in pairs:
                if e.created:  # a link fails on an existing name: never replaces a file that appeared
                    os.link(root / j.new_copy, root / j.path)
                    os.unlink(root / j.new_copy)
                else:
                    os.replace(root / j.new_copy, root / j.path)
                done.append(j)
            self.applied = [j.path for j in done]  # (the last rename is done)
        except BaseException as exc:
            stuck = []
            for j in reversed(done):
                try:
                    if j.old is None:  # a file the change created
                        os.unlink(root / j.path)
                    else:
                        os.replace(root / j.old_copy, root / j.path)
                except OSError:
                    stuck.append(j.path)
            sync_folders(root, journal)
            if stuck:  # the journal and the kept copies stay, for `mpsgen recover`
                raise Refused(
                    f"writing failed ({exc}), and restoring {', '.join(stuck)} failed too; the tree is half-changed.",
                    hint=f"Run `{recover_command(root, '--abort')}` to roll it back once the cause is fixed.",
                ) from None
            journal.end()
            if isinstance(exc, OSError):
                raise Refused(
                    f"writing {exc.filename} failed ({exc.strerror}); every file was restored to its previous content."
                ) from None
            raise
        sync_folders(root, journal)
        journal.end()
        for _j, e in pairs:
            self.tree.forget(e.relpath)
        return [j.path for j in done]

    def write_patch(self, target: Path, *, force: bool = False) -> None:
        """Write the diff to ``target``: a new file (an existing one only with ``force``), never
        a file of the tree itself that this change edits or that git tracks."""
        text = self.diff()
        resolved = target.resolve()
        root = self.tree.root
        if resolved == root or root in resolved.parents:
            rel = resolved.relative_to(root).as_posix() if resolved != root else "."
            if rel in {e.relpath for e in self.edits} or _git_tracks(root, rel):
                raise BadInput(
                    f"--patch {target}: that is {rel}, a file of the PyTorch tree (tracked by git or edited by this "
                    "change); the patch would replace it.",
                    hint="Write the patch outside the tracked sources, e.g. --patch /tmp/op.patch.",
                )
        if resolved.is_dir():
            raise BadInput(f"--patch {target}: is a directory; give a file name.")
        if target.is_symlink() or (resolved.exists() and not resolved.is_file()):
            what = "a symbolic link" if target.is_symlink() else "not a regular file (a device, FIFO or socket)"
            raise BadInput(
                f"--patch {target}: is {what}; mpsgen writes a patch as a new regular file and will not replace it; "
                "nothing written.",
                hint="Give the path of a regular file, e.g. --patch /tmp/op.patch.",
            )
        if resolved.exists() and not force:
            raise BadInput(
                f"--patch {target}: the file exists; nothing written.",
                hint="Pick a new file name, or pass --force to overwrite it.",
            )
        try:
            write_whole(target, text.encode("utf-8"), replace=force)
        except FileExistsError:
            raise BadInput(f"--patch {target}: the file appeared meanwhile; nothing written.") from None
        except OSError as exc:
            raise BadInput(f"--patch {target}: cannot write ({exc.strerror}).") from None


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def sync_folders(root: Path, journal: Journal) -> None:
    """Make the renames (and the staged and kept copies) in the journal's folders durable."""
    for folder in {str((root / j.path).parent) for j in journal.entries}:
        sync_folder(folder)


class Interrupted(MpsgenError):
    """A signal arrived while applying; the apply finished first (exit 130)."""

    exit_code = 130


@contextlib.contextmanager
def signals_held():
    """Hold SIGINT, SIGTERM and SIGHUP for the duration (main thread only); yields the list
    of the names of those that arrived."""
    arrived: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield arrived
        return
    wanted = [getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
    previous = {}

    def hold(signum, _frame):
        arrived.append(signal.Signals(signum).name)

    for sig in wanted:
        try:
            previous[sig] = signal.signal(sig, hold)
        except (OSError, ValueError):
            pass
    try:
        yield arrived
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _git_tracks(root: Path, rel: str) -> bool:
    """Whether git tracks ``rel`` in the checkout at ``root`` (False outside a git checkout)."""
    import subprocess  # (local: check --fix and its lintrunner output load no subprocess)

    if not (root / ".git").exists():
        return False
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "--error-unmatch", "--", rel],
            capture_output=True, timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0

"""A set of file edits computed in memory, then shown, exported or applied all-or-nothing.

Applying re-reads every file first and refuses if any changed since the plan was made;
then writes each new content to a temporary file beside its target and renames them into
place, restoring the originals if any step fails.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mpsgen.errors import BadInput, Refused
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import SourceFile


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _unified_diff(old: list[str], new: list[str], a: str, b: str, context: int = 3) -> list[str]:
    """difflib's unified diff, computed only between the common head and tail of the two
    files (the 1.4 MB OpInfo file costs milliseconds instead of a quarter second)."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    start = max(0, head - context)
    o_end, n_end = len(old) - max(0, tail - context), len(new) - max(0, tail - context)
    lines = list(difflib.unified_diff(old[start:o_end], new[start:n_end], a, b, n=context))

    def shift(m: re.Match) -> str:
        # line numbers in the slice, shifted back to the file (empty ranges too: "after line N")
        return f"@@ -{int(m.group(1)) + start}{m.group(2) or ''} +{int(m.group(3)) + start}{m.group(4) or ''} @@"

    return [_HUNK.sub(shift, line) if line.startswith("@@") else line for line in lines]


@dataclass(frozen=True)
class FileEdit:
    source: SourceFile
    new_text: str  # LF text; written back in the file's newline style

    @property
    def relpath(self) -> str:
        return self.source.relpath

    @property
    def new_bytes(self) -> bytes:
        return self.source.encode(self.new_text)

    @property
    def changed(self) -> bool:
        return self.new_bytes != self.source.raw


@dataclass
class Changeset:
    tree: PytorchTree
    edits: list[FileEdit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was decided, for the user
    warnings: list[str] = field(default_factory=list)

    def add(self, source: SourceFile, new_text: str) -> None:
        for i, e in enumerate(self.edits):
            if e.relpath == source.relpath:
                self.edits[i] = FileEdit(e.source, new_text)
                return
        self.edits.append(FileEdit(source, new_text))

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
            old = e.source.raw.decode("utf-8").splitlines(keepends=True)
            new = e.new_bytes.decode("utf-8").splitlines(keepends=True)
            body = _unified_diff(old, new, f"a/{e.relpath}", f"b/{e.relpath}")
            if not body:
                continue
            chunks.append(f"diff --git a/{e.relpath} b/{e.relpath}\n")
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
            if now != e.source.raw:
                raise Refused(
                    f"{e.relpath} changed since mpsgen read it; nothing was written.",
                    hint="Run the command again to plan against the current content.",
                )

    def check_writable(self) -> None:
        for e in self.changed:
            path = self.tree.resolve(e.relpath)
            mode = path.stat().st_mode
            if not mode & stat.S_IWUSR or not os.access(path, os.W_OK) or not os.access(path.parent, os.W_OK):
                raise BadInput(
                    f"{e.relpath} is read-only (mode {stat.filemode(mode)}); nothing was written.",
                    hint="Make it writable (chmod u+w) or use --patch FILE to write a patch instead.",
                )

    def apply(self) -> list[str]:
        """Write every changed file, or none. Returns the paths written."""
        self.check_writable()
        self.check_unchanged()
        staged: list[tuple[Path, Path, FileEdit]] = []
        try:
            for e in self.changed:
                path = self.tree.resolve(e.relpath)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mpsgen", dir=path.parent)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(e.new_bytes)
                os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
                staged.append((path, Path(tmp), e))
        except OSError as exc:
            for _p, tmp, _e in staged:
                tmp.unlink(missing_ok=True)
            raise Refused(f"could not stage the edits ({exc.strerror}: {exc.filename}); nothing was written.") from None
        # last look just before the renames
        try:
            self.check_unchanged()
        except Refused:
            for _p, tmp, _e in staged:
                tmp.unlink(missing_ok=True)
            raise
        done: list[tuple[Path, FileEdit]] = []
        try:
            for path, tmp, e in staged:
                os.replace(tmp, path)
                done.append((path, e))
        except OSError as exc:
            for path, e in reversed(done):
                try:
                    path.write_bytes(e.source.raw)
                except OSError:
                    pass
            for _p, tmp, _e in staged:
                tmp.unlink(missing_ok=True)
            raise Refused(
                f"writing {exc.filename} failed ({exc.strerror}); every file was restored to its previous content."
            ) from None
        for _path, e in done:
            self.tree.forget(e.relpath)
        return [e.relpath for _p, e in done]

    def write_patch(self, target: Path) -> None:
        text = self.diff()
        try:
            target.write_text(text, encoding="utf-8", newline="")
        except OSError as exc:
            raise BadInput(f"--patch {target}: cannot write ({exc.strerror}).") from None

"""A target file as bytes and as text, and lexing helpers for C-like sources.

Files are decoded strictly as UTF-8 (a bad byte is an error that names the file and
offset). A file whose every line ends in CRLF is edited as LF text and written back
with CRLF, so bytes outside the touched lines stay identical.
"""

from __future__ import annotations

import os
import re
import stat as stat_mod

from mpsgen.errors import BadInput, Location
from typing import NamedTuple


# the lines git writes into a file it could not merge
_CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7})(?: |\r?$)", re.M)


class SourceFile(NamedTuple):
    """One file of the tree as read: its bytes, its LF text, and its newline style."""

    relpath: str
    raw: bytes
    text: str
    newline: str  # "\n" or "\r\n"

    @classmethod
    def from_bytes(cls, relpath: str, raw: bytes) -> SourceFile:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise BadInput(
                f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}).",
                location=Location(relpath, line),
                hint="mpsgen only edits UTF-8 sources; re-encode the file or restore it from git.",
            ) from None
        marker = _CONFLICT_MARKER.search(text)
        if marker is not None:
            raise BadInput(
                "the file holds a merge conflict marker; mpsgen does not edit a file in the middle of a merge or rebase.",
                location=Location(relpath, text.count("\n", 0, marker.start()) + 1),
                hint="Resolve the conflict (or `git checkout -- <file>`), then run mpsgen again.",
            )
        crlf = text.count("\r\n")
        if crlf and crlf == text.count("\n"):
            return cls(relpath, raw, text.replace("\r\n", "\n"), "\r\n")
        return cls(relpath, raw, text, "\n")

    def encode(self, text: str) -> bytes:
        """Bytes for ``text`` (LF form) in this file's newline style."""
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
        return text.encode("utf-8")



def mask_c_comments_and_strings(text: str) -> str:
    """Blank out comments and string/char literal contents, keeping offsets and newlines.

    Lets regexes and brace matching run on code only while positions still index
    the original text.
    """
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i + m.end())
            end = n if end < 0 else end + len(m.group(1)) + 2
            for k in range(i + m.end(), max(i + m.end(), end - len(m.group(1)) - 2)):
                if out[k] != "\n":
                    out[k] = " "
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def match_close(masked: str, open_pos: int) -> int:
    """Offset of the bracket closing the one at ``open_pos`` in masked text (-1 if none)."""
    pairs = {"(": ")", "{": "}", "[": "]"}
    opener = masked[open_pos]
    closer = pairs[opener]
    depth = 0
    for i in range(open_pos, len(masked)):
        ch = masked[i]
        if ch == opener:
            depth += 1
        elif ch == closer:
            depth -= 1
            if depth == 0:
                return i
    return -1


MAX_FILE_BYTES = 20 * 1024 * 1024  # native_functions.yaml is 0.6 MB, the largest OpInfo file 1.4 MB


def read_bounded(path, what: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else (a FIFO, a
    device such as /dev/zero, a folder, a huge file) is refused with BadInput, never read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise BadInput(f"{what} {path}: no such file.") from None
    except OSError as exc:
        raise BadInput(f"{what} {path}: cannot open it ({exc.strerror or exc}).") from None
    try:
        st = os.fstat(fd)
        if not stat_mod.S_ISREG(st.st_mode):
            kind = "a folder" if stat_mod.S_ISDIR(st.st_mode) else "not a regular file (a FIFO, device or socket)"
            raise BadInput(f"{what} {path} is {kind}; mpsgen reads regular files only.")
        if st.st_size > limit:
            raise BadInput(
                f"{what} {path} is {st.st_size / 1e6:.0f} MB, over mpsgen's {limit // (1024 * 1024)} MB limit for one "
                "file; no PyTorch source is that large, so it is not read."
            )
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise BadInput(f"{what} {path} grew past {limit // (1024 * 1024)} MB while read; not read.")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_BRACKET_PAIRS = {"(": re.compile(r"[()]"), "{": re.compile(r"[{}]"), "[": re.compile(r"[\[\]]")}


def text_as_is(raw: bytes) -> str | None:
    """``raw`` decoded where it can be taken as it is: UTF-8, no CRLF line ends, no conflict
    marker. None otherwise: :meth:`SourceFile.from_bytes` then converts it, or refuses it with
    its message. (``"\r"`` is looked for first: a one-character search is a memchr, a
    two-character one a slow scan.)"""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if ("\r" in text and "\r\n" in text) or "<<<<<<<" in text or ">>>>>>>" in text:
        return None
    return text


def close_bracket(text: str, open_pos: int) -> int:
    """Offset of the bracket closing the one at ``open_pos`` (-1 if none). Visits only the
    brackets of that kind (a C-speed search), so it suits large unmasked texts whose
    comments and strings hold none."""
    opener = text[open_pos]
    depth = 0
    for m in _BRACKET_PAIRS[opener].finditer(text, open_pos):
        if m.group() == opener:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of each line."""
    starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def line_of(starts: list[int], offset: int) -> int:
    """0-based line index holding ``offset``."""
    import bisect

    return bisect.bisect_right(starts, offset) - 1


def split_args(arglist: str) -> list[str]:
    """Split a macro/function argument list on top-level commas."""
    args, depth, cur = [], 0, []
    for ch in arglist:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail or args:
        args.append(tail)
    return args


def python_syntax_problem(source: SourceFile) -> BadInput | None:
    """Why a Python file of the tree does not parse (a syntax error, mixed tabs and spaces), or None:
    a file mpsgen edits must parse before and after, or the tests it feeds fail to import."""
    import ast

    try:
        compile(source.text, source.relpath, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:  # TabError and IndentationError are SyntaxErrors
        return BadInput(
            f"the file is not valid Python ({exc.msg}); the tests that import it would fail too.",
            location=Location(source.relpath, exc.lineno or 0),
            hint="Fix or restore it (git diff / git checkout), then run mpsgen again.",
        )
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return BadInput(f"the file cannot be parsed as Python ({exc}).", location=Location(source.relpath), hint="Fix or restore it.")
    return None

"""A target file as bytes and as text, and lexing helpers for C-like sources.

Files are decoded strictly as UTF-8 (a bad byte is an error that names the file and
offset). A file whose every line ends in CRLF is edited as LF text and written back
with CRLF, so bytes outside the touched lines stay identical.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import stat as stat_mod

from mpsgen.core.errors import BadInput, Location
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
        # (each marker holds its run of 7: a substring search, at C speed, finds a file without any)
        marker = _CONFLICT_MARKER.search(text) if "<<<<<<<" in text or ">>>>>>>" in text else None
        if marker is not None:
            raise BadInput(
                "the file holds a merge conflict marker; mpsgen does not edit a file in the middle of a merge or rebase.",
                location=Location(relpath, text.count("\n", 0, marker.start()) + 1),
                hint="Resolve the conflict (or `git checkout -- <file>`), then run mpsgen again.",
            )
        crlf = text.count("\r\n") if "\r" in text else 0
        if crlf and crlf == text.count("\n"):
            return cls(relpath, raw, text.replace("\r\n", "\n"), "\r\n")
        return cls(relpath, raw, text, "\n")

    def encode(self, text: str) -> bytes:
        """Bytes for ``text`` (LF form) in this file's newline style."""
        if self.newline == "\r\n":
            text = text.replace("\n", "\r\n")
        return text.encode("utf-8")



# where a comment, a string or char literal, or a raw string (``R"delim(...)delim"``; not
# after a name: ``u8R"`` is read as a plain string) may start
_MASKED_START = re.compile(r"""//|/\*|["']|R\"""")
_RAW_OPEN = re.compile(r'R"([^(\s]*)\(')
# a literal's characters up to its closing quote or the end of its line (a backslash escapes
# the character after it, a line break included)
_LITERAL_BODY = {q: re.compile(rf"(?:[^{q}\\\n]|\\(?:[\s\S]|\Z))*") for q in "\"'"}


def _blank(text: str) -> str:
    """``text`` as spaces, its line breaks kept."""
    return "\n".join(" " * len(line) for line in text.split("\n"))


def mask_c_comments_and_strings(text: str) -> str:
    """Blank out comments and string/char literal contents, keeping offsets and newlines.

    Lets regexes and brace matching run on code only while positions still index
    the original text. (A string literal ends at its closing quote or at the end of its
    line; an escaped line break inside it is blanked too. Jumps from one place where
    something may start to the next: the code between is copied, not visited.)
    """
    out: list[str] = []
    done = i = 0  # text[:done] is in out; the next start is looked for from i
    n = len(text)
    while True:
        m = _MASKED_START.search(text, i)
        if m is None:
            break
        i, token = m.start(), m.group()
        if token == "//":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out += (text[done:i], " " * (end - i))
        elif token == "/*":
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out += (text[done:i], _blank(text[i:end]))
        elif token == 'R"':
            raw = _RAW_OPEN.match(text, i) if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_") else None
            if raw is None:
                i += 1  # its quote starts a plain string
                continue
            delim = raw.group(1)
            end = text.find(")" + delim + '"', raw.end())
            end = n if end < 0 else end + len(delim) + 2
            body_end = max(raw.end(), end - len(delim) - 2)
            out += (text[done : raw.end()], _blank(text[raw.end() : body_end]), text[body_end:end])
        else:  # a quote: the literal runs to the same quote, or to the end of the line
            j = _LITERAL_BODY[token].match(text, i + 1).end()
            end = min(j, n)
            out += (text[done : i + 1], " " * (end - i - 1))
            end = min(j + 1, n) if j < n else end
            out.append(text[min(j, n) : end])
        done = i = end
    out.append(text[done:])
    return "".join(out)


def match_close(masked: str, open_pos: int) -> int:
    """Offset of the bracket closing the one at ``open_pos`` in masked text (-1 if none).
    (Masked text holds no bracket in a comment or literal: :func:`close_bracket`'s search of
    that kind of bracket only is the same count, at C speed.)"""
    return close_bracket(masked, open_pos)


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


@functools.lru_cache(maxsize=4)
def text_lines(text: str) -> tuple[str, ...]:
    """``text.split("\n")``, split once per text: a yaml edit, its proof and the C-shim check all
    ask it of the same ~16k-line native_functions.yaml (and of the edited text), once per op a
    run plans. Shared, so a tuple."""
    return tuple(text.split("\n"))


@functools.lru_cache(maxsize=16)
def line_starts(text: str) -> tuple[int, ...]:
    """Offsets of the first character of each line: found once per text (shared, so a tuple):
    a .mm file's scan, its MPSGraph removal and the OpInfo edits of every op a run plans ask
    them of the same texts."""
    starts = [0]
    pos = text.find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return tuple(starts)


def line_of(starts: tuple[int, ...], offset: int) -> int:
    """0-based line index holding ``offset``."""
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


@functools.lru_cache(maxsize=2)
def parse_python(text: str):
    """``ast.parse(text)``, parsed once for the last two texts asked: the syntax check, the
    readers of the xfail lists and their edit all ask it of the same common_mps.py (a
    coverage run plans dozens of ops), a plan's consistency check also of the edited text.
    The tree is shared: read it only. Raises what ``ast.parse`` raises (SyntaxError,
    ValueError for a NUL byte, RecursionError)."""
    import ast  # (local: check loads no ast)

    return ast.parse(text)


def python_syntax_problem(source: SourceFile) -> BadInput | None:
    """Why a Python file of the tree does not parse (a syntax error, mixed tabs and spaces), or None:
    a file mpsgen edits must parse before and after, or the tests it feeds fail to import."""
    try:
        parse_python(source.text)
    except SyntaxError as exc:  # TabError and IndentationError are SyntaxErrors
        return BadInput(
            f"the file is not valid Python ({exc.msg}); the tests that import it would fail too.",
            location=Location(source.relpath, exc.lineno or 0),
            hint="Fix or restore it (git diff / git checkout), then run mpsgen again.",
        )
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, absurd nesting
        return BadInput(f"the file cannot be parsed as Python ({exc}).", location=Location(source.relpath), hint="Fix or restore it.")
    return None

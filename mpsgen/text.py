"""Shortening the text quoted in messages (a decorator, a comment, an error from torch)."""

from __future__ import annotations

ELLIPSIS = "…"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def shorten(text: str, width: int) -> str:
    """``text`` on one line (runs of white space made one space), whole when it fits in
    ``width`` characters; else cut where a word or token ends (at a space if one lies in the
    second half, else between a name or number and punctuation), never inside a name or a
    number unless one name fills the width, and ended with an ellipsis, all within ``width``."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    room = max(width - 2, 1)  # the ellipsis and the space before it
    cut = text.rfind(" ", room // 2, room + 1)
    if cut >= 0:
        return f"{text[:cut]} {ELLIPSIS}"
    ends = [i for i in range(room, 0, -1) if not (_is_word(text[i - 1]) and _is_word(text[i]))]
    cut = next((i for i in ends if i > room // 2), ends[0] if ends else room)  # room: one name longer than all
    return text[:cut].rstrip() + ELLIPSIS


# control characters a terminal acts on (C0 but newline and tab, DEL, C1) and the bidirectional
# overrides and isolates that reorder what is shown
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]}
_CONTROL.update({c: f"\\u{c:04x}" for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]})


def visible(text: str) -> str:
    """``text`` as it may reach a terminal: every control character written out (ESC as
    ``\\x1b``, BEL as ``\\x07``), newlines and tabs kept. Everything mpsgen prints that comes
    from a file, a path or an argument goes through this."""
    return text.translate(_CONTROL)

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

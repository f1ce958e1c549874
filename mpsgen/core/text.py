"""Shortening the text quoted in messages (a decorator, a comment, an error from torch), and
laying out columns for a terminal."""

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


def columns(header: tuple[str, ...], rows: list[tuple[str, ...]], *, width: int, name: int = 0, right: frozenset[int] = frozenset(), indent: int = 2) -> list[str]:
    """``header`` and ``rows`` in aligned columns, each as wide as its widest cell and two
    spaces apart (``right``: right-aligned). When a row would pass ``width``, column ``name``
    narrows; a name longer than it is written whole on a line of its own, and its row follows
    on the next line: names are never cut."""
    n = len(header)
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(n)]
    over = indent + sum(widths) + 2 * (n - 1) - width
    if over > 0:
        widths[name] = max(len(header[name]), widths[name] - over)
    at = indent + sum(widths[:name]) + 2 * name  # where the name column starts

    def line(cells: tuple[str, ...]) -> str:
        parts = [c.rjust(w) if i in right else c if i == n - 1 else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return (" " * indent + "  ".join(parts)).rstrip()

    out = []
    for r in (header, *rows):
        if len(r[name]) > widths[name]:
            out.append(" " * at + r[name])
            r = (*r[:name], "", *r[name + 1 :])
        out.append(line(r))
    return out

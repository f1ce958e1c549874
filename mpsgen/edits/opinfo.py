"""Remove an op's ``DecorateInfo(..., device_type='mps')`` entries from its OpInfo spans.

Only the spans found by ``tree.opinfo`` are read; the rest of the 1.4 MB file is copied
as is. A comment block directly above removed decorators goes with them when it heads
nothing that stays (it explained the MPS failure). A ``skips=(...)``/``decorators=(...)`` argument left
empty is removed too.
"""

from __future__ import annotations

import re

from mpsgen.core.text import shorten
from mpsgen.tree.opinfo import mps_decorators
from mpsgen.tree.reasons import NUMERICS, comment_above, is_mpsgraph_failure, is_unimplemented_reason
from mpsgen.tree.source import line_of, line_starts

_OUT_TEST = re.compile(r"""['"]TestCommon['"]\s*,\s*['"]test_out(?:_warning)?['"]""")
_OPENS_TUPLE = re.compile(r"^\s*\w+\s*=\s*[(\[]\s*(#.*)?$")
_EMPTY_ARG = re.compile(r"^[ \t]*(?:skips|decorators)\s*=\s*\(\s*\)\s*,?[ \t]*\n", re.M)


_OTHER_DEVICE = re.compile(r"""device_type\s*=\s*['"](?!mps['"])""")


def _statement(lines: list[str], j: int) -> str:
    """Line ``j`` and the lines after it up to where its brackets balance (one decorator)."""
    text, depth = "", 0
    for ln in lines[j:]:
        text += ln + "\n"
        depth += ln.count("(") - ln.count(")")
        if depth <= 0:
            break
    return text


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def remove_mps_decorators(
    text: str, spans: list[tuple[int, int]], kept: list[tuple[int, str]] | None = None, *, migrating: bool = False,
    op: str = "",
) -> str:
    """Remove the MPS decorators that exist because MPS lacked the kernel (their reason says
    so: NotImplementedError, "not implemented for MPS", ...) inside each (open, close) span;
    when ``migrating``, also those whose reason is a failure of MPSGraph itself (its
    ``[srcBuf length] > 0`` assertion, ...), which goes with the MPSGraph code, and those of
    TestCommon's test_out/test_out_warning (out= resizing is the shared kernel's once MPS
    joins it, as upstream's nan_to_num migration shows), and those whose reason is what "MPS
    <op>" (the kernel the migration replaces) does. Spans must not
    overlap. Numerics decorators (toleranceOverride, precisionOverride) and xfails with another
    reason stay; each is appended to ``kept`` as (1-based line, why)."""
    out = []
    last = 0
    starts = line_starts(text)
    for start, end in sorted(spans):
        out.append(text[last:start])
        out.append(_edit_span(text[start:end], line_of(starts, start), kept, migrating, op))
        last = end
    out.append(text[last:])
    return "".join(out)


_TEST_OF = re.compile(r"""DecorateInfo\(\s*unittest\.expectedFailure\s*,\s*['"](\w+)['"]\s*,\s*['"](\w+)['"]""")


def _fails_on_cpu_too(span: str, call: str) -> str | None:
    """For an MPS expectedFailure of one test: the dtypes of an expectedFailure of the same
    test on the CPU in the same entry (its numerics, not a missing kernel), else None."""
    m = _TEST_OF.match(call)
    if m is None:
        return None
    for other in re.finditer(r"DecorateInfo\(", span):
        depth, k = 1, other.end()
        while depth and k < len(span):  # the call's closing bracket
            depth += (span[k] == "(") - (span[k] == ")")
            k += 1
        text = span[other.start() : k]
        o = _TEST_OF.match(text)
        if o is not None and o.groups() == m.groups() and re.search(r"""device_type\s*=\s*['"]cpu['"]""", text):
            dtypes = re.search(r"dtypes\s*=\s*\(([^)]*)\)", text)
            return f"dtypes {dtypes.group(1).strip().rstrip(',')}" if dtypes else "every dtype"
    return None


def _summary(call: str) -> str:
    """The call on one line as black would write it (no space inside its brackets), whole or
    shortened between words."""
    return shorten(re.sub(r"([(\[])\s+|\s+([)\]])", r"\1\2", call), 160)


def _edit_span(
    span: str, line0: int = 0, kept: list[tuple[int, str]] | None = None, migrating: bool = False, op: str = ""
) -> str:
    old_kernel = re.compile(rf"\bMPS\s+{re.escape(op)}\b") if migrating and op else None
    found = mps_decorators(span, 0, len(span))
    if not found:
        return span
    lines = span.split("\n")
    offsets = [0]
    for ln in lines[:-1]:
        offsets.append(offsets[-1] + len(ln) + 1)
    calls = []
    for s, e in found:
        call = span[s:e]
        first = span.count("\n", 0, s)
        # the nearest comment block above, over the decorators of its run (up to the
        # `skips=(` / `decorators=(` that opens the tuple)
        reason = comment_above(lines, first, through=lambda ln: not _OPENS_TUPLE.match(ln))
        if NUMERICS.search(call):
            why = "tunes numerics (the new kernel's tests need it too)"
        elif (cpu := _fails_on_cpu_too(span, call)) is not None:
            why = (
                f"the CPU run of this test is expected to fail too ({cpu}): with the kernel it will most likely "
                "fail on MPS the same way; run it on a Mac, then narrow or remove this entry"
            )
        elif is_unimplemented_reason(reason) or is_unimplemented_reason(call):
            calls.append((s, e))
            continue
        elif migrating and (is_mpsgraph_failure(reason) or _OUT_TEST.search(call) or (old_kernel and old_kernel.search(reason))):
            # MPSGraph's own failure, out= behaviour (resizing, its warning), which the shared
            # kernel the rows join handles as on CPU, or what the replaced MPS kernel did
            calls.append((s, e))
            continue
        else:
            why = f"its reason is not a missing kernel: {shorten(reason.lstrip('# '), 90)}" if reason else "it gives no reason; check whether it still fails"
        if kept is not None:
            kept.append((line0 + first + 1, f"{_summary(call)} ({why})"))
    if not calls:
        return span

    def line_at(off: int) -> int:
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= off:
                lo = mid
            else:
                hi = mid - 1
        return lo

    drop_lines: set[int] = set()
    inline_cuts: list[tuple[int, int]] = []
    for s, e in calls:
        first, last = line_at(s), line_at(e - 1)
        before = span[offsets[first] : s]
        after = span[e : offsets[last] + len(lines[last])]
        if not before.strip() and re.fullmatch(r"\s*,?\s*(#.*)?", after):
            drop_lines.update(range(first, last + 1))
        else:
            # inline: cut the call and one adjoining comma
            tail = re.match(r"\s*,\s*", span[e:])
            if tail:
                inline_cuts.append((s, e + tail.end()))
            else:
                head = re.search(r",\s*$", span[:s])
                inline_cuts.append((head.start() if head else s, e))

    # comment blocks directly above removed decorators
    for i in sorted(drop_lines):
        if i - 1 in drop_lines or i == 0 or not _is_comment(lines[i - 1]):
            continue
        top = i - 1
        while top - 1 >= 0 and _is_comment(lines[top - 1]):
            top -= 1
        # the block heads the run of decorator lines below it; keep it if any of them stays
        # (a missing MPS kernel's reason does not head the decorators of other devices below it)
        about_mps_kernel = is_unimplemented_reason("\n".join(lines[top:i]))
        j = i
        heads_kept = False
        while j < len(lines) and lines[j].strip() and not _is_comment(lines[j]) and not lines[j].strip().startswith(")"):
            if j not in drop_lines and (not about_mps_kernel or not _OTHER_DEVICE.search(_statement(lines, j))):
                heads_kept = True
                break
            j += 1
        if not heads_kept:
            drop_lines.update(range(top, i))

    cut: list[tuple[int, int]] = list(inline_cuts)
    for i in drop_lines:
        cut.append((offsets[i], offsets[i] + len(lines[i]) + 1))
    pieces, last = [], 0
    for s, e in sorted(cut):
        if s < last:
            s = last
        pieces.append(span[last:s])
        last = max(last, e)
    pieces.append(span[last:])
    return _EMPTY_ARG.sub("", "".join(pieces))

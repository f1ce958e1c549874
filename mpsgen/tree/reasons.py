"""Why a test-list entry exists: whether its stated reason is that MPS lacked the kernel
(the only entries a new kernel makes stale)."""

from __future__ import annotations

import re

# what PyTorch prints, and contributors write, when an op has no MPS kernel
UNIMPLEMENTED = re.compile(
    r"NotImplementedError|not (?:currently )?implemented for (?:the )?MPS|not implemented (?:on|for) MPS"
    r"|no kernel registered|missing kernel|unimplemented",
    re.I,
)
# decorators that tune a test's numerics, never there for a missing kernel
NUMERICS = re.compile(r"\b(?:toleranceOverride|precisionOverride)\s*\(")


# what MPSGraph's own failures print (its assertions, its NDArray buffers): an xfail for one
# of these exists because of the MPSGraph code a migration removes
MPSGRAPH_FAILURE = re.compile(r"srcBuf|MPSGraph|MPSNDArray|MPSTemporaryNDArray|\[MPS\w+ ", re.I)


def is_unimplemented_reason(text: str) -> bool:
    return bool(UNIMPLEMENTED.search(text))


def is_mpsgraph_failure(text: str) -> bool:
    return bool(MPSGRAPH_FAILURE.search(text))


def comment_above(lines: list[str], first: int, *, through=lambda line: False) -> str:
    """The text of the comment block directly above line ``first`` (0-based; one line of text
    per comment line, without its ``#``), stepping over lines for which ``through`` is true
    (sibling entries of the same run)."""
    i = first - 1
    while i >= 0 and not lines[i].lstrip().startswith("#") and lines[i].strip() and through(lines[i]):
        i -= 1
    block = []
    while i >= 0 and lines[i].lstrip().startswith("#"):
        block.append(lines[i].strip().lstrip("#").strip())  # the words, not the comment markers
        i -= 1
    return "\n".join(reversed(block))

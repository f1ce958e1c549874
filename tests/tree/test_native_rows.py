"""check's own yaml scanner reads the rows exactly as mpsgen.tree.native_yaml does."""

from __future__ import annotations

import pytest

from mpsgen.tree.native_rows import scan_rows
from mpsgen.tree import NATIVE_FUNCTIONS
from mpsgen.tree.native_yaml import scan_native_functions


def rows_of(entries) -> list[tuple]:
    return [(e.name, e.base, e.overload, e.start_line, tuple((d.keys, d.kernel, d.line, d.text) for d in e.dispatch)) for e in entries]


def test_agrees_with_scan_native_functions_on_the_real_yaml(real_sources):
    text = real_sources[NATIVE_FUNCTIONS].read_text()
    expected = rows_of(scan_native_functions(text).entries)
    assert len(expected) > 2000 and sum(len(r[4]) for r in expected) > 2000
    assert rows_of(scan_rows(text)) == expected
    plain = scan_rows(text, plain=True)
    assert plain == scan_rows(text) and all(type(r) is tuple and all(type(d) is tuple for d in r[3]) for r in plain)


@pytest.mark.parametrize(
    "text",
    [
        "- func: a(x)\n  dispatch:\n    CPU: k\n\n    MPS: m\n# c\n    CUDA: z\n",
        "  dispatch:\n    CPU: x\n- func: b(\n  dispatch:\n    CPU: y",
        "- func: c.o(x)\n  dispatch:\n    CPU: y  # hi\n    MPS:\n      z\n  dispatch:\n    CUDA: w\n   \n    MPS: q",
        "- func: d(x)\n  dispatch: # c\n    CPU , CUDA :  k # c\n    foo bar\n   \n\t\n    MPS: m\n   x\n    CUDA: z",
        "- func: e(x)\r\n  dispatch:\r\n    CPU: k\r\n    MPS: m  \r\n",
        "x\n- func: f(x)\n  dispatch:\n    CPU: k\n  variants: function\n    MPS: m\n  dispatch:\n\n\n    CUDA: c\n- func: g(x)\n    CPU: no\n  dispatch:\n    CPU:\n    MPS: ok",
    ],
    ids=["blank-and-comment", "no-entry-and-bad-header", "two-blocks", "odd-spacing", "crlf", "block-ends"],
)
def test_agrees_on_edge_cases(text):
    assert rows_of(scan_rows(text)) == rows_of(scan_native_functions(text).entries)
    plain = scan_rows(text, plain=True)  # what check's child process sends back
    assert plain == scan_rows(text) and all(type(r) is tuple and all(type(d) is tuple for d in r[3]) for r in plain)

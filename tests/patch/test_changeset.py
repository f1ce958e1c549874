"""The changeset's unified diff: minimal, placed as git places it, and git-apply-able."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mpsgen.patch.changeset import Changeset, _unified_diff
from mpsgen.tree import PytorchTree
from mpsgen.tree.source import SourceFile


def test_block_added_after_a_closing_brace_reads_as_that_block():
    old = ["struct a {\n", "  int x;\n", "};\n", "\n", "REGISTER(a);\n"]
    new = old[:4] + ["struct b {\n", "  int x;\n", "};\n", "\n"] + old[4:]
    body = _unified_diff(old, new, "a/f", "b/f")
    assert body[2] == "@@ -2,4 +2,8 @@\n"
    assert [l for l in body if l.startswith("+") and not l.startswith("+++")] == [
        "+struct b {\n", "+  int x;\n", "+};\n", "+\n",
    ]


def test_form_feed_inside_a_line_is_not_a_line_break(tmp_path: Path):
    root = tmp_path / "t"
    (root / "aten/src/ATen/native").mkdir(parents=True)
    (root / "aten/src/ATen/native/native_functions.yaml").write_text("")
    raw = b"// page\x0cbreak\nint x;\n"
    (root / "f.h").write_bytes(raw)
    cs = Changeset(PytorchTree(root))
    cs.add(SourceFile.from_bytes("f.h", raw), "// page\x0cbreak\nint x;\nint y;\n")
    patch = tmp_path / "p.diff"
    cs.write_patch(patch)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "apply", str(patch)], check=True)
    assert (root / "f.h").read_bytes() == raw + b"int y;\n"


lines = st.lists(st.sampled_from(["a\n", "b\n", "};\n", "\n", "  x;\n"]), max_size=12)


@settings(max_examples=200, deadline=None)
@given(old=lines, new=lines)
def test_diff_reconstructs_the_new_text(old, new):
    body = _unified_diff(old, new, "a/f", "b/f")
    if old == new:
        assert body == []
        return
    # apply the hunks by hand: every hunk's old side matches, and the result is `new`
    result, at = [], 0
    i = 2
    while i < len(body):
        header = body[i]
        assert header.startswith("@@ -")
        a_range = header.split()[1][1:]
        a_start = int(a_range.split(",")[0])
        a_len = int(a_range.split(",")[1]) if "," in a_range else 1
        begin = a_start - 1 if a_len else a_start
        result += old[at:begin]
        at = begin
        i += 1
        while i < len(body) and not body[i].startswith("@@"):
            op, text = body[i][0], body[i][1:]
            if op in " -":
                assert old[at] == text
                at += 1
            if op in " +":
                result.append(text)
            i += 1
    result += old[at:]
    assert result == new


def test_a_second_writer_waits_then_is_refused_and_writes_nothing(tmp_path: Path, monkeypatch):
    import fcntl
    import os

    import pytest

    from mpsgen.patch import journal as journal_mod
    from mpsgen.core.errors import Refused

    root = tmp_path / "t"
    (root / "aten/src/ATen/native").mkdir(parents=True)
    (root / "aten/src/ATen/native/native_functions.yaml").write_text("")
    (root / "f.h").write_bytes(b"int x;\n")
    cs = Changeset(PytorchTree(root))
    cs.add(SourceFile.from_bytes("f.h", b"int x;\n"), "int x;\nint y;\n")
    monkeypatch.setattr(journal_mod, "WRITER_WAIT", 0.2)
    held = os.open(root, os.O_RDONLY)  # another mpsgen, in the middle of its writes (no .git: the journal's folder is the root)
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        with pytest.raises(Refused, match="another mpsgen has been writing"):
            cs.apply()
        assert (root / "f.h").read_bytes() == b"int x;\n"
    finally:
        os.close(held)
    assert cs.apply() == ["f.h"]  # once the other writer is done
    assert (root / "f.h").read_bytes() == b"int x;\nint y;\n"
    assert sorted(p.name for p in root.iterdir()) == ["aten", "f.h"]  # no lock file left in the tree

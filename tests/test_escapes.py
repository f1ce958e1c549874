"""Nothing a tree, a path or an argument holds reaches the terminal as a control sequence: an
ESC or BEL from each source is printed visibly (``\\x1b``, ``\\x07``) in every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.core.text import visible

ESC = "\x1b]0;pwned\x07"
BINARY_MM = "aten/src/ATen/native/mps/operations/BinaryKernel.mm"


def _raw_controls(text: str) -> list[str]:
    return sorted({c for c in text if c in "\x1b\x07"})


def test_visible_writes_out_control_characters_and_keeps_lines():
    assert visible("a\x1b[2Jb\x07\tc\nd\x9b\u202e") == "a\\x1b[2Jb\\x07\tc\nd\\x9b\\u202e"
    assert visible("plain text, ünïcode") == "plain text, ünïcode"


@pytest.mark.parametrize("fmt", ["text", "github", "json", "lintrunner"])
def test_a_kernel_name_from_a_tree_is_shown_not_obeyed(own_tree: Path, run, fmt: str):
    mm = own_tree / BINARY_MM
    mm.write_text(mm.read_text().replace('exec_binary_kernel(iter, "fmin")', f'exec_binary_kernel(iter, "fm{ESC}in")', 1))
    res = run("check", "--root", own_tree, "--format", fmt, "--strict")
    assert res.exit_code in (0, 1), res.output
    assert not _raw_controls(res.output), res.output
    assert "fm" in res.output and ("\\x1b]0;pwned\\x07" in res.output or "\\u001b]0;pwned\\u0007" in res.output)


def test_a_file_name_from_a_tree_is_shown_not_obeyed(own_tree: Path, run):
    odd = own_tree / "aten/src/ATen/native/mps/operations" / "Odd\x1b[2J.mm"
    odd.write_text('static void odd_kernel(TensorIteratorBase& iter) {\n  lib.exec_unary_kernel(iter, "no_such_kernel");\n}\n')
    for fmt in ("text", "github"):
        res = run("check", "--root", own_tree, "--format", fmt, "--strict")
        assert "Odd\\x1b[2J.mm" in res.output and not _raw_controls(res.output), res.output


def test_paths_and_names_the_user_typed_are_shown_not_obeyed(real_tree: Path, run, tmp_path: Path):
    bad = tmp_path / f"no{ESC}where"
    outputs = [
        run("new-op", "heaviside", "--binary", "--root", bad).output,
        run("new-op", "heaviside", "--spec", bad, "--root", real_tree).output,
        run("new-op", "heaviside", "--binary", "--functor-file", bad, "--root", real_tree).output,
        run("spec", "validate", bad).output,
        run("try", str(bad)).output,
        run("check", "--root", bad).output,
        run("check", str(bad), "--root", real_tree).output,
        run("demo", "--op", f"x{ESC}").output,
        run("explain", f"x{ESC}", "--root", real_tree).output,
    ]
    for out in outputs:
        assert out and not _raw_controls(out), out

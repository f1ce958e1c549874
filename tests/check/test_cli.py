"""``mpsgen check`` on the command line: exit codes, formats, --explain, errors."""

from __future__ import annotations

import json

from mpsgen.tree import NATIVE_FUNCTIONS

from .conftest import BINARY_MM, edit, kernel_column, line_of, shared_line


def hypot_fault(root) -> tuple[int, int]:
    """Drop hypot's REGISTER_DISPATCH: (line, column) of the MPS002 it causes at hypot.out."""
    edit(root, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    line = shared_line(root, "hypot_out")
    return line_of(root, NATIVE_FUNCTIONS, line.rstrip("\n")), kernel_column(line)


def test_clean_tree_exits_0(run, check_tree):
    result = run("check", "--root", check_tree)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no findings" in result.stderr


def test_text_format_names_file_line_code_and_hint(run, check_tree):
    row, col = hypot_fault(check_tree)
    result = run("check", "--root", check_tree)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"{NATIVE_FUNCTIONS}:{row}:{col}: MPS002 error: hypot.out puts MPS on the shared kernel hypot_out, but hypot_stub "
        f"(aten/src/ATen/native/BinaryOps.h:{line_of(check_tree, 'aten/src/ATen/native/BinaryOps.h', 'hypot_stub)')}) has no MPS REGISTER_DISPATCH (mpsgen check --explain MPS002)"
    ]
    assert "1 finding (1 error; whole tree)" in result.stderr


def test_json_format(run, check_tree):
    row, col = hypot_fault(check_tree)
    result = run("check", "--root", check_tree, "--format", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["counts"] == {"error": 1, "warning": 0}
    [f] = doc["findings"]
    assert (f["code"], f["name"], f["path"], f["line"], f["col"], f["severity"]) == ("MPS002", "missing-stub-registration", NATIVE_FUNCTIONS, row, col, "error")


def test_lintrunner_format_is_json_lines_and_exits_0(run, check_tree):
    row, col = hypot_fault(check_tree)
    result = run("check", "--root", check_tree, "--format", "lintrunner")
    assert result.exit_code == 0
    [line] = result.stdout.splitlines()
    msg = json.loads(line)
    assert set(msg) == {"path", "line", "char", "code", "severity", "name", "original", "replacement", "description"}
    assert (msg["path"], msg["line"], msg["char"], msg["code"], msg["severity"], msg["name"]) == (
        str(check_tree.resolve() / NATIVE_FUNCTIONS), row, col, "MPS002", "error", "missing-stub-registration",
    )


def test_lintrunner_reads_a_paths_file(run, check_tree, tmp_path):
    hypot_fault(check_tree)
    listing = tmp_path / "paths.txt"
    listing.write_text(f"{check_tree / BINARY_MM}\n")
    result = run("check", "--root", check_tree, "--format", "lintrunner", "--", f"@{listing}")
    assert [json.loads(x)["code"] for x in result.stdout.splitlines()] == ["MPS002"]
    listing.write_text(f"{check_tree / 'aten/src/ATen/native/mps/operations/UnaryKernel.mm'}\n")
    assert run("check", "--root", check_tree, "--format", "lintrunner", "--", f"@{listing}").stdout == ""


def test_github_format(run, check_tree):
    row, col = hypot_fault(check_tree)
    result = run("check", "--root", check_tree, "--format", "github")
    assert result.exit_code == 1
    assert result.stdout.startswith(f"::error file={NATIVE_FUNCTIONS},line={row},col={col},title=MPS002 missing-stub-registration::hypot.out puts MPS")


def test_explain(run):
    result = run("check", "--explain", "mps004")
    assert result.exit_code == 0
    assert result.stdout.startswith("MPS004 missing-functor (error): ")
    assert "Fix:" in result.stdout


def test_explain_unknown_code_exits_2(run):
    result = run("check", "--explain", "MPS999")
    assert result.exit_code == 2
    assert "no such rule" in result.stderr and "MPS001" in result.stderr


def test_not_a_pytorch_tree_exits_2_without_traceback(run, tmp_path):
    result = run("check", "--root", tmp_path)
    assert result.exit_code == 2
    assert "is not a PyTorch source tree" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_bad_format_exits_2(run, check_tree):
    result = run("check", "--root", check_tree, "--format", "xml")
    assert result.exit_code == 2
    assert "--format" in result.stderr and "xml" in result.stderr


def test_path_outside_the_tree_exits_2(run, check_tree, tmp_path):
    outside = tmp_path / "elsewhere.mm"
    outside.write_text("")
    result = run("check", "--root", check_tree, str(outside))
    assert result.exit_code == 2
    assert "outside the PyTorch tree" in result.stderr


def test_missing_paths_file_exits_2(run, check_tree, tmp_path):
    result = run("check", "--root", check_tree, f"@{tmp_path / 'nope.txt'}")
    assert result.exit_code == 2
    assert "cannot read the path list" in result.stderr


def test_invalid_utf8_source_exits_2(run, check_tree):
    (check_tree / BINARY_MM).write_bytes(b"\xff\xfe broken")
    result = run("check", "--root", check_tree)
    assert result.exit_code == 2
    assert "not valid UTF-8" in result.stderr and "Traceback" not in result.stderr


def test_practice_tree_with_real_yaml_runs(run, real_tree):
    result = run("check", "--root", real_tree, "--format", "json")
    assert result.exit_code == 1  # the small practice set does not back most of the real MPS rows
    doc = json.loads(result.stdout)
    codes = {f["code"] for f in doc["findings"]}
    # a partial tree: one note instead of the hundreds of MPS001/MPS002 its missing .mm files cause
    assert not {"MPS001", "MPS002"} & codes
    (note,) = doc["notes"]
    assert "the tree looks partial" in note and "--strict" in note
    strict = run("check", "--root", real_tree, "--format", "json", "--strict")
    full = json.loads(strict.stdout)
    assert {"MPS001", "MPS002"} <= {f["code"] for f in full["findings"]} and full["notes"] == []
    assert len(full["findings"]) > 200


def test_check_imports_only_what_it_needs(check_tree):
    """pre-commit and lintrunner start a process per run: `mpsgen check` loads the standard
    library and check's own modules only (no typer, rich, jinja2, yaml, libcst; not the
    dataclasses machinery, nor the edits' full yaml reader; nor pathlib, with the urllib.parse
    and ipaddress it imports: check works on string paths), on the whole tree as on a hook's
    file names. Run without site-packages (-S), as a fresh venv would, so that nothing else
    preloads a module."""
    from tests.check.conftest import check_in_fresh_process

    unwanted = {"typer", "rich", "jinja2", "yaml", "libcst", "ruamel", "pydantic", "click", "dataclasses", "mpsgen.cli.app", "mpsgen.tree.native_yaml"}
    unwanted |= {"pathlib", "urllib.parse", "ipaddress"}
    mm = str(check_tree / "aten/src/ATen/native/mps/operations/UnaryKernel.mm")
    for args in ([str(check_tree)], [str(check_tree), mm, str(check_tree / "aten/src/ATen/native/mps")]):
        proc = check_in_fresh_process("print(' '.join(sorted(sys.modules)))\n", *args)
        assert proc.returncode == 0, proc.stderr
        loaded = set(proc.stdout.splitlines()[-1].split())
        assert "mpsgen.check.registry" in loaded  # the check really ran
        assert not loaded & unwanted, sorted(loaded & unwanted)


def test_main_hands_its_results_to_keep(check_tree):
    """`python -m mpsgen check` ends with os._exit and passes a list to keep the run's results
    in, so that the index they reach is not freed object by object first (~2 ms)."""
    import os

    from mpsgen.check import CheckResult
    from mpsgen.cli.check import main

    kept: list = []
    assert main(["--root", str(check_tree), "--format", "json"], keep=kept) == 0
    assert len(kept) == 1 and isinstance(kept[0], CheckResult) and kept[0].root == os.path.realpath(check_tree)

"""``mpsgen check`` options: --select/--ignore, [tool.mpsgen] / .mpsgen.toml, --baseline,
--fix / --fix --diff, --strict on a partial tree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mpsgen.tree import COMMON_MPS, NATIVE_FUNCTIONS

from .conftest import BINARY_MM, UNARY_OPS_MM, edit, line_of, yaml_sign

STALE = ('            "cummax": None,\n', '            "cummax": None,\n            "hypot": None,\n            "exp": [torch.float16],\n')


def faults(root: Path) -> None:
    """MPS007 + MPS002 (sign moved to the shared line), MPS009 (stale xfails of hypot and exp)."""
    edit(root, NATIVE_FUNCTIONS, *yaml_sign(root))
    edit(root, COMMON_MPS, *STALE)


def codes(result) -> list[str]:
    return [json.loads(line)["code"] for line in result.stdout.splitlines()] if result.stdout.startswith("{\"path") else [
        line.split(": ")[1].split()[0] for line in result.stdout.splitlines()
    ]


def test_select_and_ignore_by_code_and_prefix(run, check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    edit(check_tree, COMMON_MPS, *STALE)
    assert sorted(codes(run("check", "--root", check_tree))) == ["MPS002", "MPS009"]
    assert codes(run("check", "--root", check_tree, "--select", "MPS009")) == ["MPS009"]
    assert codes(run("check", "--root", check_tree, "--ignore", "MPS009")) == ["MPS002"]
    assert codes(run("check", "--root", check_tree, "--select", "MPS00", "--ignore", "MPS002,MPS001")) == ["MPS009"]
    # the most specific entry decides, as in ruff
    assert codes(run("check", "--root", check_tree, "--ignore", "MPS", "--select", "MPS002")) == ["MPS002"]
    clean = run("check", "--root", check_tree, "--ignore", "ALL")
    assert clean.exit_code == 0 and "no findings" in clean.stderr
    bad = run("check", "--root", check_tree, "--select", "E501")
    assert bad.exit_code == 2 and "'E501' is no rule code" in bad.stderr


def test_settings_from_pyproject_and_mpsgen_toml(run, check_tree):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    edit(check_tree, COMMON_MPS, *STALE)
    (check_tree / "pyproject.toml").write_text('[project]\nname = "torch"\n\n[tool.mpsgen]\nignore = ["MPS009"]\n')
    assert codes(run("check", "--root", check_tree)) == ["MPS002"]
    # flags add to the file's ignore list; --select replaces its select
    assert codes(run("check", "--root", check_tree, "--ignore", "MPS002")) == []
    (check_tree / ".mpsgen.toml").write_text('select = ["MPS009"]\n')  # takes precedence over pyproject.toml
    assert codes(run("check", "--root", check_tree)) == ["MPS009"]
    (check_tree / ".mpsgen.toml").write_text('selct = ["MPS009"]\n')
    bad = run("check", "--root", check_tree)
    assert bad.exit_code == 2 and ".mpsgen.toml" in bad.stderr and "unknown key 'selct'" in bad.stderr
    (check_tree / ".mpsgen.toml").write_text('select = ["MPS9"]\n')
    bad = run("check", "--root", check_tree)
    assert bad.exit_code == 2 and "'MPS9' is no rule code" in bad.stderr
    (check_tree / ".mpsgen.toml").write_text("select = [\n")
    bad = run("check", "--root", check_tree)
    assert bad.exit_code == 2 and "not valid TOML" in bad.stderr


def test_baseline_records_then_reports_only_new_findings(run, check_tree, tmp_path):
    edit(check_tree, BINARY_MM, "REGISTER_DISPATCH(hypot_stub, &hypot_mps_kernel);\n", "")
    baseline = tmp_path / "baseline.json"
    first = run("check", "--root", check_tree, "--baseline", baseline)
    assert first.exit_code == 0 and "recorded 1 finding" in first.stderr
    again = run("check", "--root", check_tree, "--baseline", baseline)
    assert again.exit_code == 0 and again.stdout == "" and "1 known finding(s)" in again.stderr
    # lines moving above a known finding do not make it new
    edit(check_tree, NATIVE_FUNCTIONS, "- func: hypot.out(", "# a comment\n# another\n- func: hypot.out(")
    assert run("check", "--root", check_tree, "--baseline", baseline).exit_code == 0
    edit(check_tree, COMMON_MPS, *STALE)
    new = run("check", "--root", check_tree, "--baseline", baseline)
    assert new.exit_code == 1 and codes(new) == ["MPS009"]  # exp's (hypot's is not stale: its stub is unregistered)
    # from the settings, relative to the tree root (and inside it: see the test below)
    (check_tree / "baseline.json").write_bytes(baseline.read_bytes())
    (check_tree / ".mpsgen.toml").write_text('baseline = "baseline.json"\n')
    assert codes(run("check", "--root", check_tree)) == ["MPS009"]
    baseline.write_text("{not json")
    bad = run("check", "--root", check_tree, "--baseline", baseline)
    assert bad.exit_code == 2 and "not a baseline" in bad.stderr


def test_fix_diff_previews_and_fix_applies_all_at_once(run, check_tree):
    faults(check_tree)
    before = {p: (check_tree / p).read_text() for p in (UNARY_OPS_MM, COMMON_MPS)}
    preview = run("check", "--root", check_tree, "--fix", "--diff")
    assert preview.exit_code == 1
    assert "-TORCH_IMPL_FUNC(sign_out_mps)" in preview.stdout and '-            "hypot": None,' in preview.stdout
    assert "nothing written" in preview.stderr
    assert {p: (check_tree / p).read_text() for p in before} == before
    fixed = run("check", "--root", check_tree, "--fix")
    assert fixed.exit_code == 1  # the MPS002 finding has no mechanical fix and remains
    assert codes(fixed) == ["MPS002"]
    assert "TORCH_IMPL_FUNC(sign_out_mps)" not in (check_tree / UNARY_OPS_MM).read_text()
    assert '"hypot": None' not in (check_tree / COMMON_MPS).read_text()
    assert '"exp": [torch.float16]' not in (check_tree / COMMON_MPS).read_text()
    again = run("check", "--root", check_tree, "--fix", "--diff")
    assert again.exit_code == 0 and again.stdout == ""


def test_fix_keeps_an_xfail_whose_reason_is_not_a_missing_kernel(run, check_tree):
    """A stale entry outside the "unimplemented" list whose comment gives another reason
    (numerics) is reported, not removed: the fix says so."""
    text = (check_tree / COMMON_MPS).read_text()
    assert '        ON_MPS_XFAILLIST: dict[str, list | None] = {\n' in text
    edit(check_tree, COMMON_MPS, '        ON_MPS_XFAILLIST: dict[str, list | None] = {\n',
         '        ON_MPS_XFAILLIST: dict[str, list | None] = {\n            # precision issue: results differ from CPU by 1 ulp\n            "exp": None,\n')
    line = line_of(check_tree, COMMON_MPS, '"exp": None')
    assert codes(run("check", "--root", check_tree)) == ["MPS009"]
    res = run("check", "--root", check_tree, "--fix")
    assert res.exit_code == 1 and f"not fixed: {COMMON_MPS}:{line}:" in res.stderr and "precision issue" in res.stderr
    assert '"exp": None' in (check_tree / COMMON_MPS).read_text()


def test_diff_needs_fix(run, check_tree):
    res = run("check", "--root", check_tree, "--diff")
    assert res.exit_code == 2 and "--diff previews --fix" in res.stderr


@pytest.mark.parametrize("where", ["/elsewhere/x.json", "../outside/x.json", "sub/../../x.json"])
def test_a_tree_config_cannot_send_the_baseline_outside_the_tree(run, check_tree, tmp_path, where):
    """A cloned repository's `.mpsgen.toml` must not make the read-only check write elsewhere:
    refused, naming the config line; the same path typed as --baseline stays the user's."""
    (check_tree / ".mpsgen.toml").write_text(f'select = ["MPS"]\nbaseline = "{where}"\n')
    before = set((tmp_path).rglob("*"))
    res = run("check", "--root", check_tree)
    assert res.exit_code == 2 and ".mpsgen.toml:2: baseline = " in res.output and "leads outside the tree" in res.output
    assert set(tmp_path.rglob("*")) == before and not Path("/elsewhere").exists()
    # the user's own --baseline wins over the setting, which is then not judged
    typed = tmp_path / "mine.json"
    assert run("check", "--root", check_tree, "--baseline", typed).exit_code == 0 and typed.is_file()
    (check_tree / ".mpsgen.toml").write_text('baseline = "records/baseline.json"\n')
    (check_tree / "records").mkdir()
    assert run("check", "--root", check_tree).exit_code == 0 and (check_tree / "records/baseline.json").is_file()

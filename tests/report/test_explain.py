"""explain and coverage on a practice tree holding torch 2.13's real yaml, test lists and
OpInfos: the statuses, the tests holding an op back, the next command, and coverage counts
checked against an independent reading of the yaml (yaml.CSafeLoader)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from mpsgen.report.explain import STATUS_MEANING, STATUSES, addable_ops, coverage
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from tests.releases import INSTALLED


def test_explain_acosh_shows_its_mps_kernel_and_the_migrate_command(real_tree: Path, run, release):
    res = run("explain", "acosh", "--root", real_tree)
    assert res.exit_code == 0, res.output
    out = res.stdout
    if release != INSTALLED:  # upstream migrated acosh in 2.14: it runs on Metal there
        assert out.startswith("acosh: metal") and "acosh.out" in out and "MPS -> acosh_out_mps" not in out
        assert "next: nothing to add: acosh runs on Metal" in out
        return
    assert out.startswith("acosh: mps-kernel")
    assert "acosh.out" in out and "MPS -> acosh_out_mps" in out and "UnaryOps.mm:" in out
    assert "stub acosh_stub (aten/src/ATen/native/UnaryOps.h:" in out
    assert "acosh                                    line " in out and "runs as acosh.out" in out
    assert "next: mpsgen migrate-from-mpsgraph acosh --dry-run" in out


def test_explain_heaviside_shows_missing_and_what_holds_it_back(real_tree: Path, run):
    res = run("explain", "heaviside", "--format", "json", "--root", real_tree)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "missing"
    out_row = next(r for r in doc["rows"] if r["row"] == "heaviside.out")
    assert out_row["status"] == "missing" and out_row["stub"] == "heaviside_stub"
    assert any("UNIMPLEMENTED_XFAILLIST['heaviside'] (every dtype)" in x for x in doc["xfails"])
    assert any("device_type='mps'" in d for d in doc["decorators"])
    assert doc["next_step"].startswith("mpsgen new-op heaviside --spec ") and doc["next_step"].endswith("specs/heaviside.yaml --dry-run")


def test_explain_an_op_missing_on_one_row_and_on_mpsgraph_on_others_says_migrate(real_tree: Path, run):
    """logit: logit_ has no MPS kernel, logit and logit.out run MPSGraph code. new-op would
    refuse (the op has an MPS kernel); the migration registers the stub and gives logit_ MPS.
    (The practice tree lacks logit's MPSGraph code: without it, explain says the migration cannot run.)"""
    from tests.plan.test_migrate import OPS, POINTWISE_MM

    res = run("explain", "logit", "--root", real_tree)
    assert "next: none (mpsgen cannot migrate logit here): cannot find the MPSGraph implementation of logit_mps" in res.stdout
    (real_tree / OPS / "PointwiseOps.mm").write_text(POINTWISE_MM, encoding="utf-8")
    res = run("explain", "logit", "--format", "json", "--root", real_tree)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "missing"
    assert {r["row"]: r["status"] for r in doc["rows"]} == {"logit": "mps-kernel", "logit_": "missing", "logit.out": "mps-kernel"}
    # no .cpp of the practice tree defines the `logit` kernel: the command names the stub it guessed, and says so
    assert doc["command"] == "mpsgen migrate-from-mpsgraph logit --stub logit_stub --dry-run"
    assert doc["next_step"] == doc["command"] + (
        "   (logit_stub is chosen by its name alone: no .cpp in this tree defines logit; check that it calls logit_stub)"
    )
    res = run(*doc["command"].split()[1:], "--root", real_tree)
    assert res.exit_code == 0, res.output


def test_explain_a_metal_op_lists_its_kernel_and_dtypes(real_tree: Path, run):
    res = run("explain", "hypot", "--root", real_tree)
    assert res.exit_code == 0
    assert res.stdout.startswith("hypot: metal")
    assert "struct hypot_functor" in res.stdout and "registered input types: float, half, bfloat" in res.stdout


def test_explain_unknown_op_is_refused(real_tree: Path, run):
    res = run("explain", "no_such_op", "--root", real_tree)
    assert res.exit_code == 1 and "is not in" in res.output
    assert run("explain", "a b", "--root", real_tree).exit_code == 2


def _independent(yaml_path: Path) -> dict[str, dict]:
    """Per op, from the yaml alone: whether any row has an MPS key, and whether every row is
    composite for dense tensors (no dispatch, or only Composite* keys beside sparse,
    quantized, nested, mkldnn or meta ones)."""
    data = yaml.load(yaml_path.read_text(), Loader=yaml.CSafeLoader)
    ops: dict[str, dict] = {}
    for entry in data:
        name = entry["func"].split("(")[0].split(".")[0]
        op = name[:-1] if name.endswith("_") and not name.startswith("_") else name
        keys = set()
        for k in (entry.get("dispatch") or {}):
            keys |= {x.strip() for x in k.split(",")}
        info = ops.setdefault(op, {"mps": False, "composite": True})
        info["mps"] |= "MPS" in keys
        composite = {k for k in keys if k.startswith("Composite")}
        dense = {k for k in keys if not any(k.startswith(p) for p in ("Sparse", "Quantized", "Nested", "Mkldnn", "Meta", "ZeroTensor"))}
        if keys and not (composite and dense <= composite):
            info["composite"] = False
    return ops


def test_coverage_counts_agree_with_an_independent_reading(real_tree: Path, release):
    cov = coverage(PytorchTree(real_tree))
    ind = _independent(real_tree / NATIVE_FUNCTIONS)
    assert set(cov.ops) == set(ind)
    assert sum(cov.counts.values()) == len(ind)
    composite = {op for op, i in ind.items() if i["composite"]}
    assert {op for op, s in cov.ops.items() if s == "composite"} == composite
    with_mps = {op for op, i in ind.items() if i["mps"]}
    assert {op for op, s in cov.ops.items() if s in ("metal", "mps-kernel", "stub-unregistered")} <= with_mps
    # acosh: on MPSGraph in 2.13, migrated to Metal by upstream in 2.14
    acosh = "mps-kernel" if release == INSTALLED else "metal"
    assert cov.ops["hypot"] == "metal" and cov.ops["acosh"] == acosh and cov.ops["heaviside"] == "missing"
    assert cov.candidates and cov.candidates[0]["rank"] == 1 and cov.candidates[0]["migratable"]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}
        self.ops = 0
        self.refs: list[str] = []
        self._status: str | None = None
        self._in_ops = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and a.get("class") == "count":
            self._status = a["data-status"]
        if tag == "table" and a.get("id") == "ops":
            self._in_ops = True
        if tag == "tr" and self._in_ops:
            self.ops += 1
        for k in ("src", "href"):
            if k in a:
                self.refs.append(a[k])

    def handle_endtag(self, tag):
        if tag == "table":
            self._in_ops = False

    def handle_data(self, data):
        if self._status is not None:
            self.counts[self._status] = int(data)
            self._status = None


def test_coverage_html_is_one_self_contained_page_with_the_counts(real_tree: Path, run, tmp_path: Path):
    page = tmp_path / "cov.html"
    res = run("coverage", "--format", "html", "--output", page, "--root", real_tree)
    assert res.exit_code == 0, res.output
    cells = _Cells()
    cells.feed(page.read_text())
    cov = coverage(PytorchTree(real_tree))
    assert cells.counts == {s: cov.counts.get(s, 0) for s in STATUSES}
    assert cells.ops == len(cov.ops) + 1  # the header row
    assert cells.refs == []  # nothing loaded from elsewhere
    text = page.read_text()
    for status, meaning in STATUS_MEANING.items():  # the legend
        assert f"{status}</td>" in text and html.escape(meaning) in text, status
    assert 'id="filter"' in text and 'id="addable"' in text
    again = run("coverage", "--format", "html", "--output", page, "--root", real_tree)
    assert again.exit_code == 2 and "exists" in again.output and "--force" in again.output
    page.write_text("old")
    forced = run("coverage", "--format", "html", "--output", page, "--force", "--root", real_tree)
    assert forced.exit_code == 0 and page.read_text() == text
    assert run("coverage", "--force", "--root", real_tree).exit_code == 2  # --force without -o


def test_coverage_table_markdown_and_json(real_tree: Path, run):
    table = run("coverage", "--root", real_tree)
    assert table.exit_code == 0 and "MPS coverage of" in table.stdout and "migration candidates" in table.stdout
    md = run("coverage", "--format", "markdown", "--root", real_tree)
    assert md.stdout.startswith("MPS coverage of ") and "| status | ops | share | meaning |" in md.stdout
    assert "| heaviside | binary | specs/heaviside.yaml | ready |" in md.stdout
    doc = json.loads(run("coverage", "--format", "json", "--root", real_tree).stdout)
    assert doc["total"] == sum(doc["counts"].values())
    assert set(doc["statuses"]) == {*STATUSES, "delegate"}
    heaviside = next(x for x in doc["addable_ops"] if x["op"] == "heaviside")
    assert heaviside["kind"] == "binary" and heaviside["spec"] == "specs/heaviside.yaml"
    assert heaviside["command"].startswith("mpsgen new-op heaviside --spec ")


@pytest.mark.parametrize("columns", [80, 120])
def test_coverage_fits_the_terminal(real_tree: Path, run, monkeypatch, columns: int):
    """The summary and a legend of every status first, then aligned columns within the
    terminal's width, with no name cut: the top 20 candidates (--limit N, --all) and the
    missing ops new-op can add."""
    monkeypatch.setenv("COLUMNS", str(columns))
    cov = addable_ops(PytorchTree(real_tree), coverage(PytorchTree(real_tree)))
    res = run("coverage", "--root", real_tree)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"MPS coverage of {len(cov.ops)} ops in {NATIVE_FUNCTIONS}"
    assert max(map(len, lines)) <= columns, [line for line in lines if len(line) > columns]
    legend = lines[2 : 2 + len(STATUSES) + 2]
    assert legend[0].split() == ["status", "ops", "share", "meaning"]
    for line, status in zip(legend[1:], [*STATUSES, "delegate"]):
        assert line.split()[0] == status and line.endswith(STATUS_MEANING[status])
        if status != "delegate":
            assert line.split()[1] == str(cov.counts.get(status, 0))
    # aligned: each count's last digit under the heading's last letter
    header = next(line for line in lines if line.lstrip().startswith("tag "))
    for line in lines[lines.index(header) + 1 : lines.index(header) + 1 + len(cov.by_tag)]:
        for word in header.split()[1:]:
            end = header.index(f" {word}") + len(word) + 1
            assert line[end - 1].isdigit() and (end == len(line) or line[end] == " "), (word, line)
    shown = [line for line in lines if re.match(r"^ +\d+  \S", line)]
    assert len(shown) == 20 and [line.split()[1] for line in shown] == [x["op"] for x in cov.candidates[:20]]
    assert f"... {len(cov.candidates) - 20} more: --all lists them" in res.stdout
    assert re.search(r"^  heaviside +binary +yes +ready$", res.stdout, re.M)
    few = run("coverage", "--limit", "3", "--root", real_tree).stdout
    assert len([line for line in few.splitlines() if re.match(r"^ +\d+  \S", line)]) == 3
    everything = run("coverage", "--all", "--root", real_tree).stdout
    assert max(map(len, everything.splitlines())) <= columns
    words = set(everything.split())
    assert all(x["op"] in words for x in cov.candidates) and all(x["op"] in words for x in cov.addable)
    assert run("coverage", "--all", "--limit", "3", "--root", real_tree).exit_code == 2
    assert run("coverage", "--limit", "0", "--root", real_tree).exit_code == 2


def test_version(run):
    res = run("--version")
    assert res.exit_code == 0 and res.stdout.startswith("mpsgen ")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _render(page: Path, tmp_path: Path) -> str:
    """The DOM of ``page`` after Chromium ran its script (headless, no network)."""
    proc = subprocess.run(
        [CHROMIUM, *_HEADLESS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium); .ci/run installs it")
def test_coverage_html_renders_in_chromium_with_its_counts_and_sorts(real_tree: Path, run, tmp_path: Path):
    page = tmp_path / "cov.html"
    assert run("coverage", "--format", "html", "--output", page, "--root", real_tree).exit_code == 0
    cov = coverage(PytorchTree(real_tree))
    cells = _Cells()
    cells.feed(_render(page, tmp_path))
    assert cells.counts == {s: cov.counts.get(s, 0) for s in STATUSES}
    assert cells.ops == len(cov.ops) + 1
    # typing in the filter box, in the browser, leaves the ops (and addable ops) that match
    typed = tmp_path / "typed.html"
    typed.write_text(page.read_text().replace(
        "</body>",
        '<script>var f = document.getElementById("filter"); f.value = "special_";'
        ' f.dispatchEvent(new Event("input"));</script></body>',
    ))
    dom = _render(typed, tmp_path)
    body = dom[dom.index('<table id="ops">') :]
    visible = re.findall(r'<tr><td>([\w.]+)</td><td data-status=', body)
    hidden = re.findall(r'<tr hidden=""><td>([\w.]+)</td><td data-status=', body)
    assert visible and all("special_" in op for op in visible) and len(visible) + len(hidden) == len(cov.ops)
    assert f'<span id="shown">{len(visible)}</span>' in dom
    # a click on the "migration rank" header, in the browser, sorts the ops by rank
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.read_text().replace("</body>", '<script>document.querySelector(\'#ops th[data-col="2"]\').click();</script></body>'))
    dom = _render(clicked, tmp_path)
    ranks = re.findall(r'<td data-status="[\w-]+">[\w-]+</td><td>(\d*)</td>', dom)
    numbers = [int(r) for r in ranks if r]
    assert numbers and numbers == sorted(numbers) and ranks[: len(numbers)] == [str(n) for n in numbers]


def test_python_m_mpsgen_version_and_completion():
    proc = subprocess.run([sys.executable, "-m", "mpsgen", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("mpsgen ")
    helptext = subprocess.run([sys.executable, "-m", "mpsgen", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--install-completion" in helptext and "--version" in helptext
    for cmd in ("new-op", "migrate-from-mpsgraph", "explain", "coverage", "doctor", "tutorial", "demo"):
        sub = subprocess.run([sys.executable, "-m", "mpsgen", cmd, "--help"], capture_output=True, text=True, timeout=60).stdout
        assert "Example: mpsgen " in sub, cmd
    new_op = subprocess.run([sys.executable, "-m", "mpsgen", "new-op", "--help"], capture_output=True, text=True, timeout=60).stdout
    assert "--unary " in new_op and "<bool>" not in new_op  # boolean flags shown as flags


def test_explain_reads_the_tree_facts_without_the_lint():
    """explain shares check's index and cross-file facts (mpsgen/tree/index.py, tree/facts.py),
    not the lint: importing it loads no module of mpsgen.check (and registers no rule)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import mpsgen.report.explain\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mpsgen.'))))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[2])], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = set(proc.stdout.split())
    assert {"mpsgen.tree.facts", "mpsgen.tree.index"} <= loaded
    assert not {m for m in loaded if m == "mpsgen.check" or m.startswith("mpsgen.check.")}, sorted(loaded)

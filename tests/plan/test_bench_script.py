"""The benchmark script --with-bench writes, run here on torch's CPU build (`--device cpu`): twice
with two labels, then `--compare`, whose markdown table has one row per registered dtype x size x
layout and a speed-up column. Generated from the spec alone: every shipped spec's script runs."""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.plan.companions import BENCH_LAYOUTS, BENCH_QUICK_SIZES, BENCH_SIZES, bench_script
from mpsgen.core.errors import Refused
from mpsgen.spec.registrations import input_dtypes
from mpsgen.core.resources import resource_dir
from mpsgen.spec.op import OpSpec, load_spec
from mpsgen.tree.dtypes import TORCH_DTYPES

SPECS = sorted(p.stem for p in resource_dir("specs").glob("*.yaml"))
# what torch 2.13's CPU op itself refuses (oneDNN: "could not create a primitive descriptor for
# the reorder primitive" for gelu_backward's grad_output (r, c) with self (c,))
CPU_REFUSES = {("gelu_backward", "broadcast")}
_ROW = re.compile(r"^\| (\w+) \| ([\d,]+) \| (\w+) \| ([\d.,]+|n/a) \| ([\d.,]+|n/a) \| (\*\*)?(\d+\.\d\dx|n/a)(\*\*)? \|$")


def _spec(op: str) -> OpSpec:
    return load_spec(resource_dir("specs") / f"{op}.yaml")


def _dtypes(spec: OpSpec) -> list[str]:
    return list(dict.fromkeys(TORCH_DTYPES[i].removeprefix("torch.") for i, _o in input_dtypes(spec)))


def _module(path: Path):
    loaded = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "op,command,tensors",
    [("acosh", "migrate-from-mpsgraph", 1), ("heaviside", "new-op", 2), ("softplus", "new-op", 1)],
    ids=["unary", "binary", "unary_params"],
)
def test_the_script_times_before_and_after_and_prints_the_table(op: str, command: str, tensors: int, tmp_path: Path):
    spec = _spec(op)
    name, text = bench_script(spec, command)
    assert name == f"bench_{op}.py"
    script = tmp_path / name
    script.write_text(text)
    for label in ("before", "after"):
        proc = subprocess.run(
            [sys.executable, name, "--label", label, "--device", "cpu", "--quick"], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr
        assert f"wrote bench_{op}_{label}.json" in proc.stderr
    proc = subprocess.run(
        [sys.executable, name, "--compare", f"bench_{op}_before.json", f"bench_{op}_after.json"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = lines.index("| dtype | elements | layout | before (cpu) | after (cpu) | speed-up |")
    assert lines[head - 2].startswith(f"`{op}`, median time per call in µs; before: torch ")
    assert lines[head + 1] == "|:--|--:|:--|--:|--:|--:|"
    rows = []
    for line in lines[head + 2 :]:
        if not line:
            break
        match = _ROW.match(line)
        assert match, line
        rows.append(match.groups())
    layouts = list(BENCH_LAYOUTS) + (["broadcast"] if tensors > 1 else [])
    dtypes = _dtypes(spec)
    # one row per dtype x size x layout, in that order
    assert [(r[0], int(r[1].replace(",", "")), r[2]) for r in rows] == [
        (d, n, layout) for d in dtypes for n in BENCH_QUICK_SIZES for layout in layouts
    ]
    timed = [r for r in rows if r[6] != "n/a"]
    assert len(timed) >= len(rows) - len(BENCH_QUICK_SIZES) * len(layouts)  # at most one dtype the CPU op lacks
    assert all(r[3] != "n/a" and r[4] != "n/a" for r in timed)
    assert all(r[0] == "complex32" for r in rows if r[6] == "n/a")  # (acosh_cpu has no ComplexHalf)
    after = lines[lines.index("", head) + 1 :]
    assert after[0].startswith("Speed-up (before / after): geometric mean ") and f"over {len(timed)} cases" in after[0]
    assert after[1].startswith("Layouts: contiguous = ")
    assert after[-1] == "(--quick: a check that the script runs, not a benchmark.)"
    record = json.loads((tmp_path / f"bench_{op}_after.json").read_text())
    assert record["op"] == op and record["device"] == "cpu" and record["label"] == "after" and len(record["results"]) == len(rows)


def test_the_script_says_how_to_run_it_and_needs_only_torch():
    for op, command, before in (("heaviside", "new-op", "--label before --device cpu"), ("acosh", "migrate-from-mpsgraph", "--label before\n")):
        _name, text = bench_script(_spec(op), command)
        doc = ast.get_docstring(ast.parse(text))
        assert f"python bench_{op}.py {before}" in doc and f"python bench_{op}.py --label after" in doc
        assert f"python bench_{op}.py --compare bench_{op}_before.json bench_{op}_after.json" in doc
        assert ("the \"before\" is the CPU op" in doc) == (command == "new-op")
        assert ("base commit" in doc) == (command != "new-op")
        assert "torch.mps.synchronize" in text and "warmup" in text
        assert f"{BENCH_SIZES[-1]:,}" in doc and BENCH_SIZES[-1] > 1 << 24
        imported = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module.split(".")[0])
        assert imported - set(sys.stdlib_module_names) == {"torch"}, imported


def test_every_shipped_spec_makes_a_script_that_runs(tmp_path: Path, monkeypatch):
    """Nothing op-specific: each shipped spec's script times its op on float32 over every
    layout, with the Scalar (by the name the schema gives it) or params it takes."""
    monkeypatch.chdir(tmp_path)
    for op in SPECS:
        spec = _spec(op)
        name, text = bench_script(spec, "new-op")
        (tmp_path / name).write_text(text)
        module = _module(tmp_path / name)
        assert module.main(["--label", "x", "--device", "cpu", "--quick", "--sizes", "64", "--dtypes", "float32"]) == 0, op
        record = json.loads((tmp_path / f"bench_{op}_x.json").read_text())
        failed = [(op, r["layout"]) for r in record["results"] if r["error"]]
        assert len(record["results"]) == len(module.LAYOUTS) and set(failed) <= CPU_REFUSES, failed
        if spec.has_alpha:
            assert module._scalar_name(getattr(module.torch.ops.aten, op)) == {"sub": "alpha"}.get(op, "eps")
        if spec.has_params:
            assert set(module.PARAMS) == {p.name for p in spec.params} - set(spec.fixed)


def test_params_and_scalars_come_from_the_spec():
    _name, text = bench_script(_spec("softplus"), "new-op")
    assert 'PARAMS = {"beta": 1.0, "threshold": 20.0}' in text  # try_params' first entry
    _name, text = bench_script(_spec("threshold_backward"), "new-op")
    assert 'PARAMS = {"threshold": 0.0}' in text and "TENSORS = 2" in text  # value is fixed by the caller
    _name, text = bench_script(_spec("threshold"), "new-op")
    assert "TENSORS = 1" in text and '"broadcast"' not in text.split("LAYOUTS = ")[1].splitlines()[0]
    _name, text = bench_script(_spec("sub"), "migrate-from-mpsgraph")
    assert '("float32", 1.0)' in text and '("int64", 1)' in text  # mpsgen try's first alpha, by type
    _name, text = bench_script(_spec("special_laguerre_polynomial_l"), "new-op")
    assert "RANGES = [(-10.0, 10.0), (-10.0, 10.0)]" in text  # within its try_domain
    with pytest.raises(Refused, match="gives no `params:`"):
        bench_script(OpSpec(name="softplus", kind="unary_params"), "new-op")


def test_compare_refuses_a_file_of_another_op(tmp_path: Path):
    name, text = bench_script(_spec("heaviside"), "new-op")
    (tmp_path / name).write_text(text)
    (tmp_path / "other.json").write_text(json.dumps({"op": "sub", "results": []}))
    (tmp_path / "broken.json").write_text("[1]")
    for files, said in ((["other.json", "other.json"], "times 'sub', not heaviside"), (["broken.json", "other.json"], "not a result file")):
        proc = subprocess.run([sys.executable, name, "--compare", *files], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, name, "--label", "before"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "MPS is not available here" in proc.stderr and "--device cpu" in proc.stderr

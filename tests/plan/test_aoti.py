"""The AOTInductor C shim (issue 20, deliver 4), on both releases' real files: mpsgen's text
reading of fallback_ops.py, c_shim_mps.h and native_functions.yaml agrees with torchgen itself
(run in a child interpreter from the release's own torchgen), the header mpsgen regenerates
through the tree's torchgen is the release's header byte for byte, and new-op adds exactly the
declaration torchgen writes for an op it gives MPS to, or refuses with the command that does."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpsgen.plan.aoti import affected_fallback_ops, generate_header
from mpsgen.check import run_check
from mpsgen.tree import NATIVE_FUNCTIONS, PytorchTree
from mpsgen.tree.aoti import C_SHIM_MPS, FALLBACK_OPS, REGENERATE, TAGS_YAML, expected_shims, read_declarations, read_fallback_ops
from tests.conftest import snapshot

# torchgen's own answer for every function it parses: (fallback name, the backend whose kernel
# its MPS shim calls or None, whether gen_declaration_and_definition writes it, generated?)
ORACLE = r"""
import json, sys
site, yaml_path, tags_path = sys.argv[1:4]
sys.path.insert(0, site)
from torchgen.gen import get_grouped_native_functions, parse_native_yaml
from torchgen.gen_aoti_c_shim import gen_declaration_and_definition, get_backend_index_for_aoti, get_fallback_op_name
from torchgen.model import DispatchKey, NativeFunctionsGroup
parsed = parse_native_yaml(yaml_path, tags_path, {DispatchKey.MTIA})
mapping = {}
for g in get_grouped_native_functions(parsed.native_functions):
    if isinstance(g, NativeFunctionsGroup):
        for f in g.functions():
            if f.structured_delegate is not None:
                mapping[f.structured_delegate] = g
                break
out = {}
for f in parsed.native_functions:
    index = get_backend_index_for_aoti(f, mapping, DispatchKey.MPS, parsed.backend_indices, False)
    try:
        gen_declaration_and_definition(f.func, "mps", "at::mps::f", {})
        shim = True
    except NotImplementedError:
        shim = False
    out[get_fallback_op_name(f)] = [str(index.dispatch_key) if index else None, shim]
if len(sys.argv) > 4:  # the declaration torchgen writes for one op
    import torchgen.gen_aoti_c_shim as shim

    shim.declaration_definition_cache.clear()  # filled above, without the entry's versions
    f = next(f for f in parsed.native_functions if get_fallback_op_name(f) == sys.argv[4])
    out = gen_declaration_and_definition(f.func, "mps", "at::mps::f", json.loads(sys.argv[5]))[0]
json.dump(out, sys.stdout)
"""


def site_of(real_sources) -> Path:
    """The folder holding the release's torch/ and torchgen/ (the wheel's files)."""
    return real_sources[FALLBACK_OPS].parents[2]


def torchgen_says(real_sources, yaml_path: Path, *extra: str):
    proc = subprocess.run(
        [sys.executable, "-c", ORACLE, str(site_of(real_sources)), str(yaml_path), str(real_sources[TAGS_YAML]), *extra],
        capture_output=True, text=True, check=True,
    )
    return json.loads(proc.stdout)


def test_the_text_reading_agrees_with_torchgen_on_every_function(real_sources, release):
    """For each of the ~3,100 functions torchgen parses (the autogen'd ones too): the backend
    its MPS shim would call (MPS own or delegated, a composite kernel, none) and whether the
    shim writer takes its schema, read from the yaml text, equal torchgen's answers."""
    oracle = torchgen_says(real_sources, real_sources[NATIVE_FUNCTIONS])
    from mpsgen.tree.aoti import FallbackOp

    every = {k: FallbackOp(k, 0, {}) for k in oracle}
    ours = {e.op.key: e for e in expected_shims(every, real_sources[NATIVE_FUNCTIONS].read_text(encoding="utf-8"))}
    assert ours.keys() == oracle.keys()
    disagree = [
        (k, ours[k].backend, ours[k].declared, backend, shim)
        for k, (backend, shim) in oracle.items()
        if ours[k].backend != backend or (backend is not None and ours[k].declared is not shim)
    ]
    assert disagree == []
    # what torchgen's shim writer refuses although there is a kernel: Tensor[] returns, Dimname, Storage...
    refused = sorted(k for k, (backend, shim) in oracle.items() if backend and not shim)
    assert "aten.split.Tensor" in refused and "aten.lstm_mps_backward.default" in refused and len(refused) > 100
    assert sum(1 for b, _s in oracle.values() if b == "MPS") > 500


def test_fallback_ops_read_as_ast_reads_them(real_sources):
    text = real_sources[FALLBACK_OPS].read_text(encoding="utf-8")
    tree = ast.parse(text)
    for name in ("inductor_fallback_ops", "aten_shimified_ops"):
        node = next(
            n for n in tree.body
            if isinstance(n, (ast.Assign, ast.AnnAssign)) and name in [t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
        )
        literal = ast.literal_eval(node.value)
        ours = read_fallback_ops(text, name)
        assert {k: (o.line, o.meta) for k, o in ours.items()} == {
            k.value: (k.lineno, literal[k.value]) for k in node.value.keys
        }
    assert len(read_fallback_ops(text)) > 150


def test_declarations_are_read_with_their_version_guards(real_sources):
    text = real_sources[Path(C_SHIM_MPS).as_posix()].read_text(encoding="utf-8")
    decls = read_declarations(text)
    lines = text.split("\n")
    assert len(decls) == sum(1 for ln in lines if ln.startswith("AOTI_TORCH_EXPORT")) > 100
    for d in decls:
        before, after = lines[d.line - 2], lines[d.line]
        if d.guard:  # torchgen wraps each guarded declaration alone
            assert before == f"#if TORCH_FEATURE_VERSION >= {d.guard}" and after.startswith(f"#endif // TORCH_FEATURE_VERSION >= {d.guard}")
        else:
            assert not before.startswith("#if TORCH_FEATURE_VERSION")
    assert any(d.name.endswith("_v2") for d in decls)  # versioned entries


def test_the_header_regenerated_by_the_trees_torchgen_is_the_releases(real_tree: Path, release):
    tree = PytorchTree(real_tree)
    start = time.perf_counter()
    header, why = generate_header(tree, (real_tree / NATIVE_FUNCTIONS).read_text(encoding="utf-8"))
    took = time.perf_counter() - start
    assert why == "" and header == (real_tree / C_SHIM_MPS).read_text(encoding="utf-8")
    print(f"torch {release}: torchgen regenerated c_shim_mps.h in {took:.2f} s")
    assert took < 60


def test_check_finds_nothing_on_the_releases_files(real_tree: Path):
    """MPS014 on each release's real fallback_ops.py, c_shim_mps.h and native_functions.yaml
    (2.13.0's wheel ships the header too): no finding, and it did read them."""
    assert run_check(PytorchTree(real_tree), codes=frozenset({"MPS014"})).findings == []
    fallback = read_fallback_ops((real_tree / FALLBACK_OPS).read_text(encoding="utf-8"))
    expected = expected_shims(fallback, (real_tree / NATIVE_FUNCTIONS).read_text(encoding="utf-8"))
    declared = {d.name for d in read_declarations((real_tree / C_SHIM_MPS).read_text(encoding="utf-8"))}
    assert {n for e in expected if e.declared for n, _ in e.functions} == declared
    assert {e.backend for e in expected if e.declared} == {
        "MPS", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutograd"
    }


# -- new-op --------------------------------------------------------------------------------------
def add_fallback_op(root: Path, key: str, meta: str = "{}") -> None:
    """Put ``key`` into the tree's copy of inductor_fallback_ops, in its sorted place."""
    path = root / FALLBACK_OPS
    text = path.read_text(encoding="utf-8")
    anchor = '    "aten.histc.default": {},\n'
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, f'    "{key}": {meta},\n' + anchor), encoding="utf-8")


@pytest.mark.parametrize("meta", ["{}", '{"since": "TORCH_VERSION_2_14_0"}'])
def test_new_op_adds_the_declaration_torchgen_writes(real_tree: Path, real_sources, run, meta):
    """heaviside, made a fallback op here: new-op gives MPS to heaviside.out, which heaviside
    delegates to, so the header gains exactly torchgen's declaration of it (in a version
    guard when the entry says since), and check finds the tree consistent after."""
    add_fallback_op(real_tree, "aten.heaviside.default", meta)
    header_before = (real_tree / C_SHIM_MPS).read_text(encoding="utf-8")
    assert run_check(PytorchTree(real_tree), codes=frozenset({"MPS014"})).findings == []
    result = run("new-op", "heaviside", "--spec", "specs/heaviside.yaml", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert f"{C_SHIM_MPS}: regenerated by the tree's torchgen for aten.heaviside.default" in result.output
    header = (real_tree / C_SHIM_MPS).read_text(encoding="utf-8")
    declaration = torchgen_says(real_sources, real_tree / NATIVE_FUNCTIONS, "aten.heaviside.default", meta)
    added = [ln for ln in header.split("\n") if ln not in header_before.split("\n")]
    assert added == declaration.split("\n")
    assert declaration.startswith("#if TORCH_FEATURE_VERSION") == ("since" in meta)
    assert "AOTI_TORCH_EXPORT AOTITorchError aoti_torch_mps_heaviside(AtenTensorHandle self, AtenTensorHandle values, AtenTensorHandle* ret0);" in added
    assert sorted(header.split("\n")) == sorted(header_before.split("\n") + added)
    # torchgen run by the test on the written yaml gives the written header
    assert header == generate_header(PytorchTree(real_tree), (real_tree / NATIVE_FUNCTIONS).read_text(encoding="utf-8"))[0]
    assert run_check(PytorchTree(real_tree), codes=frozenset({"MPS014"})).findings == []


def test_new_op_without_a_torchgen_to_run_is_blocked_with_the_command(real_tree: Path, run):
    add_fallback_op(real_tree, "aten.heaviside.default")
    (real_tree / "torchgen/gen_aoti_c_shim.py").unlink()
    before = snapshot(real_tree)
    result = run("new-op", "heaviside", "--spec", "specs/heaviside.yaml", "--root", real_tree)
    assert result.exit_code == 1
    assert REGENERATE in result.output and "aten.heaviside.default" in result.output
    assert snapshot(real_tree) == before
    forced = run("new-op", "heaviside", "--spec", "specs/heaviside.yaml", "--root", real_tree, "--force")
    assert forced.exit_code == 0, forced.output
    assert (real_tree / C_SHIM_MPS).read_bytes() == before[C_SHIM_MPS]
    # check then says what is missing, at heaviside.out's MPS line
    findings = run_check(PytorchTree(real_tree), codes=frozenset({"MPS014"})).findings
    assert [(f.path, f.symbols) for f in findings] == [(NATIVE_FUNCTIONS, ("aten.heaviside.default", "aoti_torch_mps_heaviside"))]
    assert "MPS" in (real_tree / NATIVE_FUNCTIONS).read_text().split("\n")[findings[0].line - 1]


def test_a_torchgen_that_fails_blocks_too(real_tree: Path, run):
    add_fallback_op(real_tree, "aten.heaviside.default")
    gen = real_tree / "torchgen/gen.py"
    gen.write_text(gen.read_text() + "\nraise ImportError('broken checkout')\n")
    result = run("new-op", "heaviside", "--spec", "specs/heaviside.yaml", "--root", real_tree, "--dry-run")
    assert result.exit_code == 1
    assert "torchgen failed" in result.output and "broken checkout" in result.output and REGENERATE in result.output


def test_torchgen_runs_only_for_a_fallback_op(real_tree: Path, run, monkeypatch):
    """heaviside is no fallback op of either release: the text look finds nothing, torchgen
    is not run, the header stays."""
    import mpsgen.plan.aoti

    monkeypatch.setattr(mpsgen.plan.aoti, "generate_header", lambda *a: pytest.fail("torchgen was run"))
    header = (real_tree / C_SHIM_MPS).read_bytes()
    result = run("new-op", "heaviside", "--spec", "specs/heaviside.yaml", "--root", real_tree)
    assert result.exit_code == 0, result.output
    assert (real_tree / C_SHIM_MPS).read_bytes() == header


def test_a_migration_leaves_the_shim_alone(real_tree: Path):
    """Moving a row's MPS from its own line onto the shared one keeps its MPS kernel: no
    fallback op is affected (no torchgen run), whether or not the op is a fallback op."""
    text = (real_tree / NATIVE_FUNCTIONS).read_text(encoding="utf-8")
    m = re.search(r"^(    CPU, MPS): (histogram_histc)\n", text, re.M)  # histc's row, in both releases
    assert m
    split = text.replace(m.group(0), m.group(1).replace(", MPS", "") + f": {m.group(2)}\n    MPS: {m.group(2)}_mps\n", 1)
    tree = PytorchTree(real_tree)
    assert affected_fallback_ops(tree, split, text) == []
    dropped = text.replace(m.group(0), m.group(1).replace(", MPS", "") + f": {m.group(2)}\n", 1)
    assert affected_fallback_ops(tree, text, dropped) == ["aten.histc.default"]


def test_nothing_without_the_shim_files(own_tree: Path):
    tree = PytorchTree(own_tree)
    assert not (own_tree / FALLBACK_OPS).exists()
    text = (own_tree / NATIVE_FUNCTIONS).read_text(encoding="utf-8")
    assert affected_fallback_ops(tree, text, text.replace("CPU, CUDA:", "CPU, CUDA, MPS:")) == []
    assert run_check(tree, codes=frozenset({"MPS014"})).findings == []

"""What mpsgen writes into .mm files, and the practice tree's own .mm files, are type-checked by a
real clang against each release's real headers (tests/host_clang.py): the wheel's torch/include,
the ATen/ops headers torchgen makes from the tree's own yaml after the change, and mpsgen's model
of the Apple SDK (tests/apple_sdk). A host function calling a helper with the wrong arguments, a
TORCH_IMPL_FUNC for a kernel the yaml does not declare, a missing include or a made-up MPSGraph
method fails here as it would fail PyTorch's build."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpsgen.tree import NATIVE_FUNCTIONS
from mpsgen.tree.aoti import TAGS_YAML
from tests.conftest import snapshot
from tests.host_clang import ops_headers, operators_included, type_check, zig_clang
from tests.releases import INSTALLED, extracted

OPS = "aten/src/ATen/native/mps/operations"


@pytest.fixture(scope="module")
def clang() -> list[str]:
    cmd, why = zig_clang()
    if cmd is None:
        pytest.skip(why)
    return cmd


def wheel(release: str) -> Path:
    """The folder holding the release's torch/ (headers) and torchgen/."""
    if release == INSTALLED:
        import torchgen

        return Path(torchgen.__file__).parent.parent
    site, why = extracted(release)
    if site is None:
        pytest.skip(why)
    return site


def errors(clang: list[str], root: Path, release: str, files: list[Path], work: Path) -> list[str]:
    """clang's errors for ``files`` of the tree at ``root``, built as an MPS build of it would be."""
    site = wheel(release)
    ops = ops_headers(site, root / NATIVE_FUNCTIONS, root / TAGS_YAML,
                      operators_included([f.read_text(encoding="utf-8") for f in files]))
    include = site / "torch" / "include"
    work.mkdir(parents=True, exist_ok=True)
    return type_check(clang, files, [root / "aten/src", ops, include, include / "torch/csrc/api/include"], work)


def test_the_practice_tree_s_own_mm_files(clang, real_tree: Path, release: str, tmp_path: Path):
    files = sorted((real_tree / OPS).glob("*.mm"))
    assert len(files) >= 7
    found = errors(clang, real_tree, release, files, tmp_path / "clang")
    assert not found, "\n".join(found)

"""Golden before/after files: ``tests/golden/<name>``. Set MPSGEN_UPDATE_GOLDEN=1 to rewrite
them after reviewing a deliberate change of output."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"


def assert_golden(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("MPSGEN_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8", newline="")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"output differs from golden file {path}"

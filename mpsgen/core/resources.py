"""Where mpsgen's own data lives: ``templates/`` and ``specs/`` (no jinja2 here: the CLI
needs the paths before, or without, rendering anything)."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.lru_cache(maxsize=None)
def resource_dir(name: str) -> Path:
    """``templates`` or ``specs``: inside the installed wheel, or at the repository root."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / name, package.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mpsgen's {name}/ folder is missing from the installation")

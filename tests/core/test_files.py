"""mpsgen.core.files.write_whole: a whole file or none, and what it refuses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mpsgen.core.files import write_whole


def test_creates_whole_files_with_the_usual_mode_and_never_overwrites(tmp_path: Path):
    target = tmp_path / "out.patch"
    write_whole(target, b"x" * 10_000, replace=False)
    assert target.read_bytes() == b"x" * 10_000
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(FileExistsError):
        write_whole(target, b"other", replace=False)
    assert target.read_bytes() == b"x" * 10_000
    target.chmod(0o640)
    write_whole(target, b"new", replace=True)
    assert target.read_bytes() == b"new" and target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.patch"]  # no temporary file left


def test_a_size_limit_leaves_no_file_and_no_temporary_file(tmp_path: Path):
    """`ulimit -f 1` (1 KB): the write fails whole; the target never exists half-written."""
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
        "from mpsgen.core.files import write_whole\n"
        "try:\n"
        f"    write_whole({str(tmp_path / 'big.patch')!r}, b'y' * 100_000, replace=False)\n"
        "except OSError as exc:\n"
        "    print('refused', exc.errno)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert proc.stdout.startswith("refused"), proc.stderr
    assert list(tmp_path.iterdir()) == []

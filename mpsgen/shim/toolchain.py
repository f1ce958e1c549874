"""The C++ toolchain that the compile gate and ``try`` (functors, kernels, reductions) share:
finding a compiler, mpsgen's cache folders, and one bounded compile of a program (time,
memory, and a build that ran out of time remembered beside its binary)."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from mpsgen.core import child
from mpsgen.core.errors import BadInput, Refused

BUILD_TIME_LIMIT = 120.0  # seconds for compiling the program (it takes about half a second)
# the longest functor (or kernel body) mpsgen compiles: real ones are under 4 KB; a compiler
# given ten times that in one expression can run for minutes
SOURCE_LIMIT = 32 * 1024
COMPILERS = ("g++", "clang++", "c++")


def compiler() -> str | None:
    """The first C++ compiler on PATH (g++, clang++, c++), or None."""
    for name in COMPILERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def install_compiler_command(system: str | None = None) -> str:
    return "xcode-select --install" if (system or platform.system()) == "Darwin" else "sudo apt-get install -y g++"


def refuse_too_large(text: str, origin: str, what: str) -> None:
    """Refuse, before compiling, a ``what`` (functor, kernel body) over :data:`SOURCE_LIMIT`."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > SOURCE_LIMIT:
        raise BadInput(
            f"{origin}: the {what} is {size} bytes, over the {SOURCE_LIMIT} bytes ({SOURCE_LIMIT // 1024} KiB) mpsgen "
            "compiles; nothing written.",
            hint=f"Split the {what} into helper functions in the kernel file, or shorten it.",
        )


def out_of_memory(stderr: str) -> bool:
    """Whether a compiler's ``stderr`` says it ran out of memory (its address space is bounded)."""
    return bool(re.search(r"virtual memory exhausted|out of memory|Cannot allocate memory|std::bad_alloc", stderr))


def timed_out_note(entry: Path) -> str | None:
    """What an earlier build of the same source left at ``entry`` (``<binary>.timeout``) when it
    ran out of time, or None."""
    try:
        return entry.read_text(encoding="utf-8").strip() or "an earlier build ran out of time"
    except (OSError, UnicodeDecodeError):
        return None


def remember_timeout(entry: Path, what: str) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.write_text(what + "\n", encoding="utf-8")
    except OSError:
        pass  # (the next run only compiles again)


def cache_dir(kind: str) -> Path:
    """mpsgen's cache folder for ``kind`` (``try`` builds, ``gate`` compiler answers)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mpsgen" / kind


def compile_program(argv: list[str], binary: Path, what: str, where: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the compiler ``argv`` building ``binary`` (:mod:`mpsgen.core.child`: its own process group,
    bounded in time and memory). A build that ran out of time is remembered beside the binary
    (``<binary>.timeout``, keyed as the binary is), so the same source is refused at once."""
    marker = Path(str(binary) + ".timeout")
    earlier = timed_out_note(marker)
    if earlier is not None:
        raise Refused(
            f"{where}: {earlier} (remembered from an earlier run on this same source); stopped.",
            hint=f"Simplify {what}; or delete {marker} to compile it again.",
        )
    try:
        proc = child.run(
            argv, cwd=cwd, text=True, timeout=BUILD_TIME_LIMIT, memory=child.COMPILER_MEMORY, env={**os.environ, "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        said = f"compiling {what} did not finish within {BUILD_TIME_LIMIT:.0f} s"
        remember_timeout(marker, said)
        raise Refused(f"{where}: {said}; the compiler was stopped.", hint=f"Simplify {what}.") from None
    except OSError as exc:
        raise Refused(f"could not run the compiler {argv[0]} ({exc.strerror}).") from None
    if proc.returncode != 0 and out_of_memory(proc.stderr):
        raise Refused(
            f"{where}: compiling {what} ran out of the {child.COMPILER_MEMORY >> 20} MB of memory mpsgen gives a compiler; "
            "stopped.",
            hint=f"Simplify {what}.",
        )
    return proc

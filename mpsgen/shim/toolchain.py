"""The C++ toolchain that the compile gate and ``try`` (functors, kernels, reductions) share:
finding a compiler, mpsgen's cache folders, and the two ways mpsgen compiles against its Metal
model, each bounded (time, memory; :mod:`mpsgen.core.child`) and cached by content:
:func:`syntax_only_compile` (the gate: the compiler's answer is cached, in ``gate/``) and
:func:`build_program` (``try``: the program is cached, in ``try/``; a build that ran out of
time is remembered beside its binary)."""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from mpsgen.core import child
from mpsgen.core.errors import BadInput, Refused

BUILD_TIME_LIMIT = 120.0  # seconds for compiling the program (it takes about half a second)
COMPILE_TIME_LIMIT = 60.0  # seconds; a syntax-only compile of one functor takes well under one
TIMED_OUT = "the compiler did not finish within"  # (the cached answer of a compile that ran out of time)
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


def build_program(
    stem: str, files: dict[str, str], cxx: str, flags: list[str], what: str, where: str
) -> tuple[Path, bool, subprocess.CompletedProcess | None]:
    """(binary, cached, the failed compile or None) of ``files`` (``driver.cpp`` first, then the
    headers it includes), built in ``try/`` as ``<stem>-<key>``, the key hashing the files' text
    and the compiler. The sources stay beside the binary (``<stem>-<key>.src/``) to read an
    error against; a failed compile leaves no binary, so the next run compiles again."""
    key = hashlib.sha256("\0".join((*files.values(), cxx)).encode()).hexdigest()[:24]
    cache = cache_dir("try")
    binary = cache / f"{stem}-{key}"
    if binary.is_file():
        return binary, True, None
    work = cache / f"{stem}-{key}.src"
    work.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    tmp = cache / f".{stem}-{key}.tmp"
    proc = compile_program([cxx, "-std=c++17", *flags, "-o", str(tmp), "driver.cpp"], binary, what, where, cwd=work)
    if proc.returncode != 0:
        return binary, False, proc
    tmp.replace(binary)
    return binary, False, None


def syntax_only_compile(source: str, shim: str, cxx: str) -> tuple[int, str, bool]:
    """(return code, stderr, cached) of a syntax-only compile of ``source`` against ``shim``
    (``metal_shim.h``). A compile that runs out of time is remembered like any answer, so the
    same source is not compiled again (the entry's path is named, to delete for another try)."""
    try:
        stamp = os.stat(cxx).st_mtime_ns
    except OSError:
        stamp = 0
    key = hashlib.sha256("\0".join((source, shim, cxx, str(stamp))).encode()).hexdigest()[:32]
    entry = cache_dir("gate") / key
    try:
        code, _, stderr = entry.read_text(encoding="utf-8").partition("\n")
        if TIMED_OUT in stderr:
            stderr = stderr.rstrip("\n") + (
                f" (an earlier run on this same source; remembered in {entry}: delete that file to compile it again)"
            )
        return int(code), stderr, True
    except (OSError, ValueError):
        pass
    with tempfile.TemporaryDirectory(prefix="mpsgen-gate-") as work:
        try:
            Path(work, "metal_shim.h").write_text(shim, encoding="utf-8")
            Path(work, "driver.cpp").write_text(source, encoding="utf-8")
        except OSError as exc:
            raise Refused(
                f"the compile gate could not write the functor's test program in {work} ({exc.strerror}); nothing written.",
                hint="Free space or raise the file size limit where TMPDIR points, then run the command again.",
            ) from None
        try:
            proc = child.run(
                [cxx, "-std=c++17", "-fsyntax-only", "-w", "driver.cpp"], cwd=work, text=True,
                timeout=COMPILE_TIME_LIMIT, memory=child.COMPILER_MEMORY, env={**os.environ, "LC_ALL": "C"},
            )
            code, stderr = proc.returncode, proc.stderr
            if code != 0 and out_of_memory(stderr):
                stderr = f"driver.cpp:1:1: error: the compiler ran out of its {child.COMPILER_MEMORY >> 20} MB of memory\n{stderr}"
        except subprocess.TimeoutExpired:
            code, stderr = 1, f"driver.cpp:1:1: error: {TIMED_OUT} {COMPILE_TIME_LIMIT:.0f} s (stopped)"
        except OSError as exc:
            return 1, f"driver.cpp:1:1: error: could not run {cxx}: {exc.strerror}", False
    try:  # the answer is cached whole or not at all (a temp file renamed into place)
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{code}\n{stderr}")
        os.replace(tmp, entry)
    except OSError:
        pass  # an unwritable cache only costs the next run a compile
    return code, stderr, False

"""The processes mpsgen starts and waits for (the compile gate's and ``try``'s compilers, the
programs they build, the tree's torchgen): each in a session of its own, so that what it
starts in turn (g++'s ``cc1plus``) is in its process group, and the whole group is killed
(``os.killpg``) on every way out of the wait that is not the child's own end: its time limit,
an interrupt (Ctrl-C; SIGTERM and SIGHUP, which the CLI turns into one), any exception.

Bounds set in the child before it runs (inherited by what it starts): CPU seconds
(``RLIMIT_CPU``, a little over the time limit: the kernel ends a compiler left running even
when mpsgen itself is killed with SIGKILL and cannot kill it) and, when ``memory`` is given,
address space (``RLIMIT_AS``, on Linux). Nothing here prints; stdlib only, so any layer may use it.
"""

from __future__ import annotations

import os
import resource  # (imported here, never in the forked child: an import there could wait on a lock another thread holds)
import signal
import subprocess
import sys

COMPILER_MEMORY = 1 << 30  # bytes of address space for a compiler (a functor's compile peaks near 130 MB)
# RLIMIT_AS counts address space reserved, not used: on macOS every process maps the multi-GB
# dyld shared cache, so the bound would stop any compiler there; Linux only (the CPU bound holds on both)
BOUNDS_SPACE = sys.platform.startswith("linux")


def run(
    argv: list[str], *, timeout: float, memory: int | None = None, input: bytes | str | None = None,  # noqa: A002
    text: bool = False, cwd: str | os.PathLike | None = None, env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run ``argv`` to its end in a session of its own; its output captured, stdin ``input``
    (else /dev/null). Raises :class:`subprocess.TimeoutExpired` after ``timeout`` seconds and
    :class:`OSError` when it cannot start; any way out but the child's end kills its group."""
    cpu = int(timeout) + 2

    space = memory if memory is not None and BOUNDS_SPACE else None

    def bounds() -> None:  # (in the child, between fork and exec: system calls only; best effort)
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))  # soft: SIGXCPU, then SIGKILL
            if space is not None:
                resource.setrlimit(resource.RLIMIT_AS, (space, space))
        except (OSError, ValueError):
            pass

    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, cwd=cwd, env=env, text=text, start_new_session=True, preexec_fn=bounds,
    )
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except BaseException:
        kill_group(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s process group (its session: it leads it) and reap ``proc``. The group
    is killed before ``proc`` is reaped, while its id cannot name another group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _attempt in range(3):  # (a second Ctrl-C while reaping does not leave a zombie)
        try:
            proc.wait(timeout=10)
            break
        except KeyboardInterrupt:
            continue
        except subprocess.TimeoutExpired:
            break
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


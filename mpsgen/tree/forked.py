"""Work done in a forked child process while the caller goes on: ``mpsgen check`` reads
~10 MB of a checkout on every commit, and parts of it are independent of the rest until its
rules run (the yaml rows, the native .cpp sources the row -> stub resolver reads, ...).
Python threads would take turns on one core; a child process runs beside the parent.

One child runs all the jobs of a caller, in order (a fork costs the parent copies of the
pages it then writes: one child is cheaper than one per job). Each result is marshalled
(plain tuples, lists, dicts, sets, strings, numbers: C speed both ways, no import) into
memory shared with the parent as soon as it is ready, and a 16-byte notice says where, on a
pipe (a pipe holds 64 KB: results sent through it would keep the child waiting until the
parent reads them; notices never do).

Any failure (no ``os.fork`` on this platform, other threads running, a job raising, a result
not marshallable or too large, the child killed) leaves that job's :meth:`Forked.result`
None, and the caller does the work itself: a result never depends on whether a child ran.
Nor is a child started where the process may use one CPU only: there it would only add the
fork's cost to the same work.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

CAPACITY = 64 << 20  # shared bytes reserved for the results (address space: only what is written is backed; ~1 MB on upstream)
_NOTICE = 16  # a result's offset and length (-1: failed), 8 bytes each


class Forked:
    """Jobs ``fn(*args)`` computed in turn in a child process; :meth:`result` waits for one."""

    __slots__ = ("_fd", "_jobs", "_notices", "_pending", "_pid", "_shared")

    def __init__(self, pid: int, fd: int, shared, jobs: int):
        self._pid, self._fd, self._shared, self._jobs = pid, fd, shared, jobs
        self._notices: list[tuple[int, int]] = []  # (offset, length) of the results ready, in job order
        self._pending = b""

    @classmethod
    def start(cls, jobs: Sequence[tuple[Callable[..., object], tuple]]) -> Forked | None:
        """A child computing the jobs, or None where forking is not possible or not safe (no
        ``os.fork``; other threads running, whose locks a child could inherit held)."""
        threading = sys.modules.get("threading")
        if not jobs or not hasattr(os, "fork") or (threading is not None and threading.active_count() > 1) or usable_cpus() < 2:
            return None
        import mmap

        try:
            shared = mmap.mmap(-1, CAPACITY)  # anonymous and shared with the child
        except (OSError, ValueError):
            return None
        try:
            read_end, write_end = os.pipe()
        except OSError:
            shared.close()
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            shared.close()
            return None
        if pid == 0:  # the child: compute, publish, leave without the parent's exit handlers
            try:
                os.close(read_end)
                # not the caller's terminal or pipes: whoever waits for the parent's output
                # (pre-commit, a shell pipe) must not wait for the child too
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                _run(jobs, shared, write_end)
            except BaseException:  # noqa: BLE001 - an interrupt, a closed pipe: the parent computes what is missing
                pass
            finally:
                os._exit(0)
        os.close(write_end)
        return cls(pid, read_end, shared, len(jobs))

    def result(self, job: int = 0) -> object:
        """Job ``job``'s result, or None (then compute it in-process). Waits for the child
        to have published it (or to have ended)."""
        while len(self._notices) <= job and self._fd >= 0:
            try:
                chunk = os.read(self._fd, _NOTICE * self._jobs)
            except OSError:
                chunk = b""
            if not chunk:  # the child is done (or gone): what is missing stays None
                self._close()
                break
            self._pending += chunk
            while len(self._pending) >= _NOTICE:
                notice, self._pending = self._pending[:_NOTICE], self._pending[_NOTICE:]
                self._notices.append((int.from_bytes(notice[:8], "little"), int.from_bytes(notice[8:], "little", signed=True)))
            if len(self._notices) == self._jobs:
                self._close()  # all published: the pipe is no longer needed
        if job >= len(self._notices) or self._shared is None:
            return None
        offset, length = self._notices[job]
        if length < 0:
            return None
        import marshal

        try:
            return marshal.loads(self._shared[offset : offset + length])
        except (ValueError, EOFError, TypeError):
            return None

    def close(self) -> None:
        """Stop the child if it is still working (its results are no longer wanted), reap
        it, and release the shared memory. Every caller of :meth:`start` calls it."""
        if self._fd >= 0:
            import signal

            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._close()
        if self._pid > 0:
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass
            self._pid = 0
        if self._shared is not None:
            self._shared.close()
            self._shared = None

    def _close(self) -> None:
        """Close the pipe: every notice is in, or the child is gone. The child is reaped now
        if it has ended, else by :meth:`close`: it may still be tearing down its memory,
        on the other CPU, and nothing here needs to wait for that."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            try:
                if os.waitpid(self._pid, os.WNOHANG)[0]:
                    self._pid = 0
            except ChildProcessError:
                self._pid = 0


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS has no affinity masks
        return os.cpu_count() or 1


def _run(jobs: Sequence[tuple[Callable[..., object], tuple]], shared, notices: int) -> None:
    """The child's work: each job's result into ``shared``, then its notice."""
    import marshal

    offset = 0
    for fn, args in jobs:
        length = -1
        try:
            data = marshal.dumps(fn(*args))
            if offset + len(data) <= CAPACITY:
                shared[offset : offset + len(data)] = data
                length = len(data)
        except Exception:  # noqa: BLE001 - this job: the parent computes it
            pass
        os.write(notices, offset.to_bytes(8, "little") + length.to_bytes(8, "little", signed=True))
        if length > 0:
            offset += length

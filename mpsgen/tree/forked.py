"""Work done in a forked child process while the caller goes on: ``mpsgen check`` reads
~10 MB of a checkout on every commit, and parts of it are independent of the rest until its
rules run (the yaml rows, the native .cpp sources the row -> stub resolver reads). Python
threads would take turns on one core; a child process runs beside the parent and sends its
results back through a pipe, marshalled (plain tuples, lists, dicts, strings and numbers:
C speed both ways, no import). One child runs all the jobs of a caller, in order, and
then sends their results (a pipe holds 64 KB: a result sent before the next job ran would
keep the child waiting for the parent to read it); a fork costs the parent copies of the
pages it then writes, so one child is cheaper than one per job.

Any failure (no ``os.fork`` on this platform, other threads running, a job raising, the
child killed or silent) leaves that job's :meth:`Forked.result` None, and the caller does
the work itself: a result never depends on whether a child ran.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

_HEADER = 8  # bytes of a result's length, before it


class Forked:
    """Jobs ``fn(*args)`` computed in turn in a child process; :meth:`result` waits for one."""

    __slots__ = ("_buffer", "_fd", "_jobs", "_pid", "_values")

    def __init__(self, pid: int, fd: int, jobs: int):
        self._pid, self._fd, self._jobs = pid, fd, jobs
        self._values: list[object] = []  # the results read so far, in job order
        self._buffer = b""

    @classmethod
    def start(cls, jobs: Sequence[tuple[Callable[..., object], tuple]]) -> Forked | None:
        """A child computing the jobs, or None where forking is not possible or not safe (no
        ``os.fork``; other threads running, whose locks a child could inherit held)."""
        threading = sys.modules.get("threading")
        if not jobs or not hasattr(os, "fork") or (threading is not None and threading.active_count() > 1):
            return None
        try:
            read_end, write_end = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            os.close(read_end)
            os.close(write_end)
            return None
        if pid == 0:  # the child: compute, send, leave without the parent's exit handlers
            try:
                import marshal

                os.close(read_end)
                # not the caller's terminal or pipes: whoever waits for the parent's output
                # (pre-commit, a shell pipe) must not wait for the child too
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                results = []
                for fn, args in jobs:
                    try:
                        results.append(marshal.dumps(fn(*args)))
                    except Exception:  # noqa: BLE001 - this job: the parent computes it, and the rest
                        break
                for data in results:
                    view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
                    while view:
                        view = view[os.write(write_end, view) :]
            except BaseException:  # noqa: BLE001 - an interrupt, a closed pipe: the parent computes what is missing
                pass
            finally:
                os._exit(0)
        os.close(write_end)
        return cls(pid, read_end, len(jobs))

    def result(self, job: int = 0) -> object:
        """Job ``job``'s result, or None (then compute it in-process). Results are read in job
        order: asking for a later job reads the earlier ones."""
        import marshal

        while len(self._values) <= job and self._fd >= 0:
            need = _HEADER
            if len(self._buffer) >= _HEADER:
                need += int.from_bytes(self._buffer[:_HEADER], "little")
            if len(self._buffer) >= need > _HEADER:
                data, self._buffer = self._buffer[_HEADER:need], self._buffer[need:]
                try:
                    self._values.append(marshal.loads(data))
                except (ValueError, EOFError, TypeError):
                    self._close()
                if len(self._values) == self._jobs:
                    self._close()  # all read: reap the child
                continue
            try:
                chunk = os.read(self._fd, max(need - len(self._buffer), 1 << 16))
            except OSError:
                chunk = b""
            if not chunk:  # the child is done (or gone): what is missing stays None
                self._close()
                break
            self._buffer += chunk
        return self._values[job] if job < len(self._values) else None

    def close(self) -> None:
        """Stop the child if its results are no longer wanted (it may still be working), and
        reap it."""
        if self._fd >= 0:
            import signal

            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._close()

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:
                pass

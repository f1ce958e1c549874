"""``python -m mpsgen`` and the ``mpsgen`` console script: the CLI, with an interrupt during
start-up (imports) reported like one during planning, never as a traceback.

The whole module is one ``try``: with Python's zero-cost exception tables, a Ctrl-C that
lands on any of its instructions (or in an import they make) is caught, where a statement
before the ``try`` (``from __future__ import annotations`` imports a module) would leave a
window for a traceback."""

try:
    import os
    import signal
    import sys

    from mpsgen.core.errors import caused_by_interrupt

    _deferred: list[int] = []  # a signal that landed in importlib's own code

    def _in_importlib(frame) -> bool:
        return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")

    def _defer(signum: int) -> bool:
        """Whether the signal is taken a moment later: importlib runs callbacks for its module
        locks in which an exception is printed as "Exception ignored" and dropped (and the
        command runs on), so one that lands in importlib's code is handed, 2 ms on, to the
        handler of the signal then (this one again, or apply's, which holds it)."""
        if not hasattr(signal, "setitimer"):
            return False
        _deferred.append(signum)
        signal.setitimer(signal.ITIMER_REAL, 0.002)
        return True

    def _later(_alarm, frame):
        if not _deferred:
            return
        if _in_importlib(frame):
            signal.setitimer(signal.ITIMER_REAL, 0.002)
            return
        signum = _deferred.pop(0)
        handler = signal.getsignal(signum)
        if callable(handler):
            handler(signum, frame)

    def _terminated(signum, frame):
        if _in_importlib(frame) and _defer(signum):
            return
        raise KeyboardInterrupt(signal.Signals(signum).name)

    def _interrupt(signum, frame):
        if _in_importlib(frame) and _defer(signum):
            return
        signal.default_int_handler(signum, frame)

    # SIGTERM and SIGHUP end mpsgen as Ctrl-C does, from here on: exit 130 with a message, a
    # compiler's process group killed, a write finished or not begun (apply holds all three
    # while it renames: mpsgen.patch.changeset.signals_held)
    for _name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _terminated)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    if hasattr(signal, "SIGALRM"):
        signal.signal(signal.SIGALRM, _later)

    def _interrupted() -> None:
        try:
            sys.stderr.write("interrupted; nothing written.\n")
        except (AttributeError, OSError, ValueError):  # (stderr closed or full: the exit status says it)
            pass
        _finish(130)

    def _finish(code: int) -> None:
        """End the process with ``code`` once the run is over and said so: SIGINT, SIGTERM and
        SIGHUP are blocked from here on (one now comes after the outcome was told; the
        interpreter's shutdown would let it kill the process, exit 129/143, after a report
        that said otherwise; SIGALRM too, which hands on a deferred one), output is flushed, and
        the heap is not torn down."""
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_BLOCK, {getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP", "SIGALRM") if hasattr(signal, n)})
        for stream in (sys.stdout, sys.stderr):  # (a closed or full one: the run said so already)
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        os._exit(code)

    def main() -> None:
        try:
            check = sys.argv[1:2] == ["check"]
            if check:
                # the linter pre-commit and lintrunner start per run: its own light front end.
                # The cyclic collector is off for the process (what it allocates lives to the
                # end and forms no cycles), and the process ends without tearing its heap
                # down (as mypy does), nor the run's results (``keep``): output is flushed,
                # files are closed, nothing else is left to do.
                import gc  # (local: --help loads no gc)

                gc.disable()
                from mpsgen.cli.check import main as check_main  # (local: check starts without the typer app)
            else:
                from mpsgen.cli.app import main as cli_main  # (local: the typer app, for the other commands only)
        except KeyboardInterrupt:
            _interrupted()
        except BaseException as exc:
            if caused_by_interrupt(exc):  # (an interrupt the interpreter wrapped is still one)
                _interrupted()
            raise
        if check:
            kept: list = []
            _finish(check_main(sys.argv[2:], keep=kept))
        try:
            cli_main()
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:  # (sys.exit with a message)
                sys.stderr.write(f"{exc.code}\n")
                code = 1
        _finish(code)

    if __name__ == "__main__":
        main()
except KeyboardInterrupt:  # before main() took over (it reports its own)
    import os
    import sys

    try:
        sys.stderr.write("interrupted; nothing written.\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass
    os._exit(130)  # (not through the interpreter's shutdown, where a signal kills the process)

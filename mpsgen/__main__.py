"""``python -m mpsgen`` and the ``mpsgen`` console script: the CLI, with an interrupt during
start-up (imports) reported like one during planning, never as a traceback.

The whole module is one ``try``: with Python's zero-cost exception tables, a Ctrl-C that
lands on any of its instructions (or in an import they make) is caught, where a statement
before the ``try`` (``from __future__ import annotations`` imports a module) would leave a
window for a traceback."""

try:
    import sys

    import signal

    def _terminated(signum, _frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    # SIGTERM and SIGHUP end mpsgen as Ctrl-C does, from here on: exit 130 with a message, a
    # compiler's process group killed, a write finished or not begun (apply holds all three
    # while it renames: mpsgen.changeset.signals_held)
    for _name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, _name):
            signal.signal(getattr(signal, _name), _terminated)

    def _interrupted() -> None:
        sys.stderr.write("interrupted; nothing written.\n")
        sys.exit(130)

    def main() -> None:
        try:
            check = sys.argv[1:2] == ["check"]
            if check:
                # the linter pre-commit and lintrunner start per run: its own light front end.
                # The cyclic collector is off for the process (what it allocates lives to the
                # end and forms no cycles), and the process ends without tearing its heap
                # down (as mypy does), nor the run's results (``keep``): output is flushed,
                # files are closed, nothing else is left to do.
                import gc
                import os

                gc.disable()
                from mpsgen.cli_check import main as check_main
            else:
                from mpsgen.cli import main as cli_main
        except KeyboardInterrupt:
            _interrupted()
        if check:
            kept: list = []
            code = check_main(sys.argv[2:], keep=kept)
            for stream in (sys.stdout, sys.stderr):  # (check flushed them; a closed or full one said so)
                try:
                    stream.flush()
                except (AttributeError, OSError, ValueError):
                    pass
            os._exit(code)
        cli_main()

    if __name__ == "__main__":
        main()
except KeyboardInterrupt:  # before main() took over (it reports its own)
    import sys

    sys.stderr.write("interrupted; nothing written.\n")
    sys.exit(130)

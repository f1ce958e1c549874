"""``python -m mpsgen`` and the ``mpsgen`` console script: the CLI, with an interrupt during
start-up (imports) reported like one during planning, never as a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["check"]:
        # the linter pre-commit and lintrunner start per run: its own light front end. The
        # cyclic collector is off for the process (what it allocates lives to the end and
        # forms no cycles), and the process ends without tearing its heap down (as mypy
        # does), nor the run's results (``keep``): output is flushed, files are closed,
        # nothing else is left to do.
        import gc
        import os

        gc.disable()
        try:
            from mpsgen.cli_check import main as check_main
        except KeyboardInterrupt:
            sys.stderr.write("interrupted; nothing written.\n")
            sys.exit(130)
        kept: list = []
        code = check_main(sys.argv[2:], keep=kept)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    try:
        from mpsgen.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; nothing written.\n")
        sys.exit(130)
    cli_main()


if __name__ == "__main__":
    main()

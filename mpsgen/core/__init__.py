"""The base every layer stands on: errors with a location and exit code, text helpers, atomic file
writes, where mpsgen's templates and specs live, the Jinja2 environment, and child processes run
in a process group of their own. Imports nothing else of mpsgen."""

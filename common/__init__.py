"""common: see README.md in this folder.

Imported first by every door, it makes Ctrl-C while the door loads its modules what it is while
main() runs (cli.guarded): one line, "error: interrupted", and exit status 130. A program that is
no door, such as a learner's script importing attention, keeps Python's traceback."""

import os
import sys


def _door():
    """True when the program is one of the project's files of the top folder, benchmarks/ or
    tests/: the doors (a script elsewhere may run a learner's code). It reads project-files.txt
    itself: safe_io.project_files would import modules before the guard is set."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    try:
        name = os.path.relpath(os.path.realpath(sys.modules["__main__"].__file__), here)
        with open(os.path.join(here, "common", "project-files.txt"), encoding="utf-8") as f:
            return (os.path.dirname(name) in ("", "benchmarks", "tests")
                    and name.replace(os.sep, "/") in f.read().splitlines())
    except (AttributeError, KeyError, ValueError, OSError):     # python3 -c, another drive
        return False


def _interrupted(kind, value, traceback):
    if not issubclass(kind, KeyboardInterrupt):
        return sys.__excepthook__(kind, value, traceback)
    if sys.stderr:
        print("error: interrupted", file=sys.stderr)
    sys.exit(130)       # raised in sys.excepthook, SystemExit ends Python with its status


# Set before any module loads that Python's start-up has not (sys and os it has): Ctrl-C shows a
# traceback only during that start-up and while Python finds and opens this file.
if _door():
    sys.excepthook = _interrupted

"""Command-line plumbing shared by the folder's scripts: one line on stderr, never a traceback.

    OneLineParser                     argparse, but a bad argument is one line on stderr (exit 2)
    trace_parser, parse_trace_args    the arguments of the two trace command lines
    guarded(action), fail(message)    an error becomes one line on stderr and exit status 1
    show(text)                        print, or an OSError when standard output is closed
    save_view(path, text)             --svg: write a view the user asked for, and say so
    Report                            a benchmark's lines, printed and kept for --record
"""

import argparse
import os
import sys

from common.safe_io import check_output_path, write_atomic


def show(text):
    """Write text to standard output; raises OSError when it is closed."""
    if sys.stdout is None:
        raise OSError("cannot print: standard output is closed")
    sys.stdout.write(text)


class Report:
    """Lines printed as they come and kept, so that a benchmark can record its whole output at the
    end."""

    def __init__(self):
        self.lines = []

    def say(self, line=""):
        show(line + "\n")
        sys.stdout.flush()
        self.lines.append(line)

    def record(self, path):
        write_atomic(path, "\n".join(self.lines) + "\n")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (and exit status 2), not usage and a
    message."""

    def error(self, message):
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def trace_parser(description, path):
    """The argument parser of a trace command line: --write or --check, or the views --table and
    --svg FILE; with none of them it prints the JSON."""
    name = os.path.basename(path)
    parser = OneLineParser(description=description)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite {name}")
    group.add_argument("--check", action="store_true",
                       help=f"fail unless {name} matches a fresh run")
    parser.add_argument("--table", action="store_true", help="print the maps as aligned tables")
    parser.add_argument("--svg", metavar="FILE", help="write the maps as heatmaps to an SVG file")
    return parser


def parse_trace_args(parser, argv, other_inputs=()):
    """Parse, and refuse --write or --check beside a view or another input (named in
    other_inputs)."""
    args = parser.parse_args(argv)
    extras = ["--table"] * args.table + ["--svg"] * (args.svg is not None) + [
        "--" + name for name in other_inputs if getattr(args, name) is not None]
    if (args.write or args.check) and extras:
        parser.error(f"--write and --check work on the recorded file alone; "
                     f"drop {', '.join(extras)}")
    return args


def save_view(path, text, own):
    """Write a view (an SVG, a page, a picture) the user asked for, atomically, and say so.
    Refuses an empty path, a folder and the project's own files, but own: the view the command
    records itself (a path from the project folder)."""
    check_output_path(path, own)
    write_atomic(path, text)
    show(f"wrote {path}\n")


def guarded(action):
    """Run a command line's action and return its exit status; an error becomes one line on stderr,
    and so does a closed or broken standard output."""
    try:
        return action()
    except BrokenPipeError:
        # the reader went away (`| head`): nothing more can be printed, and Python must not try to
        # flush into the broken pipe at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return fail("standard output was closed before everything was printed")
    except FileNotFoundError as e:
        return fail(f"cannot read {e.filename}: {e.strerror}")
    except IsADirectoryError as e:
        return fail(f"{e.filename} is a folder: expected a file")
    except OSError as e:
        # Python's own "[Errno 13] Permission denied: 'x'" shown as "x: permission denied"
        return fail(f"{e.filename}: {e.strerror[0].lower()}{e.strerror[1:]}" if e.filename
                    and e.strerror else str(e))
    except (ValueError, TypeError) as e:
        return fail(str(e))
    except RecursionError:
        return fail("a file is nested too deeply to read")
    except KeyboardInterrupt:      # Ctrl-C: a write under way has already put the old file back
        fail("interrupted")
        return 130
    except MemoryError:
        return fail("out of memory: the input is too large")


def fail(message):
    """Print one line to stderr, no traceback, and return the exit status 1."""
    if sys.stderr is not None:
        print(f"error: {message}", file=sys.stderr)
    return 1

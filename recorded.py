"""Recorded files and the command lines that write them: what the traces and benchmarks share.

    to_json(obj)                      the one JSON layout of every recorded file
    rounded(value, digits)            numbers rounded for JSON, −∞ written as null
    changed_rows(a, b)                which rows of two runs differ at all (both labs use it)
    write_atomic(path, text)          a temporary file beside the target, renamed into place, so an
                                      interrupted write leaves the old file as it was
    write_or_check(text, path, ...)   a trace's --write, --check (naming the first differing line),
                                      or printing
    save_view(path, text)             --svg: write a view and say so
    Report                            a benchmark's lines, printed and kept for --record
    trace_parser, parse_trace_args    the argparse of the two trace command lines; OneLineParser
                                      makes a bad argument one line on stderr
    guarded(action), fail(message)    an error becomes one line on stderr and exit status 1

The golden JSON files (attention-trace.json, perturb-trace.json), the saved tokenizers, the SVGs and
the benchmark records all go through write_atomic.
"""

import argparse
import json
import math
import os
import sys
import tempfile


def to_json(obj):
    """The one JSON layout of every recorded file: indent 2, UTF-8 text as is, a final newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def rounded(value, digits):
    """Round every float in nested lists and dicts; −∞ becomes None (JSON null).

    >>> rounded([[0.123456, -math.inf]], 4)
    [[0.1235, None]]

    Raises ValueError for NaN or +∞, which no recorded number may be.
    """
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item, digits) for item in value]
    if isinstance(value, float):
        if value == -math.inf:
            return None
        if not math.isfinite(value):
            raise ValueError(f"a recorded number must be finite or -inf, got {value!r}")
        return round(value, digits)
    return value


def changed_rows(a, b):
    """Indices of the rows that differ at all; any changed bit counts, and a row only one side has
    counts. Both labs use it.

    >>> changed_rows([[1.0], [2.0]], [[1.0], [2.5], [3.0]])
    [1, 2]
    """
    return [i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]


def write_atomic(path, text):
    """Write text to path through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.basename(path), dir=folder)
    try:
        os.chmod(tmp, _readable_mode(path))  # mkstemp makes the file private; the result should not be
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _readable_mode(path):
    """The permissions a written file gets: the old file's, or what the umask gives a new file."""
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_or_check(text, path, write, check):
    """The --write / --check / print behaviour of a trace command line. Returns the exit status.

    --check compares the file with text and names the first line that differs.
    """
    name = os.path.basename(path)
    if write:
        write_atomic(path, text)
        print(f"wrote {name}")
        return 0
    if check:
        try:
            with open(path, encoding="utf-8") as f:
                recorded = f.read()
        except OSError as e:
            return fail(f"cannot read {name}: {e.strerror or e}; run with --write to record it")
        if recorded == text:
            print(f"{name} is up to date")
            return 0
        fresh_lines, old_lines = text.splitlines(), recorded.splitlines()
        line = next((n for n, (a, b) in enumerate(zip(fresh_lines, old_lines), 1) if a != b),
                    min(len(fresh_lines), len(old_lines)) + 1)
        return fail(f"{name} differs from a fresh run (first at line {line}); run with --write to update it")
    sys.stdout.write(text)
    return 0


class Report:
    """Lines printed as they come and kept, so that a benchmark can record its whole output at the end."""

    def __init__(self):
        self.lines = []

    def say(self, line=""):
        print(line, flush=True)
        self.lines.append(line)

    def record(self, path):
        write_atomic(path, "\n".join(self.lines) + "\n")


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (and exit status 2), not usage and a message."""

    def error(self, message):
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def trace_parser(description, path):
    """The argument parser of a trace command line: --write or --check, or the views --table and --svg FILE;
    with none of them it prints the JSON."""
    name = os.path.basename(path)
    parser = OneLineParser(description=description)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite {name}")
    group.add_argument("--check", action="store_true", help=f"fail unless {name} matches a fresh run")
    parser.add_argument("--table", action="store_true", help="print the maps as aligned tables")
    parser.add_argument("--svg", metavar="FILE", help="write the maps as heatmaps to an SVG file")
    return parser


def parse_trace_args(parser, argv, other_inputs=()):
    """Parse, and refuse --write or --check beside a view or another input (named in other_inputs)."""
    args = parser.parse_args(argv)
    extras = ["--table"] * args.table + ["--svg"] * (args.svg is not None) + [
        "--" + name for name in other_inputs if getattr(args, name) is not None]
    if (args.write or args.check) and extras:
        parser.error(f"--write and --check work on the recorded file alone; drop {', '.join(extras)}")
    return args


def save_view(path, text):
    """Write a view (an SVG) the user asked for, atomically, and say so."""
    write_atomic(path, text)
    print(f"wrote {path}")


def guarded(action):
    """Run a command line's action and return its exit status; an error becomes one line on stderr."""
    try:
        return action()
    except FileNotFoundError as e:
        return fail(f"cannot read {e.filename}: {e.strerror}")
    except (ValueError, TypeError, OSError) as e:
        return fail(str(e))


def fail(message):
    """Print one line to stderr, no traceback, and return the exit status 1."""
    print(f"error: {message}", file=sys.stderr)
    return 1

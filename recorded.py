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
import contextlib
import json
import math
import os
import signal
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


HERE = os.path.dirname(os.path.abspath(__file__))
MAX_RECORDED_BYTES = 8 * 2 ** 20   # far more than any recorded file; a larger one is refused
# What no view or saved tokenizer may overwrite: the recorded files and the folder's own text.
PROTECTED = ("attention-trace.json", "perturb-trace.json", "tokenizer.json", "training-run.json",
             "README.md")


def read_text(path, limit=MAX_RECORDED_BYTES):
    """The UTF-8 text of a file, read whole only when it is at most limit bytes. Raises ValueError
    naming the file when it is larger or not UTF-8, and OSError when it cannot be read."""
    name = os.path.basename(path) or path
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {limit // 2 ** 20} MB: expected a smaller file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name} is not UTF-8 text: byte {e.start} is "
                         f"{data[e.start]:#04x}") from None


def check_output_path(path):
    """Refuse an empty output path, or one that would overwrite a recorded file or the folder's own
    source (a view is no golden file)."""
    if not path:
        raise ValueError("the output path is empty: expected a file name")
    target = os.path.realpath(path)
    if os.path.dirname(target) == os.path.realpath(HERE) and (
            os.path.basename(target) in PROTECTED or target.endswith(".py")):
        raise ValueError(f"{path} is one of this folder's recorded or source files: write the view "
                         f"somewhere else")


def write_atomic(path, text):
    """Write text to path whole or not at all: through a temporary file beside the target, renamed
    into place. A symlink's target is replaced and the link kept; a target that exists and is not a
    regular file (a device, a FIFO, /dev/stdout) is written to directly. The temporary file is
    removed on any error and on SIGTERM. Raises OSError naming path when it cannot be written."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    except OSError as e:
        raise OSError(f"cannot write {path}: {e.strerror}") from None
    try:
        with _raising_on_sigterm():
            os.chmod(tmp, _readable_mode(target))  # mkstemp makes the file private
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OSError(f"cannot write {path}: {e.strerror or e}") from None
        raise


@contextlib.contextmanager
def _raising_on_sigterm():
    """While a write is under way, SIGTERM raises SystemExit, so the cleanup above runs."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:        # not the main thread: signals cannot be caught here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _readable_mode(path):
    """The permissions a written file gets: the old file's, or what the umask gives a new file."""
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def show(text):
    """Write text to standard output; raises OSError when it is closed."""
    if sys.stdout is None:
        raise OSError("cannot print: standard output is closed")
    sys.stdout.write(text)


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
            recorded = read_text(path)
        except OSError as e:
            return fail(f"cannot read {name}: {e.strerror or e}; run with --write to record it")
        if recorded == text:
            print(f"{name} is up to date")
            return 0
        fresh_lines, old_lines = text.splitlines(), recorded.splitlines()
        line = next((n for n, (a, b) in enumerate(zip(fresh_lines, old_lines), 1) if a != b),
                    min(len(fresh_lines), len(old_lines)) + 1)
        return fail(f"{name} differs from a fresh run (first at line {line}); run with --write "
                    f"to update it")
    show(text)
    return 0


class Report:
    """Lines printed as they come and kept, so that a benchmark can record its whole output at the
    end."""

    def __init__(self):
        self.lines = []

    def say(self, line=""):
        print(line, flush=True)
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


def save_view(path, text):
    """Write a view (an SVG) the user asked for, atomically, and say so. Refuses an empty path and
    the folder's recorded and source files."""
    check_output_path(path)
    write_atomic(path, text)
    print(f"wrote {path}")


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
    except (ValueError, TypeError, OSError) as e:
        return fail(str(e))
    except RecursionError:
        return fail("a file is nested too deeply to read")
    except MemoryError:
        return fail("out of memory: the input is too large")


def fail(message):
    """Print one line to stderr, no traceback, and return the exit status 1."""
    if sys.stderr is not None:
        print(f"error: {message}", file=sys.stderr)
    return 1

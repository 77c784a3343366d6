"""Command-line plumbing shared by the folder's scripts: one line on stderr, never a traceback.

    OneLineParser                     argparse, but a bad argument is one line on stderr (exit 2)
                                      and an option of one value is given once
    trace_parser, parse_trace_args    the arguments of the two trace command lines
    guarded(action), fail(message)    an error becomes one line on stderr and exit status 1;
                                      Ctrl-C is one line and exit status 130
    show(text)                        print, or an OSError when standard output is closed
    show_json(text)                   show JSON, escaping what standard output cannot encode
    check_stdout()                    that OSError, asked before long work
    note(line)                        a line on stderr (progress), or nothing when it is closed
    check_outputs(outputs, inputs)    before any work: no output is an input, another output or a
                                      shipped file
    save_view(path, text, own, recorded)  --svg: write a view the user asked for, and say so
    save_views(views)                 several, all checked before the first is written
    integer(text), decimal(text)      a number flag's text: ASCII digits as the help shows them
    Report                            a benchmark's lines, printed and kept for --record

A terminal that is not UTF-8 (an older Windows console, PYTHONIOENCODING=ascii) gets the
characters it cannot show spelled in ASCII (−∞ as -inf, ␣ as _, · as *, z₃ as z3): standard
output and error are set so as soon as a door imports this module, and no result is lost.
"""

import argparse
import codecs
import difflib
import json
import os
import re
import sys
import unicodedata

from common import safe_io
from common.checks import NotANumber, float_of
from common.safe_io import check_output_path, write_atomic


ASCII_SPELLING = {"−": "-", "∞": "inf", "·": "*", "…": "...", "√": "sqrt", "×": "x", "Σ": "sum",
                  "ᵀ": "^T", "ᵗ": "^t", "²": "^2", "→": "->", "↛": "-/->", "↑": "^", "≈": "~",
                  "≠": "!=", "≤": "<=", "≥": ">=", "±": "+-", "␣": "_", "↵": "\\n", "◀": "<",
                  "µ": "u", "ε": "eps", "½": "1/2", "—": "--", "–": "-"}


def _spelled(error):
    """The codec error handler "spelled": each character the encoding cannot hold, in ASCII
    (ASCII_SPELLING, else its plain letters: ŝ as s, ₃ as 3, else ?)."""
    text = error.object[error.start:error.end]
    return "".join(ASCII_SPELLING.get(ch) or unicodedata.normalize("NFKD", ch).encode(
        "ascii", "ignore").decode() or "?" for ch in text), error.end


codecs.register_error("spelled", _spelled)
for _stream in (sys.stdout, sys.stderr):
    if hasattr(_stream, "reconfigure"):       # a terminal or a pipe, not a test's StringIO
        _stream.reconfigure(errors="spelled")


def show(text, flush=False):
    """Write text to standard output, and flush it when asked (a line a person waits for); raises
    OSError naming standard output when it is closed or cannot be written."""
    check_stdout()
    _on_stdout(sys.stdout.write, text)
    if flush:
        _on_stdout(sys.stdout.flush)


def show_json(text):
    """show JSON text; each character standard output cannot encode written as JSON's own
    escape (\\u2083 for ₃), which every JSON reader reads back as the character."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = re.sub(r"[^\x00-\x7f]", lambda m: json.dumps(m.group())[1:-1], text)
    except LookupError:
        pass
    show(text)


def check_stdout():
    """Raise OSError when standard output is closed: a command that works long before it prints
    asks first, so that no progress line comes before the error."""
    if sys.stdout is None:
        raise OSError("cannot print: standard output is closed")


def _on_stdout(call, *args):
    """call(*args), a write or flush of standard output. Its OSError (a full disk: /dev/full) says
    that it was standard output, and nothing more goes there, so that Python's own flush at exit
    cannot fail a second time. A broken pipe is guarded's."""
    try:
        call(*args)
    except BrokenPipeError:
        raise
    except OSError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise OSError(f"cannot write to standard output: {e.strerror or e}") from None


def note(line):
    """Write a line to stderr (progress, a warning), or nothing when stderr is closed: print's
    file=None would put it on standard output, among the results."""
    if sys.stderr is not None:
        print(line, file=sys.stderr, flush=True)


class Report:
    """A benchmark's lines, printed as they come and kept for --record."""

    def __init__(self):
        self.lines = []

    def say(self, *lines):
        """Print each of lines (one empty line when none is given), and keep it."""
        for line in lines or ("",):
            show(line + "\n", flush=True)
            self.lines.append(line)

    def record(self, path):
        write_atomic(path, "\n".join(self.lines) + "\n")


class _Once(argparse._StoreAction):     # argparse's own 'store', which names no public type
    """An option of one value: given a second time it is refused, one line, rather than the first
    value dropped without a word (--grade a.py --grade b.py graded b.py alone)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string is not None and self in parser._given_once:
            parser.error(f"{option_string} takes one value, got "
                         f"{parser._given_once[self]!r} and {values!r}: give it once")
        parser._given_once[self] = values
        super().__call__(parser, namespace, values, option_string)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (and exit status 2), not usage and a
    message. An option it does not know is named before a required one it misses, and an unknown
    option gets the nearest it knows ("--vocab-sise": did you mean --vocab-size?), and one of
    another subcommand is said to be none of the one given ("encode takes no --vocab-size"). An
    option of one value given twice is refused (argparse kept the last and dropped the first)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):            # an option of one value, by default or by name
            self.register("action", name, _Once)

    def parse_known_args(self, args=None, namespace=None):
        self._given_args = sys.argv[1:] if args is None else list(args)
        self._given_once = {}
        return super().parse_known_args(args, namespace)

    def error(self, message):
        if message.startswith("the following arguments are required"):
            unknown = self._unknown_options()
            if unknown:             # the typo is why the required one seems missing
                message = f"unrecognized arguments: {' '.join(unknown)}"
        if message.startswith("unrecognized arguments: -"):
            message += self._hint(message.split()[2].split("=", 1)[0])
        note(f"error: {one_line(message)} (see --help)")
        sys.exit(2)

    def _subcommands(self):
        """{name: parser} of this parser's subcommands, and the name given on the command line
        (None when there are none, or none was given)."""
        for action in self._actions:     # argparse names no public type for a subcommand list
            if isinstance(action, argparse._SubParsersAction):
                given = [word for word in getattr(self, "_given_args", [])
                         if word in action.choices]
                return action.choices, given[0] if given else None
        return {}, None

    def _hint(self, word):
        """What to say of an option this parser does not know: that the subcommand given takes
        no such option (another one does), or the nearest option it takes."""
        subcommands, given = self._subcommands()
        options = list(self._option_string_actions)
        for name, parser in subcommands.items():
            if given in (None, name):       # a subcommand given: its own options, not the others'
                options += parser._option_string_actions
        if given is not None and word not in options and any(
                word in parser._option_string_actions for parser in subcommands.values()):
            return f" ({given} takes no {word})"
        near = difflib.get_close_matches(word, options, 1)
        return f" (did you mean {near[0]}?)" if near else ""

    def _unknown_options(self):
        """The words before "--" given as options (a dash, then no digit) that are no option of
        this parser nor the start of one."""
        given = getattr(self, "_given_args", [])
        given = given[:given.index("--")] if "--" in given else given
        return [word.split("=", 1)[0] for word in given
                if word.startswith("-") and word != "-" and not word[1:2].isdigit()
                and not any(option.startswith(word.split("=", 1)[0])
                            for option in self._option_string_actions)]


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


def check_outputs(outputs, inputs=()):
    """Refuse, before any work, an output that is empty, '-', a folder, a shipped file other than
    its own view, an input or another output. outputs: (flag, path, own) triples, inputs (flag,
    path) pairs; a path of None is a flag not given."""
    named = [(flag, path) for flag, path, _ in outputs] + list(inputs)
    for flag, path, own in outputs:
        if path == "-":         # what other tools read as standard output would be a file "-"
            raise ValueError(f"{flag} takes a file name, got '-': this command writes files, "
                             f"not standard output")
        if path is not None:
            check_output_path(path, own, [(other, p) for other, p in named if other != flag])


def save_view(path, text, own, recorded=None, say=None):
    """Write a view (an SVG, a page, a picture) the user asked for, atomically, and say so (on
    standard output, or with say: note, when standard output carries JSON). Refuses an empty
    path, a folder and the project's own files, but own: the view the command records itself (a
    path from the project folder), and that one only with the text recorded() gives (the view of
    the recorded inputs): a view of other inputs goes elsewhere."""
    save_views([(path, text, own, recorded)], say)


def save_views(views, say=None):
    """save_view for each of views, (path, text, own, recorded) each, a path of None skipped: all
    of them checked before the first is written."""
    views = [view for view in views if view[0] is not None]
    if views and not say:
        check_stdout()      # "wrote PATH" goes there: a closed output is said before writing
    for path, text, own, recorded in views:
        check_output_path(path, own)
        if own is not None and recorded is not None and _is_own(path, own) and \
                text != recorded():
            raise ValueError(f"{path} is the recorded view of this command's default inputs: "
                             f"write a view of other inputs somewhere else")
    for path, text, _, _ in views:
        write_atomic(path, text)
        if say:
            say(f"wrote {path}")
        else:
            show(f"wrote {path}\n")


def _is_own(path, own):
    return os.path.realpath(path) == os.path.realpath(os.path.join(safe_io.HERE, own))


# ---- number flags: ASCII decimals, as the help writes them ----------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")


class TooManyDigits(ValueError, argparse.ArgumentTypeError):
    """An integer flag of more digits than any limit takes: argparse says this message, not its
    'invalid integer value', which reads as if it were no integer."""


def integer(text):
    """An int flag's text: ASCII digits (at most 30), an optional sign. int() takes more (other
    scripts' digits, 1_000, spaces), which a help never shows. Raises ValueError.

    >>> integer("-12")
    -12
    """
    if not _INTEGER.fullmatch(text):
        digits = text.lstrip("+-")
        if digits.isascii() and digits.isdigit() and len(text) - len(digits) <= 1:
            raise TooManyDigits(f"expected an integer of at most 30 digits, got one of "
                                f"{len(digits)}")
        raise ValueError(f"expected an integer of ASCII digits such as 12, got {text!r}")
    return int(text)


def decimal(text):
    """A number flag's text: an ASCII decimal such as -1.5, 2 or 1e-3. Raises NotANumber, saying
    why, for a number no float can be (1e400 beyond float range, 1e-400 below its smallest, nan,
    inf), and ValueError for any other text.

    >>> decimal("1e-3"), decimal("-.5")
    (0.001, -0.5)
    """
    text, word = text.strip(), text.strip().lower().lstrip("+-")
    if word == "nan":
        raise NotANumber(f"{text} is not a number")
    if word in ("inf", "infinity"):
        raise NotANumber(f"{text} is not finite")
    if not _DECIMAL.fullmatch(text):
        raise ValueError(f"expected a decimal such as -1.5 or 1e-3, got {text!r}")
    return float_of(text)


def guarded(action):
    """Run a command line's action and return its exit status; an error becomes one line on stderr,
    and so does a closed or broken standard output."""
    try:
        status = action()
        if sys.stdout is not None:
            _on_stdout(sys.stdout.flush)      # what is still buffered fails here, not at exit
        return status
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
        return interrupted()
    except MemoryError:
        return fail("out of memory: the input is too large")


def fail(message):
    """Print one line to stderr, no traceback, and return the exit status 1."""
    note(f"error: {one_line(message)}")
    return 1


MAX_MESSAGE = 1000      # characters of an error line: a message that quotes a huge input is cut


LINE_BREAKS = {ord(ch): repr(ch)[1:-1] for ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(message):
    """message as one line of at most MAX_MESSAGE characters: a line break that came in a path or
    a key (each that str.splitlines breaks at) is shown escaped, and a message that quotes a huge
    input is cut.

    >>> print(one_line("cannot write /tmp/a\\nb.svg"))
    cannot write /tmp/a\\nb.svg
    """
    message = message.translate(LINE_BREAKS)
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"


def interrupted():
    """Ctrl-C's one line, and its exit status: 130, as a shell gives a process SIGINT ended."""
    fail("interrupted")
    return 130

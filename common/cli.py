"""Command-line plumbing shared by the doors: a bad argument or an error is one line on stderr,
never a traceback (OneLineParser, guarded, fail); output that reports a closed standard output
(show, show_json, note); outputs checked before any work (check_outputs, save_views); number
flags as the help writes them (integer, decimal); a benchmark's Report. A terminal that is not
UTF-8 gets the characters it cannot show spelled in ASCII (−∞ as -inf, ␣ as _).
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
    """The codec error handler "spelled": ASCII_SPELLING, else plain letters (ŝ as s), else ?."""
    return "".join(ASCII_SPELLING.get(ch) or unicodedata.normalize("NFKD", ch).encode(
        "ascii", "ignore").decode() or "?" for ch in error.object[error.start:error.end]), error.end


codecs.register_error("spelled", _spelled)
for _stream in (sys.stdout, sys.stderr):
    if hasattr(_stream, "reconfigure"):       # a terminal or a pipe, not a test's StringIO
        _stream.reconfigure(errors="spelled")


def show(text, flush=False):
    """Write text to standard output (flushed when asked); OSError when it is closed or fails."""
    check_stdout()
    _on_stdout(sys.stdout.write, text)
    if flush:
        _on_stdout(sys.stdout.flush)


def show_json(text):
    """show JSON text, a character standard output cannot encode as JSON's escape (\\u2083)."""
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except UnicodeEncodeError:
        text = re.sub(r"[^\x00-\x7f]", lambda m: json.dumps(m.group())[1:-1], text)
    except LookupError:
        pass
    show(text)


def check_stdout():
    """Raise OSError when standard output is closed: asked before long work."""
    if sys.stdout is None:
        raise OSError("cannot print: standard output is closed")


def _on_stdout(call, *args):
    """call(*args), a write or flush of standard output, whose OSError (a full disk) names it; then
    nothing more goes there, so that the flush at exit cannot fail again."""
    try:
        call(*args)
    except BrokenPipeError:
        raise
    except OSError as e:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise OSError(f"cannot write to standard output: {e.strerror or e}") from None


def note(line):
    """Write a line to stderr, or nothing when it is closed (never to standard output)."""
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
    """An option of one value, refused when given a second time rather than the first dropped."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string is not None and self in parser._given_once:
            parser.error(f"{option_string} takes one value, got "
                         f"{parser._given_once[self]!r} and {values!r}: give it once")
        parser._given_once[self] = values
        super().__call__(parser, namespace, values, option_string)


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (exit status 2), an unknown option with
    the nearest it knows, and an option of one value is given once."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store"):            # an option of one value, by default or by name
            self.register("action", name, _Once)

    def add_record_flags(self, path):
        """--write or --check: rewrite the recorded file at path, or compare it with a fresh run."""
        name = os.path.basename(path)
        group = self.add_mutually_exclusive_group()
        group.add_argument("--write", action="store_true", help=f"rewrite {name}")
        group.add_argument("--check", action="store_true",
                           help=f"fail unless {name} matches a fresh run")

    def parse_known_args(self, args=None, namespace=None):
        self._given_args = sys.argv[1:] if args is None else list(args)
        self._given_once = {}
        return super().parse_known_args(args, namespace)

    def error(self, message):
        if message.startswith("the following arguments are required"):
            if unknown := self._unknown_options():   # a typo is why the required one seems missing
                message = f"unrecognized arguments: {' '.join(unknown)}"
        if message.startswith("unrecognized arguments: -"):
            message += self._hint(message.split()[2].split("=", 1)[0])
        note(f"error: {one_line(message)} (see --help)")
        sys.exit(2)

    def _hint(self, word):
        """What to say of an unknown option: the subcommand takes none such, or the nearest."""
        # {name: parser} of the subcommands (argparse names no public type for their list)
        subcommands = next((action.choices for action in self._actions
                            if isinstance(action, argparse._SubParsersAction)), {})
        given = next((arg for arg in getattr(self, "_given_args", []) if arg in subcommands), None)
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
        """The words before "--" given as options that no option of this parser starts with."""
        given = getattr(self, "_given_args", [])
        given = given[:given.index("--")] if "--" in given else given
        return [word.split("=", 1)[0] for word in given
                if word.startswith("-") and word != "-" and not word[1:2].isdigit()
                and not any(option.startswith(word.split("=", 1)[0])
                            for option in self._option_string_actions)]


def trace_parser(description, path, exported):
    """A trace command line's parser: --write or --check, or the views --table, --svg FILE, --html
    FILE and --export FILE (which writes the weights that exported names)."""
    parser = OneLineParser(description=description)
    parser.add_record_flags(path)
    parser.add_argument("--table", action="store_true", help="print the maps as aligned tables")
    parser.add_argument("--svg", metavar="FILE", help="write the maps as heatmaps to an SVG file")
    parser.add_argument("--html", metavar="FILE", help="write the explorer page, one HTML file")
    parser.add_argument("--export", metavar="FILE", help=f"write {exported} as {{tokens, "
                        f"attention[layer][head]}} JSON for CircuitsVis or bertviz")
    return parser


def parse_trace_args(parser, argv, other_inputs=()):
    """Parse, and refuse --write or --check beside a view or one of other_inputs."""
    args = parser.parse_args(argv)
    valued = ("svg", *other_inputs, "html", "export")     # None unless given
    extras = ["--table"] * args.table + ["--" + v for v in valued if getattr(args, v) is not None]
    if (args.write or args.check) and extras:
        parser.error(f"--write and --check work on the recorded file alone; "
                     f"drop {', '.join(extras)}")
    return args


def check_outputs(outputs, inputs=()):
    """Refuse, before any work, an output that is empty, '-', a folder, a shipped file other than
    its own view, an input or another output: (flag, path, own) and (flag, path), None not given."""
    named = [(flag, path) for flag, path, _ in outputs] + list(inputs)
    for flag, path, own in outputs:
        if path == "-":         # what other tools read as standard output would be a file "-"
            raise ValueError(f"{flag} takes a file name, got '-': this command writes files, "
                             f"not standard output")
        if path is not None:
            check_output_path(path, own, [(other, p) for other, p in named if other != flag])


def save_view(path, text, own, recorded=None, say=None):
    """Write a view the user asked for and say so (with say, when standard output carries JSON);
    never a shipped file but own, the command's recorded view, and that one only as recorded()."""
    save_views([(path, text, own, recorded)], say)


def save_views(views, say=None):
    """save_view for each (path, text, own, recorded) of views, all checked before any write."""
    views = [view for view in views if view[0] is not None]
    if views and not say:
        check_stdout()      # "wrote PATH" goes there: a closed output is said before writing
    for path, text, own, recorded in views:
        check_output_path(path, own)
        if own is not None and recorded is not None and os.path.realpath(path) == \
                os.path.realpath(os.path.join(safe_io.HERE, own)) and text != recorded():
            raise ValueError(f"{path} is the recorded view of this command's default inputs: "
                             f"write a view of other inputs somewhere else")
    say = say or (lambda line: show(f"{line}\n"))
    for path, text, _, _ in views:
        write_atomic(path, text)
        say(f"wrote {path}")


# ---- number flags: ASCII decimals, as the help writes them ----------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")


class TooManyDigits(ValueError, argparse.ArgumentTypeError):
    """An integer flag of too many digits: argparse says this message, not 'invalid integer'."""


def integer(text):
    """An int flag's text: at most 30 ASCII digits and a sign, not int()'s 1_000. ValueError.

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
    """A number flag's text: an ASCII decimal such as -1.5, 2 or 1e-3. Raises NotANumber for one
    no float can be (1e400, 1e-400, nan, inf), ValueError for any other text.

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
    """Run a command line's action and return its exit status; an error is one line on stderr."""
    try:
        status = action()
        if sys.stdout is not None:
            _on_stdout(sys.stdout.flush)      # what is still buffered fails here, not at exit
        return status
    except BrokenPipeError:
        # the reader went away (`| head`): Python must not flush into the broken pipe at exit
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
        return 130                 # as a shell gives a process that SIGINT ended
    except MemoryError:
        return fail("out of memory: the input is too large")


def fail(message):
    """Print one line to stderr, no traceback, and return the exit status 1."""
    note(f"error: {one_line(message)}")
    return 1


MAX_MESSAGE = 1000      # characters of an error line: a message that quotes a huge input is cut
LINE_BREAKS = {ord(ch): repr(ch)[1:-1] for ch in "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"}


def one_line(message):
    """message as one line of at most MAX_MESSAGE characters, its line breaks shown escaped.

    >>> print(one_line("cannot write /tmp/a\\nb.svg"))
    cannot write /tmp/a\\nb.svg
    """
    message = message.translate(LINE_BREAKS)
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE - 1] + "…"

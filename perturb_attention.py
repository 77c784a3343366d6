"""Lab 06: compute one tiny attention head exactly, then change one piece of it at a time.

    python3 perturb_attention.py              where to start, and no answer: predict first
    python3 perturb_attention.py --json | --write | --check    the lab's trace, perturb-trace.json
    python3 perturb_attention.py --table --baseline [--bug B]  Part 1's tables (--svg FILE: maps)
    python3 perturb_attention.py --table [CHANGE FLAGS]        Part 2: the menu, or a change
    python3 perturb_attention.py --table --all | --html FILE | --export FILE
    python3 perturb_attention.py --predict FILE [--submission S]   a predictions sheet, checked
    python3 perturb_attention.py --scaffold FILE | --grade FILE [--report FORMAT OUT]   Part 3
    python3 perturb_attention.py [--head FILE] [--values ROWS] [CHANGE FLAGS] [--bug B]   Part 4

The head: X = [[1, 0], [0, 1], [1, 1]], WQ = I, WK = c·I with c = √2·ln 2 (every weight a ratio
of powers of 2), WV = [[2, 0], [0, 4]], causal; no bias, dropout, normalization, residual or
output projection. Every number goes through `attend`. Positions count from 1 (row indices in the
JSON from 0, as the lab's spec fixes them).
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import (NotANumber, check_outputs, check_stdout, decimal, fail, guarded,
                        integer, parse_trace_args, save_views, show, trace_parser)
import argparse
import os
import sys
import time

from common.export import export_text
from common.golden import rounded, to_json, write_or_check
from common.safe_io import write_atomic
from common.views import MAX_TOKENS
from lab06 import lab as lab06
from lab06.lab import DIGITS, HEAD, position_labels
from lab06.page import lab_page
from lab06.tables import changes_table, lab_svg, part_one_table

TRACE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lab06", "perturb-trace.json")
PAGE = os.path.join("lab06", "lab06-explorer.html")     # the view --html records


# ---- the command line ---------------------------------------------------------------------------

def _flagged(flag, text, change):
    """change, with the flag that asked for it named in its errors: a learner sees which one."""
    def flagged_change(*args):
        try:
            change(*args)
        except ValueError as e:
            raise ValueError(f"{flag} {text}: {e}") from None
    flagged_change.description = change.description
    flagged_change.stage = getattr(change, "stage", "inputs")
    flagged_change.flag = flag
    return flagged_change


def _why(error, text=None):
    """": what is wrong" after the form a flag takes; nothing for an error that repeats the text."""
    return "" if str(error) == text else f": {error}"


def _numbers(text):
    """"1,-2,3/8" -> [1.0, -2.0, 0.375]: decimals as cli.decimal reads them, or fractions of two
    integers. Raises ValueError, or NotANumber saying why (a zero denominator, 1e400, 1e-400)."""
    numbers = []
    for part in text.split(","):
        top, slash, bottom = part.strip().partition("/")
        if slash:
            top, bottom = integer(top), integer(bottom)
            if bottom == 0:
                raise NotANumber(f"{part.strip()} divides by zero")
            numbers.append(top / bottom)
        else:
            numbers.append(decimal(part))
    return numbers


def _position_then_numbers(text, one=False):
    """"3=1,0" -> (3, [1.0, 0.0]); with one, "3=2" -> (3, 2.0)."""
    position, found, rest = text.partition("=")
    if not found:
        raise ValueError(text)
    position, numbers = integer(position), _numbers(rest)
    if one and len(numbers) != 1:
        raise ValueError(text)
    return position, numbers[0] if one else numbers


def _two_positions(text):
    """"3,2" -> (3, 2)."""
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(text)
    return integer(parts[0]), integer(parts[1])


# flag: (its text, what it changes, an example, the change its text makes); positions from 1
CHANGE_FLAGS = {
    "--ablate-value": ("J", "v_J := 0", "2", lambda t: lab06.ablate_value(integer(t))),
    "--set-query": ("I=a,b,...", "q_I := [a, b, ...]", "3=1,0",
                    lambda t: lab06.set_query(*_position_then_numbers(t))),
    "--scale-key": ("J=c", "k_J := c·k_J", "3=2",
                    lambda t: lab06.scale_key(*_position_then_numbers(t, one=True))),
    "--block": ("I,J", "query I may no longer read source J", "3,2",
                lambda t: lab06.block(*_two_positions(t))),
    "--shift-values": ("a,b,...", "every v_j := v_j + [a, b, ...]", "1,-2",
                       lambda t: lab06.shift_values(_numbers(t))),
    "--offset-scores": ("I=c", "add c to every score of row I", "3=1000",
                        lambda t: lab06.offset_scores(*_position_then_numbers(t, one=True))),
    "--scale-scores": ("I=c", "multiply every score of row I by c", "3=1000",
                       lambda t: lab06.scale_scores(*_position_then_numbers(t, one=True))),
    "--set-weights": ("I=a,b,...", "a_I := [a, b, ...] after the softmax, a map of your own",
                      "3=3/8,1/8,1/2", lambda t: lab06.set_weights(*_position_then_numbers(t))),
}


def _change_argument(flag):
    """The argparse type of a change flag: its text made a change named by the flag."""
    text_form, _, example, make = CHANGE_FLAGS[flag]

    def parse(text):
        try:
            return _flagged(flag, text, make(text))
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{flag} takes {text_form} such as {example}, "
                                             f"got {text!r}{_why(e, text)}") from None
    return parse


def _seed(text):
    """--seed's text: integer's ASCII digits (no space, no other script's), at most 18 of them."""
    try:
        seed = integer(text)
    except ValueError:
        seed = -1
    if not 0 <= seed < 10 ** 18:
        raise argparse.ArgumentTypeError(f"--seed takes the number a grading's report names, "
                                         f"such as 721319, got {text!r}")
    return seed


def _values(text):
    try:
        return [_numbers(row) for row in text.split("/")]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--values takes rows a,b/c,d/... such as "
                                         f"2,0/2,0/4,0, got {text!r}{_why(e)}") from None


# Part 2's interventions as the flags that ask for them (a test keeps them lab06.INTERVENTIONS)
PART_TWO = {"value_ablation": "--ablate-value 2", "query_perturbation": "--set-query 3=1,0",
            "connection_removal": "--block 3,2", "future_key_perturbation": "--scale-key 3=2"}
COMMAND = "python3 perturb_attention.py"

START = f"""Lab 06: predict before you run. Work each part on paper first, then check it here.

  Your predictions, checked exactly (right, wrong or not yet: never the answer):
      {COMMAND} --predict my-sheet.txt      (writes the sheet, then checks it)
  Part 1's tables, to compare with your sheet:
      {COMMAND} --table --baseline
  Part 2, the interventions to pick from, one at a time:
      {COMMAND} --table
  Part 3, the head in code of your own, graded:
      {COMMAND} --scaffold tiny_attention.py
      {COMMAND} --grade tiny_attention.py
  The lab's submission, your answers beside the program's:
      {COMMAND} --predict my-sheet.txt --submission submission.md
  Every map in a browser, each hidden until you reveal it:
      {COMMAND} --html lab06.html

lab06/README.md says more; lab06/answers.md and --json hold every answer, for after you predict.
"""


def part_two_menu():
    """--table with no change: the interventions to pick from, with their commands; no number."""
    lines = ["Part 2: predict each intervention first (which rows of A and of Z change, and the "
             "new z₃), then run it:"]
    for key, flags in PART_TWO.items():
        lines.append(f"  {lab06.TITLES[key]}\n      {COMMAND} {flags} --table")
    lines.append(f"  Part 2.4, the buggy procedure with the doubled key\n      {COMMAND} "
                 f"{PART_TWO['future_key_perturbation']} --bug post-softmax --table")
    lines.append(f"Part 1's tables: {COMMAND} --table --baseline; every part at once, after "
                 f"predicting: --table --all")
    return "\n".join(lines) + "\n"


def _flags(changes):
    """The change flags given, each once, sorted: for a message that says what to drop."""
    return sorted({change.flag for change in changes or []})


def _refuse_conflicts(parser, args):
    """--scaffold takes nothing else; --grade takes a head and changes of Q, K, V and the mask;
    --predict takes --submission and nothing else, and --submission goes with --predict."""
    changes = args.changes or []
    own = [f"--{name}" for name in ("head", "values") if getattr(args, name) is not None]
    given = [f"--{name}" for name in ("table", "svg", "html", "export", "head", "values", "bug")
             if getattr(args, name) not in (None, False)]
    if args.scaffold is not None:
        if args.grade is not None:
            parser.error("--scaffold and --grade are two steps: run one, then the other")
        if extras := given + _flags(changes):
            parser.error(f"--scaffold writes a starter file and takes nothing else; drop "
                         f"{', '.join(extras)}")
    views = [flag for flag in given if flag in ("--table", "--svg", "--html", "--export")]
    if args.all and (changes or args.baseline or not views or args.head or args.values):
        parser.error("--all shows every part of the lab's own head at once: it goes with "
                     "--table, --svg or --export alone")
    if args.json and views:
        parser.error(f"--json prints the numbers as JSON; drop {', '.join(views)}")
    if args.baseline:
        if not (args.table or args.svg is not None or args.export is not None):
            parser.error("--baseline goes with --table, --svg or --export: Part 1's tables, "
                         "maps or weights alone")
        if extras := [flag for flag in given if flag not in (
                "--table", "--svg", "--export", "--head", "--values", "--bug")] + _flags(changes):
            parser.error(f"--baseline prints Part 1's tables alone, the head before any change; "
                         f"drop {', '.join(extras)}")
    elif not changes and args.grade is None and not args.json and args.bug and not own:
        parser.error("--bug on the head before any change is Part 1's answer: add --baseline "
                     "(or a change, to see what it does to the bug)")
    if args.table and not args.baseline and not changes and args.grade is None and own:
        parser.error(f"--table prints what a change does, and {' and '.join(own)} is no "
                     f"change: add --baseline for the head's own tables, or a change")
    if args.report is not None and args.grade is None:
        parser.error("--report goes with --grade: it writes a grading's report for a course's "
                     "autograder")
    if args.report is not None and args.report[0] not in REPORTS:
        parser.error(f"--report takes {' or '.join(REPORTS)}, then a file name, got "
                     f"{args.report[0]!r}")
    if args.seed is not None and args.grade is None:
        parser.error("--seed goes with --grade: it draws a grading's fresh cases again")
    if args.seed is not None and (own or changes):
        parser.error(f"--seed draws the lab's own checks' fresh cases, and a head or change of "
                     f"your own draws none; drop --seed or {', '.join(own + _flags(changes))}")
    if args.grade is not None:
        if extras := views + ["--bug"] * bool(args.bug) + sorted(
                {change.flag for change in changes if change.stage != "inputs"}):
            parser.error(f"--grade runs your attention on a head and its inputs and prints one "
                         f"line per check; drop {', '.join(extras)}")
    if args.predict is None and args.submission is not None:
        parser.error("--submission goes with --predict FILE: it sets your sheet beside the "
                     "program's output")
    extras = [f"--{name.replace('_', '-')}" for name, value in vars(args).items()
              if name not in ("predict", "submission", "changes")
              and value != parser.get_default(name)] + _flags(changes)
    if args.predict is not None and extras:
        parser.error(f"--predict writes or checks your sheet and takes only --submission; drop "
                     f"{', '.join(extras)}")


def main(argv=None):
    parser = trace_parser("Lab 06: compute one attention head, then perturb it. Positions in the "
                          "flags count from 1, as the lab does; a number may be a fraction such "
                          "as 3/8, and one that starts with a minus is written --flag=-1,2.",
                          TRACE_PATH, "the head's weights (after the changes)")
    parser.add_argument("--scaffold", metavar="FILE",
                        help="write a starter tiny_attention.py to fill in (never overwrites)")
    parser.add_argument("--grade", metavar="FILE",
                        help="check your tiny_attention.py, a PASS or FAIL line per check (on "
                             "--head and changes of Q, K, V and the mask, if given)")
    parser.add_argument("--report", nargs=2, metavar=("FORMAT", "FILE"),
                        help="with --grade: also write the report for a course's autograder, "
                             "gradescope (results.json) or junit (JUnit XML)")
    parser.add_argument("--seed", metavar="N", type=_seed,
                        help="with --grade: the fresh cases of the grading that named this seed")
    parser.add_argument("--head", metavar="FILE",
                        help='a head of your own: JSON {"X": ..., "WQ": ..., "WK": ..., "WV": ...} '
                             'with an optional "allowed" (default causal)')
    parser.add_argument("--values", metavar="ROWS", type=_values,
                        help="V := ROWS for the baseline and every change: 2,0/2,0/4,0")
    for flag, (text_form, changes, _, _) in CHANGE_FLAGS.items():
        parser.add_argument(flag, metavar=text_form, type=_change_argument(flag),
                            action="append", dest="changes",
                            help=f"{changes} (repeatable; all of them make one intervention)")
    parser.add_argument("--bug", choices=list(lab06.BUGS), action="append",
                        help="also a buggy procedure, after the changes of Q, K, V and the mask: "
                             "post-softmax (softmax, then zero the future) or destinations "
                             "(softmax over each column); repeatable")
    parser.add_argument("--predict", metavar="FILE", help="write a predictions sheet to fill in "
                        "(when FILE is new), else check it: it never prints an answer")
    parser.add_argument("--submission", metavar="S", help="with --predict: write submission.md, "
                        "your answers beside the program's; run again, it keeps what you wrote")
    parser.add_argument("--baseline", action="store_true", help="with --table or --svg: Part 1's "
                        "tables or maps alone (and --bug's), no intervention")
    parser.add_argument("--all", action="store_true",
                        help="with --table, --svg or --export on the lab's head: all parts at once")
    parser.add_argument("--json", action="store_true",
                        help="print the numbers as JSON (the lab's head: every answer)")
    args = parse_trace_args(parser, argv, other_inputs=("scaffold", "grade", "head", "values",
                                                        "bug"))
    if (args.write or args.check) and args.changes:
        parser.error(f"--write and --check work on the recorded file alone; drop "
                     f"{', '.join(_flags(args.changes))}")
    _refuse_conflicts(parser, args)
    return _grade(args) if args.grade is not None else guarded(lambda: _run(args))


def _head(args):
    """The head the flags name (--head's, else the lab's, with --values), refused with a view or
    --grade when it has more than MAX_TOKENS positions."""
    head = lab06.read_head(args.head) if args.head is not None else HEAD
    if args.values is not None:
        try:
            head = lab06.with_values(head, args.values)
        except (ValueError, TypeError) as e:
            raise ValueError(f"--values: {e} (rows a,b/c,d/...: '/' between rows, ',' "
                             f"between numbers)") from None
    views = [flag for flag, given in (("--table", args.table), ("--svg", args.svg),
                                      ("--html", args.html), ("--grade", args.grade)) if given]
    T = len(head["X"])
    if views and T > MAX_TOKENS:
        raise ValueError(f"{os.path.basename(args.head)} has {T} positions: {' and '.join(views)} "
                         f"take{'s' * (len(views) == 1)} heads of at most {MAX_TOKENS}; without "
                         f"{'it' if len(views) == 1 else 'them'}, the head prints as JSON")
    return head


REPORTS = ("gradescope", "junit")       # --report's formats, report.py's functions


def _grade(args):
    """--grade: the report printed (and written, with --report). Exit 0 when every check passes, 1
    when any fails, 2 for a command line it cannot use, 3 when the grader itself failed."""
    from lab06 import grader, report          # here: only --grade needs the grader
    out, head = args.report and args.report[1], None

    def prepare():                             # all it cannot use, said before any grading
        nonlocal head
        check_outputs([("--report", out, None)], [("--head", args.head), ("--grade", args.grade)])
        folder = os.path.dirname(os.path.abspath(out or "."))
        if not os.path.isdir(folder):
            raise ValueError(f"--report {out}: the folder {folder} does not exist")
        check_stdout()
        head = _head(args)
        grader.check_gradable(args.grade)
        return 0

    if status := guarded(prepare):
        return 2 if status == 1 else status    # Ctrl-C keeps its 130
    changes = args.changes or []
    own = args.head is not None or args.values is not None or changes
    started = time.monotonic()
    try:
        found = grader.grading(args.grade, head if own else None, changes, seed=args.seed)
        lines, passed = report.report(found)
        if out is not None:
            write_atomic(out, getattr(report, args.report[0])(found, time.monotonic() - started))
    except Exception as e:                     # no verdict: neither 0 nor 1
        fail(f"the grader failed, which says nothing of {args.grade}: {type(e).__name__}: {e}")
        return 3
    if guarded(lambda: show("\n".join(lines) + "\n")):
        return 3                               # the verdict stands, but no one read it
    return 0 if passed else 1


def _run(args):
    if args.predict is not None:
        check_stdout()
        from lab06.submission import predict    # here: only --predict needs the sheet
        text, status = predict(args.predict, args.submission)
        show(text)
        return status
    check_outputs([("--svg", args.svg, None), ("--html", args.html, PAGE),
                   ("--export", args.export, None), ("--scaffold", args.scaffold, None)],
                  [("--head", args.head)])
    if args.scaffold is not None:
        check_stdout()      # it prints what it did: a closed output is said before doing it
        from lab06.scaffold import scaffold    # here: only --scaffold needs the scaffold
        show(scaffold(args.scaffold) + "\n")
        return 0
    changes = args.changes or []
    head = _head(args)
    if head is HEAD and not changes and not (args.baseline or args.json or args.all or args.write
                                             or args.check):
        if drawn := [flag for flag in ("--svg", "--export") if getattr(args, flag[2:]) is not None]:
            raise ValueError(f"{' and '.join(drawn)} of the lab's head would show its answers: "
                             f"add --baseline (Part 1), a change flag (see --table) or --all")
        if args.html is None:
            show(part_two_menu() if args.table else START)      # predict first: no answer yet
            return 0
    own = head is not HEAD or changes or args.bug     # an experiment, not the lab's trace
    bugs = list(dict.fromkeys(args.bug or []))
    result = lab06.experiment(head, changes, bugs) if own or args.baseline else lab06.lab()
    weights = (result["intervention"] if changes else result["baseline"])["weights"]
    save_views([(args.svg, args.svg and lab_svg(result), None, None),
                (args.html, args.html and lab_page(result), PAGE, lambda: lab_page(lab06.lab())),
                (args.export, args.export and export_text(position_labels(len(weights)),
                                                          [[weights]]), None, None)])
    if args.table:
        show(part_one_table(result, head) if args.baseline else changes_table(result))
    if args.svg is not None or args.table or args.html is not None or args.export is not None:
        return 0
    # an experiment prints its JSON: --write and --check take no head, change or bug of one's own
    return write_or_check(to_json(rounded(result, DIGITS)), TRACE_PATH, args.write, args.check)


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

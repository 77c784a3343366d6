"""Lab 06's submission.md: the learner's predictions beside the program's output, labelled apart,
with the grader's verdict on their tiny_attention.py and Part 4's questions for their own words.

    python3 perturb_attention.py --predict predictions.txt --submission submission.md

The sheet must exist. The program owns what lies between its two markers (START, END): the
commands, Parts 1 and 2 as tables (by hand, program output, whether they agree) and Part 3's
grading; run again, it rewrites that section and keeps every other line. Left out: grading Part
4, and any file other than the one sheet and tiny_attention.py.
"""

import datetime
import os
import platform
import re
import shlex

from common.safe_io import check_output_path, read_text, write_atomic
from lab06 import sheet
from lab06.exact import answer_text

START, END = "<!-- program: start -->", "<!-- program: end -->"
PART_FOUR = [       # 1-4: the contrasts the lab sets out to show; 5: lab06/README.md's words
    "What do the weights decide, and what do the values? (2.1 beside 2.2)",
    "How does removing a connection differ from ablating a value? (2.3 beside 2.1)",
    "Why can a future key not move positions 1 and 2, and what does it do to the buggy "
    "procedure? (2.4)",
    "Why does a lower-triangular matrix of weights not prove that the computation was causal?",
    "What additional evidence would be needed to claim that a head explains a trained model's "
    "final answer?"]
GRADED = "tiny_attention.py"
AGREEMENT = {"right": "agree", "WRONG": "differ", "not yet": "not predicted",
             "cannot read": "cannot read"}


def _cell(text):
    """text in a Markdown table's cell: a | of its own would end the cell."""
    return text.replace("|", "\\|") or " "


def _command(*args):
    return "python3 perturb_attention.py " + " ".join(shlex.quote(arg) for arg in args)


def grading(sheet_path):
    """Part 3 in Markdown: --grade's command, verdict and report, or how to write the file."""
    beside = os.path.join(os.path.dirname(sheet_path), GRADED)
    if (path := next((path for path in (beside, GRADED) if os.path.isfile(path)), None)) is None:
        return (f"No {GRADED} beside {sheet_path} or in this folder: write it with "
                f"`{_command('--scaffold', GRADED)}`, fill it in, then run this command again.\n")
    from lab06.grader import grade      # here: only a file to grade needs the grader
    try:
        lines, passed = grade(path)
    except ValueError as e:
        return f"`{_command('--grade', path)}`: not graded: {e}\n"
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall("`+", "\n".join(lines))),
                                 default=0))
    verdict = "PASS, every check (exit 0)" if passed else "FAIL (exit 1)"
    return (f"`{_command('--grade', path)}`: {verdict}\n\n{fence}\n" + "\n".join(lines)
            + f"\n{fence}\n")


def program_section(found, problems, count, sheet_path, submission_path):
    """The Markdown between the markers, of sheet.results (found, problems) and its count."""
    out = ["# Lab 06: submission", "",
           f"Written on {datetime.date.today().isoformat()} with Python "
           f"{platform.python_version()} by", "",
           f"- `{_command('--predict', sheet_path)}`: checks the sheet ({count})",
           f"- `{_command('--predict', sheet_path, '--submission', submission_path)}`: writes "
           "this file", "",
           "Between the two program markers the command rewrites everything each time it runs; "
           "what you write elsewhere in this file stays.", "",
           "## Parts 1 and 2: by hand, and the program's output", "",
           f"By hand: the answers in `{sheet_path}`, written before running the lab. Program "
           "output: what lab06/lab.py computes, written as the lab writes it, shown because you "
           "ran this command after predicting; an item you have not predicted shows none yet."]
    rows = {item[0]: rest for item, *rest in found}      # rest: answer, value, status, detail
    for heading, items in sheet.SECTIONS:
        out += ["", f"### {heading}", "", "| item | by hand | program output | agreement |",
                "|---|---|---|---|"]
        for key, _, units in items:
            answer, value, status, detail = rows[key]
            agreement = AGREEMENT[status] + (f": {detail}" if detail else "")
            shown = "(predict it first)" if status == "not yet" else answer_text(value, units)
            out.append(f"| {key} | {_cell(answer)} | {_cell(shown)} | {_cell(agreement)} |")
    if problems:
        out += ["", f"Lines of `{sheet_path}` that are no item: " + "; ".join(problems)]
    out += ["", "## Part 3: your tiny_attention.py, graded", "", grading(sheet_path)]
    body = "\n".join(out)
    for marker in (START, END):         # a marker quoted in an answer or a report is no marker
        body = body.replace(marker, marker.replace("program:", "program :"))
    return body


def part_four():
    """Part 4's questions as headings, with nothing under them: the learner's words go there."""
    lines = ["## Part 4: what the numbers show", "",
             "Answer each question in your own words, under its heading. Running the command "
             "again keeps everything you write here."]
    for n, question in enumerate(PART_FOUR, 1):
        lines += ["", f"### Question {n}: {question}", ""]
    return "\n".join(lines) + "\n"


def merged(old, program, path="the submission"):
    """old (None for a new file, which gets Part 4's headings) with what lies between its markers
    replaced by program. Raises ValueError unless old holds the two markers once each, in order."""
    section = f"{START}\n{program.rstrip()}\n{END}"
    if old is None:
        return f"{section}\n\n{part_four()}"
    if old.count(START) != 1 or old.count(END) != 1 or old.index(START) > old.index(END):
        raise ValueError(f"{path} exists and does not hold {START} and {END} once each: it is "
                         f"not a submission this command wrote; write to another file, or put "
                         f"the two markers back around the program's section")
    before, _, rest = old.partition(START)
    return before + section + rest.partition(END)[2]


def predict(sheet_path, submission_path=None):
    """(text, status) of --predict FILE [--submission S]: sheet.predict, or check FILE, write S."""
    if submission_path is None:
        return sheet.predict(sheet_path)
    check_output_path(sheet_path)
    check_output_path(submission_path, others=[("--predict", sheet_path)])
    if not os.path.lexists(sheet_path):
        raise ValueError(f"{sheet_path} does not exist: write the sheet with --predict "
                         f"{sheet_path}, predict, then ask for the submission")
    old = read_text(submission_path) if os.path.lexists(submission_path) else None
    found, problems = sheet.results(sheet_path)
    lines, all_right = sheet.report(found, problems)
    program = program_section(found, problems, lines[-1], sheet_path, submission_path)
    write_atomic(submission_path, merged(old, program, submission_path))
    return "\n".join(lines + [f"wrote {submission_path}"]) + "\n", 0 if all_right else 1

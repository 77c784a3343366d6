"""Lab 06's grader, the report of a Grading: a PASS or FAIL line a check, each hint at its first
FAIL only, a last line that counts them, and the verdict (report); and the same checks in the
formats course autograders read, one test a check (gradescope: Gradescope's results.json; junit:
JUnit XML, which CodeGrade, GitHub Classroom and most CI read). Every line is printable (what the
learner's code wrote cannot move the cursor or paint a PASS over its FAIL) and in the text at
most LINE_WIDTH characters. What it leaves out: points of unequal weight (each check is 1).
"""

import collections
import json
from xml.etree import ElementTree

from lab06.mistakes import HINT

LINE_WIDTH = 100      # a report's lines, wrapped: the learner has the lesson beside it


def wrapped(line, width=LINE_WIDTH, indent=" " * 6):
    """line as lines of at most width characters, broken at spaces; each after the first indented
    to follow "FAIL  ". A word longer than a line is cut where the line ends.

    >>> wrapped("FAIL  " + "word " * 4, 16)
    ['FAIL  word word', '      word word']
    """
    lines = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent) + 1, width + 1)
        if cut == -1:
            lines.append(line[:width])
            line = indent + line[width:]
        else:
            lines.append(line[:cut])
            line = indent + line[cut + 1:]
    return lines + [line.rstrip()]


def printable(line):
    r"""line with every character a terminal would act on (a newline, a carriage return, an escape
    sequence's ESC, a lone surrogate) written as its escape: a message from the learner's code
    cannot move the cursor, paint a PASS over its FAIL or break the output's encoding.

    >>> printable("FAIL  x: \x1b[1A\rPASS")
    'FAIL  x: \\x1b[1A\\rPASS'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in line)


Grading = collections.namedtuple("Grading", "names results stopped warden_stopped subreaper seed")
Grading.__doc__ = """What one grading found: names, every check's in the order they run; results,
[(what was checked, None or what is wrong)] in the order they ran (the import first, when it
failed); stopped, why the rest did not run, or None; warden_stopped, True when the file stopped
its warden (then none counts); subreaper, False when a process the file started in a session of
its own may outlive the grading; seed, what draws the same cases again (None: none drawn)."""

WARDEN = ("the file stopped its warden, the process that ends what it starts, and the grader "
          "killed what was left: leave the grader's processes alone")
DRAWN = "drawn afresh"      # a check that takes cases drawn from the seed says so in its name


def _said(grading):
    """[(what, problem)] as the report says them: each hint at its first FAIL, "the mistake named
    above" after it; the grading's own FAIL last when the file stopped its warden."""
    said, hints = [], set()
    for what, problem in grading.results:
        if problem is not None:
            problem, _, hint = problem.partition(HINT)
            if hint:                  # each hint once, at its first FAIL
                problem += "; the mistake named above" if hint in hints else HINT + hint
                hints.add(hint)
            problem = printable(problem)
        said.append((what, problem))
    return said + [("the grading", WARDEN)] * grading.warden_stopped


def _passed(grading):
    return sum(problem is None for _, problem in grading.results)


def _summary(grading):
    """The report's last lines, unwrapped: a note when what the file started may outlive the
    grading, and the count of the checks that pass."""
    passed, count = _passed(grading), len(grading.names)
    notes = [] if grading.subreaper else [
        "note: this system has no prctl(PR_SET_CHILD_SUBREAPER): a process the file started in "
        "a session of its own may outlive the grading"]
    summary = f"{passed} of {count} checks pass"
    if passed != count or grading.warden_stopped:
        stopped = grading.stopped or (grading.warden_stopped
                                      and "the file stopped its warden, so none counts")
        summary += f"; {stopped}" if stopped else ""
        summary += ": fix the first FAIL and grade again"
        summary += "" if grading.seed is None else \
            f" (--seed {grading.seed} draws the same cases again)"
    return notes + [summary]


def report(grading):
    """(lines, verdict): a PASS or FAIL line a check, as they ran, wrapped at LINE_WIDTH, and the
    summary. The verdict: every check passed, and the warden was left alone."""
    lines = [f"PASS  {what}" if problem is None else f"FAIL  {what}: {problem}"
             for what, problem in _said(grading)] + _summary(grading)
    verdict = _passed(grading) == len(grading.names) and not grading.warden_stopped
    return [part for line in lines for part in wrapped(printable(line))], verdict


def course_tests(grading):
    """[(name, problem)] one a check, in the order they run: what the report's line says of each
    that ran (problem None when it passed), and of each that did not, that it did not and where
    the grading stopped. When the file stopped its warden, none passes."""
    said = dict(_said(grading))
    last = (f"did not run: the grading stopped at {grading.results[-1][0]}: "
            f"{said[grading.results[-1][0]]}" if grading.stopped else None)
    tests = [(name, said[name] if name in said else last) for name in grading.names]
    if grading.warden_stopped:
        tests = [(name, problem or WARDEN) for name, problem in tests]
    return [(printable(name), problem) for name, problem in tests]


def gradescope(grading, seconds):
    """Gradescope's results.json for grading, which took seconds: one test a check, 1 point each,
    those drawn afresh visible only after the due date (a course may hide them), the summary as
    the output; the score is the count of those that passed."""
    tests = course_tests(grading)
    return json.dumps({
        "score": sum(problem is None for _, problem in tests), "execution_time": round(seconds, 1),
        "output": "\n".join(_summary(grading)),
        "tests": [{"name": name, "score": int(problem is None), "max_score": 1,
                   "status": "passed" if problem is None else "failed", "output": problem or "",
                   "visibility": "after_due_date" if DRAWN in name else "visible"}
                  for name, problem in tests]}, indent=2, ensure_ascii=False) + "\n"


def junit(grading, seconds):
    """JUnit XML for grading, which took seconds: a testsuite of one testcase a check, each that
    failed with its FAIL text as its <failure message=...>, the summary as its system-out."""
    tests = course_tests(grading)
    suite = ElementTree.Element("testsuite", name="lab06", tests=str(len(tests)), failures=str(
        sum(problem is not None for _, problem in tests)), errors="0", time=f"{seconds:.3f}")
    for name, problem in tests:
        case = ElementTree.SubElement(suite, "testcase", classname="lab06", name=name)
        if problem is not None:
            failure = ElementTree.SubElement(case, "failure", message=problem)
            failure.text = f"FAIL  {name}: {problem}"
    ElementTree.SubElement(suite, "system-out").text = "\n".join(_summary(grading))
    ElementTree.indent(suite)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            + ElementTree.tostring(suite, encoding="unicode") + "\n")

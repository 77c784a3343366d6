"""Lab 06's grader, the report of a Grading: a PASS or FAIL line a check (each hint at its first
FAIL), a count and the verdict; and the same checks as course autograders read them (gradescope,
junit). Every line is printable, at most LINE_WIDTH. Left out: points of unequal weight.
"""

import collections
import json
from xml.etree import ElementTree

from lab06.mistakes import HINT

LINE_WIDTH = 100      # a report's lines, wrapped: the learner has the lesson beside it


def wrapped(line, width=LINE_WIDTH, indent=" " * 6):
    """line as lines of at most width, broken at spaces (a longer word cut), indented after FAIL.

    >>> wrapped("FAIL  " + "word " * 4, 16)
    ['FAIL  word word', '      word word']
    """
    lines = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent) + 1, width + 1)
        end, rest = (width, width) if cut == -1 else (cut, cut + 1)     # no space: cut the word
        lines.append(line[:end])
        line = indent + line[rest:]
    return lines + [line.rstrip()]


def printable(line):
    r"""line with every character a terminal would act on written as its escape: the learner's
    code cannot move the cursor or paint a PASS over its FAIL.

    >>> printable("FAIL  x: \x1b[1A\rPASS")
    'FAIL  x: \\x1b[1A\\rPASS'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in line)


Grading = collections.namedtuple("Grading", "names results stopped warden_stopped subreaper seed")
Grading.__doc__ = """What one grading found: names (each check's), results [(what was checked,
None or what is wrong)], stopped (why the rest did not run, or None), warden_stopped, subreaper
(False: what the file started may outlive the grading) and seed (None: none drawn)."""

WARDEN = ("the file stopped its warden, the process that ends what it starts, and the grader "
          "killed what was left: leave the grader's processes alone")
DRAWN = "drawn afresh"      # a check that takes cases drawn from the seed says so in its name


def _said(grading):
    """[(what, problem)] as the report says them: each hint at its first FAIL only."""
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
    """The report's last lines, unwrapped: a note without a subreaper, and the count."""
    passed, count = _passed(grading), len(grading.names)
    notes = [] if grading.subreaper else [
        "note: this system has no prctl(PR_SET_CHILD_SUBREAPER): a process the file started in "
        "a session of its own may outlive the grading"]
    summary = f"{passed} of {count} checks pass"
    if passed != count or grading.warden_stopped:
        stopped = grading.stopped or (grading.warden_stopped
                                      and "the file stopped its warden, so none counts")
        summary += (f"; {stopped}" if stopped else "") + ": fix the first FAIL and grade again"
        summary += "" if grading.seed is None else \
            f" (--seed {grading.seed} draws the same cases again)"
    return notes + [summary]


def report(grading):
    """(lines, verdict): a PASS or FAIL line a check and the summary; every check passed."""
    lines = [f"PASS  {what}" if problem is None else f"FAIL  {what}: {problem}"
             for what, problem in _said(grading)] + _summary(grading)
    verdict = _passed(grading) == len(grading.names) and not grading.warden_stopped
    return [part for line in lines for part in wrapped(printable(line))], verdict


def course_tests(grading):
    """[(name, problem)] one a check: the report's words, or where the grading stopped."""
    said = dict(_said(grading))
    last = (f"did not run: the grading stopped at {grading.results[-1][0]}: "
            f"{said[grading.results[-1][0]]}" if grading.stopped else None)
    tests = [(name, said[name] if name in said else last) for name in grading.names]
    if grading.warden_stopped:
        tests = [(name, problem or WARDEN) for name, problem in tests]
    return [(printable(name), problem) for name, problem in tests]


def gradescope(grading, seconds):
    """Gradescope's results.json: a 1-point test a check, those drawn afresh visible after due."""
    tests = course_tests(grading)
    return json.dumps({
        "score": sum(problem is None for _, problem in tests), "execution_time": round(seconds, 1),
        "output": "\n".join(_summary(grading)),
        "tests": [{"name": name, "score": int(problem is None), "max_score": 1,
                   "status": "passed" if problem is None else "failed", "output": problem or "",
                   "visibility": "after_due_date" if DRAWN in name else "visible"}
                  for name, problem in tests]}, indent=2, ensure_ascii=False) + "\n"


def junit(grading, seconds):
    """JUnit XML: a testcase a check, a FAIL's text as its <failure message=...>."""
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

"""Lab 06's grader, the report: a PASS or FAIL line a check, each hint at its first FAIL only, a
last line that counts them, and the verdict. Every line is printable (what the learner's code
wrote cannot move the cursor or paint a PASS over its FAIL) and at most LINE_WIDTH characters.
"""

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


def report(results, count, stopped=None, warden_stopped=False, subreaper=True, seed=None):
    """(lines, verdict) for results, [(what was checked, None or what is wrong)] in the order they
    ran, of count checks: stopped says why the rest did not run, seed draws the same cases again
    (None for a head of the learner's own). The verdict: all count passed, the warden left alone."""
    lines, hints = [], set()
    for what, problem in results:
        if problem is None:
            lines.append(f"PASS  {what}")
            continue
        problem, _, hint = problem.partition(HINT)
        if hint:                  # each hint once, at its first FAIL
            problem += "; the mistake named above" if hint in hints else HINT + hint
            hints.add(hint)
        lines.append(f"FAIL  {what}: {problem}")
    if warden_stopped:
        lines.append("FAIL  the grading: the file stopped its warden, the process that ends what "
                     "it starts, and the grader killed what was left: leave the grader's "
                     "processes alone")
        stopped = stopped or "the file stopped its warden, so none counts"
    if not subreaper:
        lines.append("note: this system has no prctl(PR_SET_CHILD_SUBREAPER): a process the file "
                     "started in a session of its own may outlive the grading")
    passed = sum(problem is None for _, problem in results)
    summary = f"{passed} of {count} checks pass"
    verdict = passed == count and not warden_stopped
    if not verdict:
        summary += f"; {stopped}" if stopped else ""
        summary += ": fix the first FAIL and grade again"
        summary += "" if seed is None else f" (--seed {seed} draws the same cases again)"
    return [part for line in lines + [summary] for part in wrapped(printable(line))], verdict

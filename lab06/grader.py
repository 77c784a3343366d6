"""Lab 06's grader: grading() runs a learner's tiny_attention.py in a process of its own
(process.py) and the checks on its answers (grading_checks.py), and returns what they found;
grade() its report (report.py), one PASS or FAIL line per check:
`python3 perturb_attention.py --grade tiny_attention.py`, with --head and the change flags for a
head and changes of the learner's own, and --report for a course's autograder. What it leaves
out: a sandbox. The file runs with the learner's rights; a course runs untrusted submissions in
a container.
"""

import os
import random

from lab06 import lab as lab06
from lab06.grading_checks import experiment_checks, lab_checks
from lab06.process import CALL_LIMIT, TOTAL_LIMIT, Learner, LearnerProcess, Stopped
from lab06.report import Grading, report
from lab06.scaffold import refuse_a_shadowing_name

MAX_FILE = 2 ** 20    # bytes: a larger file is refused before it runs


def check_gradable(path):
    """Raise ValueError when path is not a file to grade (a folder, missing, not a regular file,
    larger than MAX_FILE) or its name would shadow a module, OSError when it cannot be read."""
    if os.path.isdir(path):
        raise ValueError(f"cannot grade {path}: it is a folder, expected a Python file")
    if not os.path.lexists(path):
        raise ValueError(f"cannot grade {path}: no such file (write one with --scaffold {path})")
    if not os.path.isfile(path):
        raise ValueError(f"cannot grade {path}: it is not a regular file, expected a Python file")
    refuse_a_shadowing_name(path, "grade")
    with open(path, "rb") as f:       # here, so that an unreadable file is one line, not a FAIL
        if len(f.read(MAX_FILE + 1)) > MAX_FILE:
            raise ValueError(f"cannot grade {path}: it is larger than {MAX_FILE >> 20} MB")


def grading(path, head=None, changes=(), call_limit=None, total_limit=None, seed=None):
    """The Grading of the file at path (report.py): with a head or changes, that head's checks;
    else the lab's, with the cases drawn afresh from seed (a new one by default, named in the
    report when a check fails). Limits in seconds (CALL_LIMIT and TOTAL_LIMIT by default). Raises
    what check_gradable raises."""
    check_gradable(path)
    own_head = head is not None or changes
    seed = random.SystemRandom().randrange(1, 10 ** 6) if seed is None else seed
    checks = experiment_checks(head or lab06.HEAD, changes) if own_head else lab_checks(seed)
    name = os.path.basename(path)
    results, stopped, current = [], None, f"importing {name}"
    process = LearnerProcess(path, call_limit or CALL_LIMIT, total_limit or TOTAL_LIMIT)
    try:
        learner = Learner(process, name)
        failure = learner.load()
        if failure:
            results.append((current, failure))
            stopped = "the file could not be imported, so no check ran"
        for check_name, check in checks if not failure else ():
            current = check_name
            try:
                problem = check(learner)
            except RecursionError:      # an answer nested almost as deep as JSON allows
                problem = "the answer is nested too deeply to be a matrix"
            results.append((check_name, problem))
    except Stopped as stop:
        left = len(checks) - len(results) - (current != f"importing {name}")
        results.append((current, str(stop)))
        stopped = f"the learner's process was stopped, so the last {left} did not run"
    finally:
        process.stop()
    return Grading([check_name for check_name, _ in checks], results, stopped,
                   process.warden_stopped, process.mode == "subreaper",
                   None if own_head else seed)


def grade(path, head=None, changes=(), call_limit=None, total_limit=None, seed=None):
    """The report of grading(path, ...), a line a check (wrapped at LINE_WIDTH) and a last line
    that counts them, and whether every check passed."""
    return report(grading(path, head, changes, call_limit, total_limit, seed))

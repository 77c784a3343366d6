"""Lab 06's grader: grading() runs a learner's tiny_attention.py in a process of its own
(process.py) and the checks (grading_checks.py) on its answers; grade() its report (report.py).
`python3 perturb_attention.py --grade tiny_attention.py`. Left out: a sandbox (the file runs
with the learner's rights).
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
    """Raise ValueError unless path is a regular file to grade, OSError when it cannot be read."""
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
    """The Grading (report.py) of the file at path: a head's checks, or the lab's, drawn from seed
    (a new one by default). Limits in seconds. Raises what check_gradable raises."""
    check_gradable(path)
    own_head = head is not None or changes
    seed = random.SystemRandom().randrange(1, 10 ** 6) if seed is None else seed
    checks = experiment_checks(head or lab06.HEAD, changes) if own_head else lab_checks(seed)
    name = os.path.basename(path)
    results, stopped, current = [], None, f"importing {name}"
    process = LearnerProcess(path, call_limit or CALL_LIMIT, total_limit or TOTAL_LIMIT)
    try:
        learner = Learner(process, name)
        if failure := learner.load():
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
                   process.warden_stopped, process.mode == "subreaper", None if own_head else seed)


def grade(path, head=None, changes=(), call_limit=None, total_limit=None, seed=None):
    """The report of grading(path, ...) and whether every check passed."""
    return report(grading(path, head, changes, call_limit, total_limit, seed))

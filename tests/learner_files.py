"""What the grader's tests (tests/test_grader_*.py) share: LEARNER, a careful learner's file, which
passes every check; the folders their files are graded in; InProcess, which grades a file that
attacks nothing a process holds without a process of its own; the report read a check a line;
and EveryReport, the test each class of gradings runs on every report it has.
"""

import json
import marshal
import os
import sys
import tempfile
import textwrap
import threading

from lab06 import runner as grade_lab06_runner
from lab06.mistakes import HINT
from lab06.process import LearnerProcess
from tests.helpers import run_script

# A learner's correct file, written the plain way. Each mutant replaces some of its lines.
LEARNER = textwrap.dedent('''
    import math


    def matmul(left, right):
        if not left or not right or len({len(r) for r in right}) != 1 or any(
                len(row) != len(right) for row in left):
            raise ValueError("matmul: the inner sizes differ")
        return [[sum(a * b for a, b in zip(row, col)) for col in zip(*right)] for row in left]


    def masked_softmax(scores, allowed):
        if not scores or len(scores) != len(allowed) or not any(allowed):
            raise ValueError("masked_softmax: nothing allowed")
        top = max(s for s, ok in zip(scores, allowed) if ok)
        exps = [math.exp(s - top) if ok else 0.0 for s, ok in zip(scores, allowed)]
        total = sum(exps)
        return [e / total for e in exps]


    def check(Q, K, V, allowed):
        for m in (Q, K, V):
            if not m or any(len(row) != len(m[0]) for row in m):
                raise ValueError("a matrix is empty or ragged")
            if not all(math.isfinite(x) for row in m for x in row):
                raise ValueError("a number is not finite")
        if len(Q[0]) != len(K[0]) or len(K) != len(V):
            raise ValueError("the shapes do not fit")
        if len(allowed) != len(Q) or any(len(row) != len(K) for row in allowed):
            raise ValueError("the mask has the wrong size")
        if any(type(ok) is not bool for row in allowed for ok in row):
            raise ValueError("a mask entry is not a bool")
        if not all(any(row) for row in allowed):
            raise ValueError("a query may attend to nothing")


    def attention(Q, K, V, allowed):
        check(Q, K, V, allowed)
        d = len(Q[0])
        scores = [[s / math.sqrt(d) for s in row] for row in matmul(Q, [list(c) for c in zip(*K)])]
        if not all(math.isfinite(s) for row in scores for s in row):
            raise ValueError("a score overflowed")
        masked_scores = [[s if ok else -math.inf for s, ok in zip(row, oks)]
                         for row, oks in zip(scores, allowed)]
        weights = [masked_softmax(row, oks) for row, oks in zip(masked_scores, allowed)]
        output = matmul(weights, V)
        return {"scores": scores, "masked_scores": masked_scores, "weights": weights,
                "output": output}
''')


def write_sources(folder, sources):
    """{name: path} for {name: (source, limits)}, each source a tiny_attention.py of its own."""
    paths = {}
    for n, name in enumerate(sources):
        os.mkdir(os.path.join(folder, str(n)))
        paths[name] = os.path.join(folder, str(n), "tiny_attention.py")
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(sources[name][0])
    return paths


def grade_source(source, *args):
    """perturb_attention.py --grade on source, written as a tiny_attention.py of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny_attention.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return run_script("perturb_attention.py", "--grade", path, *args)


class InProcess:
    """LearnerProcess for a file of the tests' own (a mutant, a careful learner's, a hostile file
    that attacks nothing a process holds): the runner's own functions answer in this process,
    each request and answer through marshal and JSON as they travel, so the grader's checks and
    diagnoses run without a process per file. Every file that attacks what a process holds (its
    descriptors, its exit, its builtins, its warden, the project's files) gets a process of its
    own."""

    mode, warden_stopped = "subreaper", False

    def __new__(cls, path, call_limit, total_limit):
        """On a thread (where the hostile files are graded while other tests run), the real
        LearnerProcess: a file that attacks the process it runs in never runs in this one."""
        if threading.current_thread() is not threading.main_thread():
            return LearnerProcess(path, call_limit, total_limit)
        return super().__new__(cls)

    def __init__(self, path, call_limit, total_limit):
        self.path, self.module, self.count = os.path.abspath(path), None, 0

    def ask(self, call, *args):
        self.count += 1
        request = {"id": self.count, "call": call, "args": marshal.loads(marshal.dumps(list(args)))}
        saved = list(sys.path)
        try:
            self.module, reply = grade_lab06_runner.reply_to(self.module, request, self.path)
        finally:
            sys.path[:] = saved
        # through UTF-8, as the pipe carries it: a lone surrogate must come escaped
        return json.loads(grade_lab06_runner.to_json({"id": self.count, **reply}).encode("utf-8"))

    def stop(self):
        for name in [name for name in sys.modules if name.startswith("learner_")]:
            del sys.modules[name]


def logical(lines):
    """The report's lines with each wrapped line joined again: a check a line."""
    joined = []
    for line in lines:
        if line.startswith(" " * 6) and joined:
            joined[-1] += " " + line[6:]
        else:
            joined.append(line)
    return joined


def first_fail(lines):
    return next((line for line in logical(lines) if line.startswith("FAIL")), None)


class EveryReport:
    """A test for a TestCase whose setUpClass sets graded, {file: (lines, passed)}."""

    def test_every_report_line_fits_in_100_characters_and_each_hint_comes_once(self):
        for name, (lines, _) in self.graded.items():
            with self.subTest(file=name):
                self.assertTrue(all(len(line) <= 100 for line in lines),
                                max(lines, key=len))
                hints = [line.split(HINT, 1)[1] for line in logical(lines)
                         if HINT in line]
                self.assertEqual(len(hints), len(set(hints)), hints)

"""Lab 06's scaffold and grader: a careful learner's file passes; each mistake learners make is
named on its first FAIL; no hostile file passes, hangs the grader or shows a traceback.

Every learner's file here is a small source string: LEARNER is a careful learner's, each of MUTANTS
changes it in one place, and each of HOSTILE attacks the grader. The grader starts one process per
file; the hostile files are graded several at a time, with a short limit where a loop must be
stopped, and the mutants, which attack nothing, in this process (InProcess), by the same runner's
functions.
"""

import atexit
import concurrent.futures
import dis
import json
import marshal
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from unittest import mock

from common import safe_io
from common.views import TOLERANCE
from lab06 import grader as grade_lab06
from lab06.compare import dict_problem, mismatch
from lab06.grading_checks import drawn, lab_checks
from lab06.mistakes import HINT
from lab06.process import (CALL_LIMIT, TOTAL_LIMIT, Learner, LearnerProcess, Reply,
                           project_inodes)
from lab06.scaffold import shadowed
from lab06 import runner as grade_lab06_runner
from tests.helpers import HERE, MessageAssertions, folder_copy, run_script

SHORT = 0.5        # seconds a call may take where the test waits for a loop to be stopped:
                   # 20 times what importing the file takes, so that a busy machine still has
                   # the loop, not the import, stopped

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

SCALED = "scores = [[s / math.sqrt(d) for s in row]"
MASKED = "masked_scores = [[s if ok else -math.inf for s, ok in zip(row, oks)]"
WEIGHTS = "weights = [masked_softmax(row, oks) for row, oks in zip(masked_scores, allowed)]"
ALL_SOURCES = "weights = [masked_softmax(row, [True] * len(row)) for row in masked_scores]"
SHIFT = "top = max(s for s, ok in zip(scores, allowed) if ok)"
OUTPUT = "output = matmul(weights, V)"
EXPS = "exps = [math.exp(s - top) if ok else 0.0 for s, ok in zip(scores, allowed)]"
SEED = 2026        # the seed every in-process grading draws its fresh cases from

# mistake: ([(a line of LEARNER, what the mutant has instead), ...], what its first FAIL says)
MUTANTS = {
    "post-softmax masking": (
        [(WEIGHTS, "weights = [[w if ok else 0.0 for w, ok in zip(masked_softmax(row, [True] * "
                   "len(row)), oks)] for row, oks in zip(scores, allowed)]")],
        "baseline weights: rows sum to 1, exactly 0.0 where blocked: weights row 1, column 1: "
        "expected 1, got 0.4 (2/5); this looks like: the mask is applied after the softmax"),
    "no scale": ([(SCALED, "scores = [[s for s in row]")],
                 "baseline scores = Q·Kᵀ/√2, before the mask: scores row 1, column 1: "
                 "expected 0.6931471806, got 0.9802581435; this looks like: the scores are not "
                 "scaled"),
    "divided by d": ([(SCALED, "scores = [[s / d for s in row]")],
                     "this looks like: the scores are divided by d = 2, not by √d"),
    "divided by the square root of the number of keys": (
        [("d = len(Q[0])", "d = len(K)")],
        "this looks like: the scores are divided by √3, the number of keys"),
    "divided by the square root of the width of X": (
        [("d = len(Q[0])", "d = 2")],
        "scores of a head of 3 queries and 4 keys of width 5: Q·Kᵀ/√5: scores row 1, "
        "column 1: expected 0.4472135955, got 0.7071067812; this looks like: the scores are "
        "divided by √2, the width of the lab's X"),
    "divided by the square root of the width of V": (
        [("d = len(Q[0])", "d = len(V[0])")],
        "this looks like: the scores are divided by √6, the width of V, not by √d = √5"),
    "an output as wide as Q, not as V": (
        [("output = matmul(weights, V)",
          "output = [row[:len(Q[0])] for row in matmul(weights, V)]")],
        "a head of 2 queries and 3 sources, then two heads drawn afresh: scores, masked_scores, "
        "weights and output: output row 1: expected a list of 3 numbers, got "
        "[1.3395230986533138, 1.3209538026933725]"),
    "right only on heads of at most 8 queries": (
        [(WEIGHTS, WEIGHTS + "\n    weights = [[w / 2 for w in row] if i >= 8 else row "
                             "for i, row in enumerate(weights)]")],
        "on a head of 12 queries and 8 sources, Q and K 7 wide, V 3 wide drawn afresh with seed "
        "2026 (--seed 2026 draws it again): weights row 9, column 2: expected 1, got 0.5 (1/2)"),
    "only the first six sources": (
        [(WEIGHTS, "weights = [masked_softmax(row[:6], oks[:6]) + [0.0] * (len(row) - 6) "
                   "for row, oks in zip(masked_scores, allowed)]")],
        "drawn afresh with seed 2026 (--seed 2026 draws it again): weights row 1, column 3: "
        "expected 3.518713618e-09, got 0.999731053"),
    "the scale of a head at most 5 wide": (
        [("d = len(Q[0])", "d = min(len(Q[0]), 5)")],
        "drawn afresh with seed 2026 (--seed 2026 draws it again): scores row 1, column 1: "
        "expected -11.81138978, got -13.97542486"),
    "values below −3 made positive": (
        [(OUTPUT, "output = matmul(weights, [[abs(x) if x < -3 else x for x in row] "
                  "for row in V])")],
        "drawn afresh with seed 2026 (--seed 2026 draws it again): output row 1, column 2: "
        "expected -6.499999996, got 6.499999996"),
    "a mask row longer than the sources accepted": (
        [("any(len(row) != len(K) for row in allowed)",
          "any(len(row) < len(K) for row in allowed)"),
         ("    check(Q, K, V, allowed)\n    d = len(Q[0])",
          "    check(Q, K, V, allowed)\n    allowed = [row[:len(K)] for row in allowed]\n"
          "    d = len(Q[0])")],
        "attention rejects a mask of the wrong size: expected ValueError for a mask of the wrong "
        "size (a row of 4 for 3 sources), but it returned"),
    "the softmax of the scores before their scale": (
        [(WEIGHTS, "weights = [masked_softmax([s * math.sqrt(d) for s in row], oks) "
                   "for row, oks in zip(masked_scores, allowed)]")],
        "baseline weights: rows sum to 1, exactly 0.0 where blocked: weights row 2, column 1: "
        "expected 0.3333333333 (1/3), got 0.2728405654; this looks like: the softmax is not "
        "taken of the scores returned: the scores are not scaled"),
    "K not transposed": (
        [("matmul(Q, [list(c) for c in zip(*K)])", "matmul(Q, K)")],
        "baseline scores = Q·Kᵀ/√2, before the mask: attention raised ValueError: matmul: the "
        "inner sizes differ (line 8); this looks like: the lab's head is valid input: is a check "
        "wrong, K not transposed (Q·Kᵀ: Q is (3, 2) and Kᵀ (2, 3); Q·K does not fit)"),
    "polarity inverted": (
        [(MASKED, "masked_scores = [[-math.inf if ok else s for s, ok in zip(row, oks)]")],
        "baseline masked_scores: −∞ where blocked: masked_scores row 1, column 1: expected "
        "0.6931471806, got −∞; this looks like: the mask's polarity is inverted"),
    "polarity inverted, refused on the lab's head": (
        [(WEIGHTS, "weights = [masked_softmax(row, [not ok for ok in oks]) "
                   "for row, oks in zip(scores, allowed)]")],
        "baseline scores = Q·Kᵀ/√2, before the mask: attention raised ValueError: "
        "masked_softmax: nothing allowed (line 14); this looks like: the lab's head is valid "
        "input"),
    "softmax over columns": (
        [(WEIGHTS, "weights = [list(r) for r in zip(*[masked_softmax(list(col), "
                   "[s != -math.inf for s in col]) for col in zip(*masked_scores)])]")],
        "this looks like: the softmax is taken over each column (over the destinations)"),
    "zero-score bug": (
        [(MASKED, "masked_scores = [[s if ok else 0.0 for s, ok in zip(row, oks)]"),
         (WEIGHTS, ALL_SOURCES)],
        "baseline masked_scores: −∞ where blocked: masked_scores row 1, column 2 is blocked: "
        "expected exactly −∞, got 0; this looks like: blocked scores are set to 0.0 instead "
        "of −∞"),
    "finite stand-in": (
        [(MASKED, "masked_scores = [[s if ok else -1e9 for s, ok in zip(row, oks)]"),
         (WEIGHTS, ALL_SOURCES)],
        "got -1000000000; this looks like: a blocked score stood in for by a finite number"),
    "shift over the blocked scores too": (
        [(SHIFT, "top = max(scores)")],
        "masked_softmax: [0, ln 2, 1000] with the last blocked -> [1/3, 2/3, 0]: masked_softmax "
        "raised ZeroDivisionError: float division by zero (line 18); this looks like: the shift "
        "is the largest of every score, blocked ones too"),
    "shift by the first allowed score": (
        [(SHIFT, "top = next(s for s, ok in zip(scores, allowed) if ok)")],
        "masked_softmax: [0, 1000] -> [0, 1], which needs the largest allowed score as the shift: "
        "masked_softmax raised OverflowError: math range error (line 16); this looks like: the "
        "shift is not the largest allowed score"),
    "no shift": ([(SHIFT, "top = 0.0")],
                 "masked_softmax: [−1000, −1000 + ln 2] -> [1/3, 2/3], which needs a shift: "
                 "masked_softmax raised ZeroDivisionError: float division by zero (line 18); this "
                 "looks like: no shift, or not by the largest allowed score: every exp "
                 "underflowed to 0"),
    "a non-square mask refused": (
        [("any(len(row) != len(K) for row in allowed)",
          "any(len(row) != len(allowed) for row in allowed)")],
        "scores of a head of 3 queries and 4 keys of width 5: Q·Kᵀ/√5: attention raised "
        "ValueError: the mask has the wrong size (line 30); this looks like: this head is valid"),
    "mixed with the wrong orientation": (
        [(OUTPUT, "output = matmul([list(c) for c in zip(*weights)], V)")],
        "baseline output = weights·V: output row 1, column 1: expected 2, got 2.5 (5/2); this "
        "looks like: the mixture takes A's columns: z_i = Σ_j a_ij·v_j is A·V, not Aᵀ·V"),
    "scale after the softmax": (
        [(WEIGHTS, "weights = [[w / math.sqrt(d) for w in masked_softmax([s * math.sqrt(d) for s "
                   "in row], oks)] for row, oks in zip(masked_scores, allowed)]")],
        "baseline weights: rows sum to 1, exactly 0.0 where blocked: weights row 1, column 1: "
        "expected 1, got 0.7071067812; this looks like: the scale is applied after the softmax"),
    "a causal mask of its own": (
        [("    check(Q, K, V, allowed)\n", "    check(Q, K, V, allowed)\n    allowed = [[j <= i "
          "for j in range(len(K))] for i in range(len(Q))]\n")],
        "weights with allowed = [[T, F, T], [F, T, T], [T, T, F]]: weights row 1, column 1: "
        "expected 0.5 (1/2), got 1; this looks like: the mask given is ignored"),
    "inputs edited in place": (
        [("d = len(Q[0])", "d = len(Q[0])\n    for row in Q:\n        row[:] = [x / math.sqrt(d) "
                           "for x in row]"),
         (SCALED, "scores = [[s for s in row]")],
        "baseline scores = Q·Kᵀ/√2, before the mask: attention edited its inputs in place "
        "(Q changed): work on copies"),
    "masked scores shifted in place by the softmax": (
        [("    exps = [math.exp(s - top)", "    scores[:] = [s - top for s in scores]\n"
                                          "    exps = [math.exp(s)")],
        "baseline masked_scores: −∞ where blocked: masked_scores row 1, column 1: expected "
        "0.6931471806, got 0; this looks like: the masked scores were shifted in place"),
    "a row with every source blocked accepted": (
        [("        raise ValueError(\"a query may attend to nothing\")\n", "        pass\n"),
         ("if not scores or len(scores) != len(allowed) or not any(allowed):",
          "if not any(allowed):\n        return [0.0] * len(scores)\n    if not scores:")],
        "masked_softmax rejects a row with nothing allowed, an empty one too: expected ValueError "
        "for a row with nothing allowed (no fallback is invented) (both sources blocked), but it "
        "returned [0.0, 0.0]"),
    # each kind of bad input has more than one witness: a check of Q alone is not enough
    "a ragged K or V accepted": (
        [("if not m or any(len(row) != len(m[0]) for row in m):",
          "if not m or m is Q and any(len(row) != len(m[0]) for row in m):"),
         ("matmul(Q, [list(c) for c in zip(*K)])",
          "matmul(Q, [[row[j] for row in K] for j in range(len(Q[0]))])")],
        "attention rejects a ragged matrix: expected ValueError for a ragged matrix (a ragged K), "
        "but attention raised IndexError"),
    "an infinite value accepted, NaN refused": (
        [("if not all(math.isfinite(x) for row in m for x in row):",
          "if any(math.isnan(x) for row in m for x in row):")],
        "attention rejects a value that is not finite: expected ValueError for a value that is "
        "not finite (∞ in V row 2), but it returned"),
    # finiteness checked in the first row of each matrix alone: a witness in every row
    "finiteness checked in each matrix's first row only": (
        [("if not all(math.isfinite(x) for row in m for x in row):",
          "if not all(math.isfinite(x) for x in m[0]):"),
         ("if not all(math.isfinite(s) for row in scores for s in row):",
          "if not all(math.isfinite(s) for s in scores[0]):")],
        "attention rejects a query that is not finite: expected ValueError for a query that is "
        "not finite (∞ in Q row 2), but it returned"),
    "an empty softmax answered with []": (
        [("    if not scores or len(scores) != len(allowed) or not any(allowed):",
          "    if scores == [] == allowed:\n        return []\n"
          "    if not scores or len(scores) != len(allowed) or not any(allowed):")],
        "masked_softmax rejects a row with nothing allowed, an empty one too: expected "
        "ValueError for a row with nothing allowed (no fallback is invented) (no source at all: "
        "masked_softmax([], [])), but it returned []"),
    "multiplied by the square root of d": (
        [(SCALED, "scores = [[s * math.sqrt(d) for s in row]")],
        "this looks like: the scores are multiplied by √d = √2, not divided by it"),
    # two fills inside masked_softmax that give the same wrong weights near −1e10
    "−1e9 for a blocked score inside the softmax": (
        [(SHIFT, "scores = [s if ok else -1e9 for s, ok in zip(scores, allowed)]\n"
                 "    top = max(scores)"),
         (EXPS, "exps = [math.exp(s - top) for s in scores]")],
        "weights when every score is near −1e10: a blocked source still gets none: weights row "
        "1, column 1: expected 1, got 0; this looks like: a blocked score stood in for by a "
        "finite number (such as −1e9), which wins once the allowed scores are lower still"),
    "−10000 for a blocked score inside the softmax": (
        [(SHIFT, "scores = [s if ok else -10000.0 for s, ok in zip(scores, allowed)]\n"
                 "    top = max(scores)"),
         (EXPS, "exps = [math.exp(s - top) for s in scores]")],
        "weights when every score is near −1e10: a blocked source still gets none: weights row "
        "1, column 1: expected 1, got 0; this looks like: blocked scores are set to 0.0, or to a "
        "finite number such as −10000, instead of −∞"),
    "0.0 for a blocked score inside the softmax": (
        [(SHIFT, "scores = [s if ok else 0.0 for s, ok in zip(scores, allowed)]\n"
                 "    top = max(scores)"),
         (EXPS, "exps = [math.exp(s - top) for s in scores]")],
        "masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row drawn "
        "afresh: entry 1: expected 0.3333333333 (1/3), got 0.25 (1/4); this looks like: blocked "
        "scores are set to 0.0 instead of −∞"),
    # a masked_softmax that writes −∞ into its caller's list, seen first where it shows
    "−∞ written into the scores before the mask": (
        [(SHIFT, "for j, ok in enumerate(allowed):\n        if not ok:\n"
                 "            scores[j] = -math.inf\n    " + SHIFT),
         (WEIGHTS, "weights = [masked_softmax(row, oks) for row, oks in zip(scores, allowed)]")],
        "baseline scores = Q·Kᵀ/√2, before the mask: scores row 1, column 2: expected 0, got −∞; "
        "this looks like: masked_softmax edits the scores it is given"),
    "−∞ written into the masked scores": (
        [(SHIFT, "for j, ok in enumerate(allowed):\n        if not ok:\n"
                 "            scores[j] = -math.inf\n    " + SHIFT)],
        "masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row drawn "
        "afresh: masked_softmax edited its inputs in place (scores changed): work on copies"),
    # an int where a row should be: a report, not an error
    "an int for a row of masked_scores": (
        [('"masked_scores": masked_scores,', '"masked_scores": [7] + masked_scores[1:],')],
        "baseline masked_scores: −∞ where blocked: masked_scores row 1: expected a list of 3 "
        "numbers, got 7"),
    "an int for a row of the output": (
        [(OUTPUT, "output = [7] + matmul(weights, V)[1:]")],
        "baseline output = weights·V: output row 1: expected a list of 2 numbers, got 7"),
    "a softmax mask of another length accepted": (
        [("if not scores or len(scores) != len(allowed) or not any(allowed):",
          "if not scores or not any(allowed):")],
        "masked_softmax rejects a mask of another length: expected ValueError for scores and a "
        "mask of different lengths (3 scores, 1 mask entry), but it returned"),
}

# The project's folder as a hostile file finds it: from the runner's path, in its __file__ or in
# /proc/PID/cmdline (PID: self, or the warden's)
ROOT_FROM_MAIN = ("import os, sys\n"
                  "ROOT = os.path.dirname(os.path.dirname(sys.modules['__main__'].__file__))\n")
ROOT_FROM_PROC = ("import os, sys\nwords = open(f'/proc/PID/cmdline', 'rb').read().split(b'\\0')\n"
                  "runner = next(w for w in words if w.endswith(b'runner.py')).decode()\n"
                  "ROOT = os.path.dirname(os.path.dirname(runner))\n")
SLEEPER = os.path.join(tempfile.mkdtemp(), "sleeper")    # the pid of a process left to outlive
atexit.register(shutil.rmtree, os.path.dirname(SLEEPER), True)

# attack: (what the file adds at its end, what its first FAIL says). None of them may pass.
HOSTILE = {
    "sys.exit at import": ("import sys\nsys.exit(0)\n",
                           "FAIL  importing tiny_attention.py: it called sys.exit(0) (line 51): "
                           "importing a file must define its functions, not end the program"),
    "os._exit at import": ("import os\nos._exit(0)\n",
                           "FAIL  importing tiny_attention.py: the learner's process ended during "
                           "the import, with exit status 0"),
    "an atexit hook that exits 0, in a wrong file": (
        "import atexit, os\natexit.register(os._exit, 0)\ndef matmul(left, right):\n"
        "    return [[0.0]]\n", "FAIL  matmul: Q = X·WQ: the product: expected a list of 3 rows"),
    "a float subclass whose == is always true": (
        "class Liar(float):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\n"
        "def matmul(left, right):\n    return [[Liar(7.0) for _ in right[0]] for _ in left]\n",
        "the product row 1, column 1: expected a float or an int, got a Liar 7.0: a number must be "
        "a float or an int itself, not a subclass or a bool"),
    "patching the grader, math and builtins": (
        "import builtins, math, sys\nsys.modules['grade_lab06'] = None\nmath.exp = lambda x: 1.0\n"
        "builtins.abs = lambda x: 0.0\nbuiltins.isinstance = lambda *a: True\n"
        "def masked_softmax(scores, allowed):\n    return [0.5] * len(scores)\n",
        "masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row drawn "
        "afresh: entry 1: expected 0.3333333333 (1/3), got 0.5 (1/2)"),
    "patching the runner's functions to hide a bool and an edit": (
        "import __main__\n__main__.plain = lambda value, depth=0: [[10 ** 400, 0.0]] * 3\n"
        "__main__._text_of = lambda value: None\n__main__.to_json = lambda value: '{}'\n"
        "def matmul(left, right):\n    left.append([0.0])\n"
        "    return [[True for _ in right[0]] for _ in left[:-1]]\n",
        "FAIL  importing tiny_attention.py: during the import, the learner's process wrote into "
        "the grader's channel what the grader did not ask for"),
    "rewriting the runner's float texts to hide an edit": (
        "import __main__\ntry:\n    __main__.FLOAT_TEXT['2.0'] = '1.0'\nexcept TypeError:\n"
        "    pass\n_attention = attention\ndef attention(Q, K, V, allowed):\n"
        "    result = _attention([list(row) for row in Q], K, V, allowed)\n"
        "    Q[0][0] = 2.0 if Q[0][0] == 1.0 else Q[0][0]\n    return result\n",
        "baseline scores = Q·Kᵀ/√2, before the mask: attention edited its inputs in place "
        "(Q changed)"),
    "a BaseException of its own": (
        "class Boom(BaseException):\n    pass\ndef matmul(left, right):\n    raise Boom('no')\n",
        "matmul raised Boom (line 53), which is not an Exception: no"),
    "KeyboardInterrupt": ("def matmul(left, right):\n    raise KeyboardInterrupt\n",
                          "matmul raised KeyboardInterrupt (line 51), which is not an Exception"),
    "a loop in C at import": ("x = 10 ** 10 ** 8\n", "the import was stopped after"),
    "a matmul that swallows its IndexError in a loop": (
        "def matmul(left, right):\n    i = 0\n    while True:\n        try:\n"
        "            left[i]\n            i += 1\n        except Exception:\n            pass\n",
        "matmul was stopped after"),
    "a message whose __str__ loops": (
        "class Stubborn(ValueError):\n    def __str__(self):\n        while True:\n"
        "            pass\ndef matmul(left, right):\n    raise Stubborn()\n",
        "matmul was stopped after"),
    "a thread that exits the process": (
        "import os, threading\nthreading.Thread(target=os._exit, args=(0,)).start()\n"
        "import time\ntime.sleep(5)\n", "the learner's process ended during the import"),
    "writing on descriptors 1 and 2 and into the grader's channel": (
        "import os\nos.write(1, b'40 of 40 checks pass\\n')\nos.write(2, b'Traceback\\n')\n"
        "for fd in range(3, 12):\n    try:\n"
        "        os.write(fd, b'{\"id\": 1, \"value\": null}\\n')\n"
        "    except OSError:\n        pass\n",
        "wrote into the grader's channel what the grader did not ask for"),
    "a crash in C": ("import ctypes\ndef matmul(left, right):\n    ctypes.string_at(0)\n",
                     "the learner's process was killed by SIGSEGV during matmul"),
    "a syntax error": ("def matmul(left, right)\n    pass\n",
                       "FAIL  importing tiny_attention.py: syntax error (line 50): expected ':'"),
    "a message that paints PASS over its FAIL, with a lone surrogate": (
        "def matmul(left, right):\n    raise ValueError('\\x1b[2K\\rPASS  fine\\n\\ud800')\n",
        "matmul raised ValueError: \\x1b[2K\\rPASS  fine\\n\\ud800"),
    "a module beyond the standard library": (
        "import numpy\n", "FAIL  importing tiny_attention.py: it raised ModuleNotFoundError: No "
                          "module named 'numpy' (line 50): the grader runs the file with the "
                          "standard library alone, as the lab asks"),
    # answers taken from the project: its folder found as a file could find it, from the runner's
    # __file__ or a command line in /proc, then its files loaded in each way there is
    "the project's lab06 imported, its folder found from the runner's __file__": (
        ROOT_FROM_MAIN + "sys.path.insert(0, ROOT)\nfrom lab06 import attention, masked_softmax\n",
        f"it opened {os.path.join(HERE, 'lab06', '__init__.py')}, one of the project's own files "
        f"and folders: the answers must be the file's own"),
    "a module of the project's loaded by importlib, found from /proc/self/cmdline": (
        ROOT_FROM_PROC.replace("PID", "self") + "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('h', os.path.join(ROOT, 'lab06', "
        "'head.py'))\nspec.loader.exec_module(importlib.util.module_from_spec(spec))\n",
        f"it opened {os.path.join(HERE, 'lab06', 'head.py')}, one of the project's own"),
    "the project's attention.py read and run, found from the warden's /proc cmdline": (
        ROOT_FROM_PROC.replace("PID", "{os.getppid()}")
        + "exec(open(os.path.join(ROOT, 'attention.py')).read(), {'__name__': 'x'})\n",
        f"it opened {os.path.join(HERE, 'attention.py')}, one of the project's own"),
    "runpy.run_path of one of the project's modules": (
        ROOT_FROM_MAIN + "import runpy\nrunpy.run_path(os.path.join(ROOT, 'core', 'masked.py'))\n",
        f"it opened {os.path.join(HERE, 'core', 'masked.py')}, one of the project's own"),
    "os.open of one of the project's folders, to open its files through dir_fd": (
        ROOT_FROM_MAIN + "at = os.open(os.path.join(ROOT, 'lab06'), os.O_RDONLY)\n"
        "os.read(os.open('head.py', os.O_RDONLY, dir_fd=at), 100)\n",
        f"it opened {os.path.join(HERE, 'lab06')}, one of the project's own"),
    "the project's attention.py opened through a link to the project's folder": (
        ROOT_FROM_MAIN + "link = os.path.join(os.path.dirname(__file__), 'p')\n"
        "os.symlink(ROOT, link)\nopen(os.path.join(link, 'attention.py')).read()\n",
        "/p/attention.py, one of the project's own"),
    "the project's attention.py opened from its folder": (
        ROOT_FROM_MAIN + "os.chdir(ROOT)\nopen('attention.py').read()\n",
        "it opened attention.py, one of the project's own"),
    "another Python started to import the project": (
        ROOT_FROM_MAIN + "os.chdir(ROOT)\nos.system(sys.executable + ' -c \"import attention\"')\n",
        "it started another program (os.system): the answers must be the file's own"),
    "the runner's watch rewritten through gc, then the project imported": (
        "import gc\nfor f in gc.get_objects():\n    if getattr(f, '__name__', '') == 'hook':\n"
        "        f.__module__ = 'mine'\n        f.__code__ = (lambda event, args: None).__code__\n"
        + ROOT_FROM_MAIN
        + "sys.path.insert(0, ROOT)\nimport attention\n",
        "it rewrote the __code__ of one of the grader's functions: the answers must be the file's "
        "own"),
    # its warden killed at once, then a sleeper left that its parent no longer holds
    "a warden stopped, and a sleeper left": (
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\nready, told = os.pipe()\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        with open({SLEEPER!r}, 'w') as f:\n            f.write(str(os.getpid()))\n"
        "        os.write(told, b'x')\n        time.sleep(30)\n    os._exit(0)\n"
        "os.read(ready, 1)\n",
        "FAIL  the grading: the file stopped its warden, the process that ends what it starts, and "
        "the grader killed what was left"),
}
LOOPS = {"a loop in C at import", "a matmul that swallows its IndexError in a loop",
         "a message whose __str__ loops"}


def mutant(changes):
    source = LEARNER
    for line, instead in changes:
        assert source.count(line) == 1, line
        source = source.replace(line, instead)
    return source


class InProcess:
    """LearnerProcess for a file of this test's own (a mutant, a careful learner's): the runner's
    own functions answer in this process, each request and answer through marshal and JSON as
    they travel, so the grader's checks and diagnoses run without a process per file. Every file
    that attacks the grader still gets a process of its own."""

    mode, warden_stopped = "subreaper", False

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
        return json.loads(grade_lab06_runner.to_json({"id": self.count, **reply}))

    def stop(self):
        for name in [name for name in sys.modules if name.startswith("learner_")]:
            del sys.modules[name]


def write_sources(folder, sources):
    """{name: path} for {name: (source, limits)}, each source a tiny_attention.py of its own."""
    paths = {}
    for n, name in enumerate(sources):
        os.mkdir(os.path.join(folder, str(n)))
        paths[name] = os.path.join(folder, str(n), "tiny_attention.py")
        with open(paths[name], "w", encoding="utf-8") as f:
            f.write(sources[name][0])
    return paths


def start_grading(sources):
    """Start grading each file of {name: (source, limits)} in a process of its own, several at a
    time on threads (most of a grading is waiting for the other process). Returns
    {name: future of (lines, passed)}; the files are removed when the tests end."""
    folder = tempfile.mkdtemp()
    paths = write_sources(folder, sources)
    pool = concurrent.futures.ThreadPoolExecutor(6)
    futures = {name: pool.submit(grade_lab06.grade, paths[name], **sources[name][1])
               for name in sources}
    pool.shutdown(wait=False)
    atexit.register(shutil.rmtree, folder, True)
    return futures


# More of the standard library than math, the stack of every call formatted: the runner's own lines
# (linecache opens runner.py) are no answer taken from the project
BEYOND_MATH = textwrap.dedent('''
    import fractions, json, traceback
    _matmul = matmul


    def matmul(left, right):
        traceback.format_stack()
        return _matmul(left, right)
''')


def attacking_sources():
    """The files that attack the grader, each graded in a process of its own: first those that
    wait for a limit."""
    slow = ("\nimport time\n_matmul = matmul\n\n\ndef matmul(left, right):\n"
            "    time.sleep(0.4)\n    return _matmul(left, right)\n")
    sources = {"slow": (LEARNER + slow, {"call_limit": 5, "total_limit": 1.0}),
               "the standard library at large": (LEARNER + BEYOND_MATH, {})}
    sources.update({name: (LEARNER + "\n" + attack, {"call_limit": SHORT})
                    for name, (attack, _) in HOSTILE.items() if name in LOOPS})
    sources.update({name: (LEARNER + "\n" + attack, {})
                    for name, (attack, _) in HOSTILE.items() if name not in LOOPS})
    return sources


# Started here, when the tests are collected: the processes run on the second core while the
# modules before this one are tested.
ATTACKS = start_grading(attacking_sources())


def start_with_a_descriptor_closed():
    """A correct file graded from the command line by a process started with its standard input
    or its standard error closed (`<&-`, `2>&-`), each on a thread: {descriptor: future of the
    CompletedProcess}; the file is removed when the tests end."""
    folder = tempfile.mkdtemp()
    path = write_sources(folder, {"tiny_attention": (LEARNER, {})})["tiny_attention"]
    command = ("import os, sys; os.close({fd}); os.execv(sys.executable, [sys.executable, "
               "'perturb_attention.py', '--grade', {path!r}])")
    pool = concurrent.futures.ThreadPoolExecutor(2)
    futures = {fd: pool.submit(subprocess.run, [sys.executable, "-c",
                                                command.format(fd=fd, path=path)],
                               cwd=HERE, stdout=subprocess.PIPE, text=True, timeout=60)
               for fd in (0, 2)}
    pool.shutdown(wait=False)
    atexit.register(shutil.rmtree, folder, True)
    return futures


DESCRIPTOR_CLOSED = start_with_a_descriptor_closed()


# A file that, as it is imported, leaves two processes that try to outlive the grading: one in a
# session of its own (setsid), one in a process group of its own (setpgid), each the grandchild
# of a parent that has exited, each holding the FIFO open for writing; then its matmul sleeps, so
# that the grading is under way when the grader is stopped.
ESCAPES = textwrap.dedent('''
    import os, time


    ready, told = os.pipe()
    for leave in (os.setsid, lambda: os.setpgid(0, 0)):
        if os.fork() == 0:
            leave()
            if os.fork() == 0:
                alive = os.open(FIFO, os.O_WRONLY)
                os.write(alive, b"x")
                os.write(told, b"x")
                while True:
                    time.sleep(1)
            os._exit(0)
    os.read(ready, 1)
    os.read(ready, 1)


    def matmul(left, right):
        time.sleep(60)
''')


# One process that imports the grader once and forks a grader per signal: three graders for the
# price of one Python start. Each grades its file as perturb_attention.py --grade does, its report
# on the standard output they share, Ctrl-C ending it with 130 as the command line's does.
GRADERS = textwrap.dedent('''
    import os, sys
    from lab06 import grader
    pids = []
    for path in sys.argv[1:]:
        pid = os.fork()
        if pid == 0:
            try:
                lines, passed = grader.grade(path)
                os.write(1, ("\\n".join(lines) + "\\n").encode())
                os._exit(0 if passed else 1)
            except KeyboardInterrupt:
                os._exit(130)
            finally:
                os._exit(1)
        pids.append(pid)
    print(*pids, flush=True)
    for pid in pids:
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
''')


def stop_the_graders_midway(signal_names):
    """Grade ESCAPES once per signal, each grader a process of its own; send each its signal once
    both of its escapees hold its FIFO. Returns {signal name: (how many escapees held the FIFO,
    the grader's exit status, whether a writer still held the FIFO 10 s after the graders
    ended)}."""
    import signal
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        readers, paths = [], []
        for n, _ in enumerate(signal_names):
            fifo = os.path.join(tmp, f"alive{n}")
            os.mkfifo(fifo)
            readers.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            paths.append(os.path.join(tmp, f"{n}", "tiny_attention.py"))
            os.mkdir(os.path.dirname(paths[-1]))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(f"FIFO = {fifo!r}\n" + ESCAPES)
        try:
            # -S: no site packages, which the project never needs, to start sooner
            graders = subprocess.Popen([sys.executable, "-S", "-c", GRADERS, *paths], cwd=HERE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
            pids = [int(pid) for pid in graders.stdout.readline().split()]
            ready = []
            for reader, pid, name in zip(readers, pids, signal_names):
                got = b""
                while len(got) < 2 and select.select([reader], [], [], 20)[0]:
                    got += os.read(reader, 2)
                ready.append(len(got))
                os.kill(pid, getattr(signal, name))
            printed = graders.stdout.read()
            graders.stdout.close()
            graders.wait()
            codes, results = [int(line) for line in printed.split()[-len(pids):]], {}
            for name, reader, got, code in zip(signal_names, readers, ready, codes):
                held = True
                while select.select([reader], [], [], 10)[0]:
                    if not os.read(reader, 64):
                        held = False          # every writer has gone
                        break
                results[name] = (got, code, held)
            return results
        finally:
            for reader in readers:
                os.close(reader)


STOPPED = (concurrent.futures.ThreadPoolExecutor(1).submit(
    stop_the_graders_midway, ("SIGTERM", "SIGHUP", "SIGINT"))
    if hasattr(os, "mkfifo") and hasattr(os, "fork") and os.path.isdir("/proc") else None)


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


class Grader(MessageAssertions, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        """Every hostile file graded once, in a process of its own (ATTACKS, started when this
        module was imported), and every mutant in this process."""
        cls.graded = {name: future.result() for name, future in ATTACKS.items()}
        own = {name: (mutant(changes), {}) for name, (changes, _) in MUTANTS.items()}
        own["a ValueError subclass"] = ("class ShapeError(ValueError):\n    pass\n" + (
            LEARNER.replace('raise ValueError("the shapes do not fit")',
                            'raise ShapeError("the shapes do not fit")')), {})
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess):
            paths = write_sources(tmp, own)
            cls.graded.update({name: grade_lab06.grade(paths[name], seed=SEED) for name in own})

    def grade_source(self, source, *args):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            return run_script("perturb_attention.py", "--grade", path, *args)

    def test_the_readme_states_the_large_drawn_heads_range_and_the_tolerance(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        said = re.search(r"\((\d+) to (\d+) queries, (\d+) to (\d+) sources, (\d+) to (\d+) "
                         r"wide\) with numbers up to ±(\d+)", text)
        self.assertIsNotNone(said, "lab06/README.md no longer states the large drawn head")
        heads = [drawn(seed)["heads"][1] for seed in range(200)]
        T, S, d = ([len(q) for q, _, _, _ in heads], [len(k) for _, k, _, _ in heads],
                   [len(q[0]) for q, _, _, _ in heads])
        top = max(abs(x) for head in heads for m in head[:3] for row in m for x in row)
        self.assertEqual(tuple(map(int, said.groups())),
                         (min(T), max(T), min(S), max(S), min(d), max(d), top))
        tolerance = f"{TOLERANCE:.0e}".replace("e-0", "e-")
        self.assertIn(f"A number is right when it lies within {tolerance} of the grader's", text)

    def test_the_readme_counts_the_checks_the_grader_runs(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            said = re.search(r"The grader runs the (\d+) checks the scaffold lists", f.read())
        self.assertIsNotNone(said,
                             "lab06/README.md no longer says how many checks the grader runs")
        self.assertEqual(int(said.group(1)), len(lab_checks()))

    def test_a_correct_file_passes_every_check_and_exits_0(self):
        done = self.grade_source(LEARNER)
        self.assertEqual((done.returncode, done.stderr), (0, ""), done.stdout)
        self.assertNotIn("FAIL", done.stdout)
        count = len(lab_checks())
        self.assertTrue(done.stdout.endswith(f"\n{count} of {count} checks pass\n"), done.stdout)

    def test_our_core_in_the_scaffolds_three_functions_passes_every_check(self):
        source = textwrap.dedent('''
            from attention import matmul
            from lab06 import attend, masked_softmax


            def attention(Q, K, V, allowed):
                cache = attend(Q, K, V, allowed)
                nothing_blocked = [[True] * len(K) for _ in Q]
                return {"scores": attend(Q, K, V, nothing_blocked)["scores"],
                        "masked_scores": cache["scores"], "weights": cache["weights"],
                        "output": cache["mixed"]}
        ''')
        # beside a copy of the project, which the grader does not take for the project's own
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(HERE, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
                ".git", "__pycache__", "tests", "*.png", "*.html", "*.svg"))
            os.chmod(tmp, 0o700)      # copytree gave it the folder's mode, read-only in a download
            path = os.path.join(tmp, "tiny_attention.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            lines, passed = grade_lab06.grade(path)
        self.assertTrue(passed, "\n".join(lines))

    def test_each_known_mistake_is_named_on_its_first_fail(self):
        for name in MUTANTS:
            lines, passed = self.graded[name]
            with self.subTest(mistake=name):
                self.assertFalse(passed)
                self.assertIn(MUTANTS[name][1], first_fail(lines), "\n".join(lines))

    def test_no_hostile_file_passes_hangs_the_grader_or_leaves_a_traceback(self):
        for name in HOSTILE:
            lines, passed = self.graded[name]
            with self.subTest(attack=name):
                self.assertFalse(passed)
                self.assertIn(HOSTILE[name][1], first_fail(lines), "\n".join(lines))
                self.assertTrue(all(line.isprintable() for line in lines), lines)
                self.assertFalse(any("Traceback" in line for line in lines))
                self.assertRegex(logical(lines)[-1], r"^\d+ of \d+ checks pass")
                self.assertTrue(all(len(line) <= 100 for line in lines), lines)

    def test_every_report_line_fits_in_100_characters_and_each_hint_comes_once(self):
        for name, (lines, _) in self.graded.items():
            with self.subTest(file=name):
                self.assertTrue(all(len(line) <= 100 for line in lines),
                                max(lines, key=len))
                hints = [line.split(HINT, 1)[1] for line in logical(lines)
                         if HINT in line]
                self.assertEqual(len(hints), len(set(hints)), hints)

    def test_every_shape_of_answer_gets_a_fail_that_says_what_came(self):
        """Each check, handed answers of every shape (an int, a float, None, a bool, a string,
        rows that are ints, dicts, empty lists, NaN), says what is wrong and raises nothing."""
        class Shapes:
            def __init__(self, shape):
                self.shape = shape

            def call(self, function, *args, fresh=False):
                value = ({key: self.shape for key in ("scores", "masked_scores", "weights",
                                                      "output")}
                         if function == "attention" and self.shape != "<dict>" else self.shape)
                return Reply(value, None, None, None, [])

        shapes = [7, "<NoneType>", "<bool True>", "<dict>", [], [7, 7, 7], [[7]],
                  [{"a": 1}] * 3, [7, [1.0, 2.0], "x"], [[float("nan")] * 3] * 3]
        for name, check in lab_checks(SEED):
            for shape in shapes:
                with self.subTest(check=name, shape=shape):
                    problem = check(Shapes(shape))
                    if "leaves" in name or "run again" in name:
                        continue          # checks of edits and of state: no number is judged
                    self.assertIsInstance(problem, str)
                    self.assertRegex(problem, r"got|expected|returned|has no|None")

    def test_a_file_that_answers_from_a_table_of_the_graders_inputs_fails(self):
        """Record every call the grader makes of a careful file, and every answer, as a table;
        a file that answers from that table alone (and raises ValueError for anything else)
        passes the grading it was recorded from and fails one that draws its cases afresh."""
        class Recording(InProcess):
            table = {}

            def ask(self, call, *args):
                answer = super().ask(call, *args)
                if call != "import":
                    self.table[json.dumps([call, list(args)])] = answer
                return answer

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", Recording):
            paths = write_sources(tmp, {"careful": (LEARNER, {})})
            self.assertTrue(grade_lab06.grade(paths["careful"], seed=SEED)[1])
            table = textwrap.dedent('''
                import json
                TABLE = json.loads(%r)


                def answer(name, args):
                    found = TABLE.get(json.dumps([name, args]))
                    if found is None or "value" not in found:
                        raise ValueError("not in the table")
                    return found["value"]


                def matmul(left, right):
                    return answer("matmul", [left, right])


                def masked_softmax(scores, allowed):
                    return answer("masked_softmax", [scores, allowed])


                def attention(Q, K, V, allowed):
                    return answer("attention", [Q, K, V, allowed])
            ''') % json.dumps(Recording.table)
            os.mkdir(os.path.join(tmp, "table"))
            paths = write_sources(os.path.join(tmp, "table"), {"table": (table, {})})
            same, other = (grade_lab06.grade(paths["table"], seed=seed) for seed in (SEED, 1))
        self.assertTrue(same[1], "\n".join(same[0]))
        self.assertFalse(other[1])
        self.assertIn("drawn afresh with seed 1 (--seed 1 draws it again)", first_fail(other[0]))

    def test_a_name_that_would_shadow_the_standard_library_is_refused_by_scaffold_and_grade(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("json.py", "queue.py", "random.py"):
                path = os.path.join(tmp, name)
                with self.subTest(name=name):
                    self.assertOneLineError(run_script("perturb_attention.py", "--scaffold",
                                                       path), "would find it before the "
                                                              "standard library's")
                    self.assertFalse(os.path.exists(path))
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(LEARNER)
                    self.assertOneLineError(run_script("perturb_attention.py", "--grade", path),
                                            f"cannot grade {path}: `import {name[:-3]}` would "
                                            f"find it before")
        for name in sorted(sys.stdlib_module_names)[::40]:
            self.assertIn("the standard library's", shadowed(name + ".py"))
        self.assertIsNone(shadowed("json.txt"))

    def test_a_name_of_the_projects_own_shadows_nothing_and_is_written_and_graded(self):
        """The README writes tiny_attention.py in the top folder and grades it there, beside the
        project's own files: with the learner's file among them (as listed here), a name the
        project or the learner uses is no standard-library module, and is written and graded."""
        real_listdir = os.listdir

        def with_the_learners_file(path="."):
            names = real_listdir(path)
            same = os.path.realpath(path) == os.path.realpath(HERE)
            return names + ["tiny_attention.py"] if same else names

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch("os.listdir", with_the_learners_file):
            for name in ("tiny_attention.py", "attention.py", "lab06.py", "common.py"):
                with self.subTest(name=name):
                    self.assertIsNone(shadowed(os.path.join(HERE, name)))
                    path = os.path.join(tmp, name)
                    done = run_script("perturb_attention.py", "--scaffold", path)
                    self.assertEqual((done.returncode, done.stderr), (0, ""))
            with open(os.path.join(tmp, "attention.py"), "w", encoding="utf-8") as f:
                f.write(LEARNER)
            done = run_script("perturb_attention.py", "--grade", os.path.join(tmp, "attention.py"))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def test_without_prctl_the_report_says_only_the_process_group_is_stopped(self):
        class GroupOnly(InProcess):
            mode = "group"

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", GroupOnly):
            paths = write_sources(tmp, {"careful": (LEARNER, {})})
            lines, passed = grade_lab06.grade(paths["careful"], seed=SEED)
        self.assertTrue(passed)
        self.assertIn("note: this system has no prctl(PR_SET_CHILD_SUBREAPER): a process the "
                      "file started in a session of its own may outlive the grading",
                      logical(lines))

    def test_a_valueerror_subclass_is_a_valueerror(self):
        lines, passed = self.graded["a ValueError subclass"]
        self.assertTrue(passed, "\n".join(lines))

    def test_a_file_that_imports_more_of_the_standard_library_passes(self):
        lines, passed = self.graded["the standard library at large"]
        self.assertTrue(passed, "\n".join(lines))

    def test_in_the_projects_folder_a_file_imports_its_own_module_but_none_of_the_projects(self):
        """Part 3 writes tiny_attention.py in the top folder: beside it, a module of the learner's
        is imported, and one of the project's files (those project_files lists, as a download's
        list of shipped files would: not the learner's) fails the file that imports it."""
        with folder_copy("attention.py") as copy, mock.patch.object(
                safe_io, "project_files", lambda root=None: {"attention.py"}):
            for name, source in (("mine.py", LEARNER),
                                 ("tiny_attention.py", "from mine import matmul\n"),
                                 ("cheat.py", LEARNER + "from attention import matmul\n")):
                with open(os.path.join(copy, name), "w", encoding="utf-8") as f:
                    f.write(source)
            process = LearnerProcess(os.path.join(copy, "tiny_attention.py"), 2, 5)
            try:
                learner = Learner(process, "tiny_attention.py")
                self.assertIsNone(learner.load())
                self.assertEqual(learner.call("matmul", [[1.0]], [[2.0]]).value, [[2.0]])
            finally:
                process.stop()
            lines, passed = grade_lab06.grade(os.path.join(copy, "cheat.py"))
        self.assertFalse(passed)
        self.assertIn(f"FAIL  importing cheat.py: it opened {os.path.join(copy, 'attention.py')}, "
                      f"one of the project's own files and folders: the answers must be the "
                      f"file's own", first_fail(lines))

    def test_the_runner_watches_the_projects_files_and_folders_and_those_it_makes_for_itself(self):
        with folder_copy("attention.py") as copy, mock.patch.object(
                safe_io, "project_files", lambda root=None: {"attention.py", "tiny_attention.py"}):
            for folder in ("__pycache__", ".git", os.path.join(".git", "objects")):
                os.mkdir(os.path.join(copy, folder))
            inode = {name: (os.stat(os.path.join(copy, name)).st_dev,
                            os.stat(os.path.join(copy, name)).st_ino)
                     for name in ("attention.py", "", "__pycache__", ".git", ".git/objects")}
            with open(os.path.join(copy, "tiny_attention.py"), "w", encoding="utf-8") as f:
                f.write(LEARNER)
            files, folders = project_inodes(os.path.join(copy, "tiny_attention.py"))
        self.assertEqual(files, {inode["attention.py"], inode[""]})     # not the learner's file
        self.assertEqual(folders, {inode["__pycache__"], inode[".git"], inode[".git/objects"]})

    def test_the_runners_watch_looks_up_no_name_when_it_runs(self):
        """Every name the hook uses is bound when it is made: patching builtins (str, type),
        os or the runner's module changes nothing it does."""
        hook = next(code for code in grade_lab06_runner.watch.__code__.co_consts
                    if getattr(code, "co_name", None) == "hook")
        self.assertEqual([step.argval for step in dis.get_instructions(hook)
                          if step.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF")], [])

    @unittest.skipUnless(os.path.isdir("/proc") and hasattr(os, "fork"), "needs /proc and fork")
    def test_what_a_file_leaves_after_stopping_its_warden_ends_with_the_grading(self):
        lines, passed = self.graded["a warden stopped, and a sleeper left"]
        count = len(lab_checks())
        self.assertFalse(passed)
        self.assertTrue(logical(lines)[-1].startswith(
            f"{count} of {count} checks pass; the file stopped its warden, so none counts"))
        with open(SLEEPER, encoding="utf-8") as f:
            sleeper = f"/proc/{int(f.read())}"
        for _ in range(100):      # a bound, not a timing: the grader has killed and reaped it
            if not os.path.exists(sleeper):
                break
            time.sleep(0.01)
        self.assertFalse(os.path.exists(sleeper), "the sleeper outlived the grading")

    def test_the_whole_grading_has_a_limit_of_its_own(self):
        lines, passed = self.graded["slow"]
        lines = logical(lines)
        self.assertFalse(passed)
        self.assertIn("the grading was stopped after 1 s in all, during matmul", lines[-2])
        self.assertIn("so the last", lines[-1])

    @unittest.skipUnless(hasattr(os, "mkfifo") and hasattr(os, "fork"), "needs a FIFO and fork")
    def test_what_the_file_starts_is_killed_with_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "alive")
            os.mkfifo(fifo)
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            self.addCleanup(os.close, reader)
            # A child that holds the FIFO open, and tells its parent once it does.
            source = LEARNER + textwrap.dedent(f'''
                import os, time
                ready, told = os.pipe()
                if os.fork() == 0:
                    alive = os.open({fifo!r}, os.O_WRONLY)
                    os.write(alive, b"x")
                    os.write(told, b"x")
                    time.sleep(30)
                    os._exit(0)
                os.read(ready, 1)
            ''')
            lines, passed = start_grading({"child": (source, {})})["child"].result()
            self.assertTrue(passed, "\n".join(lines))
            self.assertEqual(os.read(reader, 1), b"x")
            # Every writer gone means the end of the FIFO: the child was killed with the group.
            self.assertEqual(select.select([reader], [], [], 5)[0], [reader], "still alive")
            self.assertEqual(os.read(reader, 1), b"")

    @unittest.skipUnless(STOPPED, "needs a FIFO, fork and /proc")
    def test_no_process_of_the_file_outlives_a_grader_stopped_by_sigterm_sighup_or_ctrl_c(self):
        results = STOPPED.result()
        for name, (ready, code, held) in results.items():
            with self.subTest(signal=name):
                self.assertEqual(ready, 2, "the escapees never held the FIFO")
                self.assertNotEqual(code, 0)
                self.assertFalse(held, "a process of the learner's file outlived the grader")

    def test_the_untouched_scaffold_fails_each_check_it_lists(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            self.assertEqual(run_script("perturb_attention.py", "--scaffold", path).returncode, 0)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            self.assertTrue(all(len(line) <= 100 for line in text.splitlines()))
            listed = []
            for line in text.split('"""')[1].splitlines():
                if line[:7].strip().rstrip(".").isdigit():
                    listed.append(line.split(". ", 1)[1])
                elif line.startswith(" " * 8) and listed:
                    listed[-1] += " " + line.strip()
            done = run_script("perturb_attention.py", "--grade", path)
        self.assertEqual((done.returncode, done.stderr), (1, ""))
        lines = logical(done.stdout.splitlines())
        self.assertEqual([line[6:].split(": not implemented yet")[0] for line in lines[:-1]],
                         listed)
        self.assertRegex(lines[-1], rf"^0 of {len(listed)} checks pass: fix the first FAIL and "
                                    rf"grade again \(--seed \d+ draws the same cases again\)$")
        self.assertEqual(len(listed), len(lab_checks()))

    def test_the_scaffold_never_overwrites_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mine.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("# my work\n")
            self.assertOneLineError(run_script("perturb_attention.py", "--scaffold", path),
                                    "already exists")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "# my work\n")

    def test_the_seed_a_report_names_is_taken_from_the_command_line(self):
        """The README's `--grade tiny_attention.py --seed 721319`: the report of a failing file
        names the seed it drew with, and a bad seed is one line."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            self.assertEqual(run_script("perturb_attention.py", "--scaffold", path).returncode, 0)
            done = run_script("perturb_attention.py", "--grade", path, "--seed", "721319")
            self.assertEqual((done.returncode, done.stderr), (1, ""))
            self.assertTrue(done.stdout.rstrip().endswith(
                "(--seed 721319 draws the same cases again)"), done.stdout[-200:])
            self.assertOneLineError(run_script("perturb_attention.py", "--grade", path, "--seed",
                                               "abc"), "--seed takes the number a grading's "
                                                       "report names, such as 721319, got 'abc'")

    def test_a_grader_without_standard_input_or_error_grades_a_correct_file_right(self):
        """Started with descriptor 0 or 2 closed, the grader's pipes once took that number and
        the warden, pointing 0, 1 and 2 at the null device, cut them: a correct file failed."""
        count = len(lab_checks())
        for fd, future in DESCRIPTOR_CLOSED.items():
            done = future.result()
            with self.subTest(closed=fd):
                self.assertEqual(done.returncode, 0, done.stdout[-300:])
                self.assertTrue(done.stdout.rstrip().endswith(f"{count} of {count} checks pass"))

    def test_scaffold_and_grade_say_a_closed_output_before_doing_anything(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            for flag in ("--scaffold", "--grade"):
                done = run_script("perturb_attention.py", flag, path, stdout_closed=True)
                self.assertOneLineError(done, "cannot print: standard output is closed")
                self.assertFalse(os.path.exists(path), flag)

    def test_a_file_of_any_name_is_graded_and_a_missing_one_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("notes.txt", "no_extension"):
                with self.subTest(name=name):
                    path = os.path.join(tmp, name)
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(LEARNER)
                    done = run_script("perturb_attention.py", "--grade", path)
                    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertOneLineError(run_script("perturb_attention.py", "--grade", tmp),
                                    "it is a folder, expected a Python file")
            self.assertOneLineError(run_script("perturb_attention.py", "--grade", os.devnull),
                                    "it is not a regular file, expected a Python file")
            self.assertOneLineError(
                run_script("perturb_attention.py", "--grade", os.path.join(tmp, "gone.py")),
                "no such file (write one with --scaffold")

    def test_the_main_part_does_not_run_and_printing_reaches_no_one(self):
        noisy = ('print("40 of 40 checks pass")\n'
                 'if __name__ == "__main__":\n    raise SystemExit(9)\n')
        done = self.grade_source(LEARNER + noisy)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertEqual(done.stdout.count("checks pass"), 1)

    def test_grade_takes_a_head_and_changes_and_names_the_first_mistake(self):
        post_softmax = mutant(MUTANTS["post-softmax masking"][0])
        with tempfile.TemporaryDirectory() as tmp:
            head = os.path.join(tmp, "head.json")
            with open(head, "w", encoding="utf-8") as f:
                f.write('{"X": [[1, 0], [0, 1], [1, 1], [0.5, -1]], "WQ": [[1, 0], [0, 1]], '
                        '"WK": [[1, 0], [0, 1]], "WV": [[2, 0], [0, 4]]}')
            good = self.grade_source(LEARNER, "--head", head, "--scale-key", "4=2",
                                     "--block", "4,1")
            bad = self.grade_source(post_softmax, "--scale-key", "3=2")
        self.assertEqual(good.returncode, 0, good.stdout)
        self.assertIn("PASS  after k₄ := 2·k₄; 4 ↛ 1: weights, exactly 0.0 where blocked",
                      good.stdout)
        self.assertTrue(good.stdout.endswith("\n11 of 11 checks pass\n"), good.stdout)
        self.assertEqual(bad.returncode, 1)
        self.assertIn("FAIL  after k₃ := 2·k₃: weights, exactly 0.0 where blocked: weights "
                      "row 1, column 1: expected 1, got 0.2857142857 (2/7); the mistake named "
                      "above", logical(bad.stdout.splitlines()))
        self.assertEqual(first_fail(bad.stdout.splitlines()),
                         "FAIL  baseline: weights, exactly 0.0 where blocked: weights row 1, "
                         "column 1: expected 1, got 0.4 (2/5); this looks like: the mask is "
                         "applied after the softmax and the rows are not renormalised (they sum "
                         "to less than 1): softmax over the allowed sources only")

    def test_grade_refuses_what_it_cannot_use_with_exit_2(self):
        for args, fragment in (
                (("--table",), "drop --table"), (("--bug", "post-softmax"), "drop --bug"),
                (("--offset-scores", "3=1000"), "drop --offset-scores"),
                (("--set-weights", "3=0,0,1"), "drop --set-weights"),
                (("--scaffold", "x.py"), "--scaffold and --grade are two steps"),
                (("--check",), "--write and --check work on the recorded file alone")):
            with self.subTest(args=args):
                done = run_script("perturb_attention.py", "--grade", "tiny_attention.py", *args)
                self.assertOneLineError(done, fragment)
                self.assertEqual(done.returncode, 2)

    def test_what_came_in_the_wrong_shape_is_named(self):
        want = [[1.0, 0.0], [0.5, 0.5]]
        for got, message in (
                ("<NoneType>", "attention returned None: does it end with return {...}?"),
                ({"scores": []}, "attention's dict has no masked_scores, weights, output (it has "
                                 "scores)"),
                ([], "weights: expected a list of 2 rows, got []"),
                ([[1.0, 0.0], "<tuple>"], "weights row 2: expected a list of 2 numbers, got a "
                                          "tuple"),
                ([[1.0, 0.0], [0.5, "<bool True>"]],
                 "weights row 2, column 2: expected a float or an int, got a bool True: a number "
                 "must be a float or an int itself, not a subclass or a bool"),
                ([[1.0, 1e-300], [0.5, 0.5]], "weights row 1, column 2 is blocked: expected "
                                              "exactly 0, got 1e-300")):
            with self.subTest(got=got):
                problem = dict_problem(got) if not isinstance(got, list) else \
                    mismatch(got, want, "weights", [[False, True], [False, False]],
                                         0.0)
                self.assertEqual(problem, message)

    def test_the_limits_in_use_are_at_most_30_s_in_all_and_the_readme_quotes_them(self):
        self.assertLessEqual(TOTAL_LIMIT, 30)
        self.assertLess(CALL_LIMIT, TOTAL_LIMIT)
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn(f"The grader runs the {len(lab_checks())} checks the scaffold "
                      f"lists", readme)
        self.assertIn(f"with at most {CALL_LIMIT:g} s for each call (importing it is "
                      f"one) and {TOTAL_LIMIT:g} s in all", readme)


if __name__ == "__main__":
    unittest.main()

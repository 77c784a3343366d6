"""Lab 06's grader on the mistakes learners make: each of MUTANTS changes LEARNER in one place,
and its first FAIL names the mistake; the course's reports fail exactly the text's FAIL lines;
every shape of answer gets a FAIL that says what came; a file that answers from a table of the
grader's inputs fails the cases drawn afresh.

The mutants attack nothing, so they are graded in this process (InProcess), by the same runner's
functions.
"""

import json
import os
import sys
import tempfile
import textwrap
import unittest
from unittest import mock
from xml.etree import ElementTree

from lab06 import grader as grade_lab06
from lab06 import runner as grade_lab06_runner
from lab06.compare import dict_problem, mismatch
from lab06.grading_checks import lab_checks
from lab06.process import Reply
from lab06.report import gradescope, junit, report
from tests.helpers import MessageAssertions
from tests.learner_files import (LEARNER, EveryReport, InProcess, first_fail, grade_source,
                                  logical, write_sources)

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
    # True read as blocked, as nn.MultiheadAttention reads it, and −1e9 for −∞: two at once
    "polarity inverted, with −1e9 for a blocked score": (
        [(MASKED, "masked_scores = [[-1e9 if ok else s for s, ok in zip(row, oks)]"),
         (WEIGHTS, ALL_SOURCES)],
        "baseline masked_scores: −∞ where blocked: masked_scores row 1, column 1: expected "
        "0.6931471806, got -1000000000; this looks like: the mask's polarity is inverted: "
        "allowed[i][j] True means query i MAY read source j; and a blocked score stood in for by "
        "a finite number (-1000000000) instead of −∞"),
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
    # a mistake the whole answer shows, named at the first FAIL whichever part shows it first
    "K·Qᵀ, the scores transposed": (
        [("matmul(Q, [list(c) for c in zip(*K)])", "matmul(K, [list(c) for c in zip(*Q)])")],
        "weights when a blocked (future) score is 1000 above the allowed one: weights row 2, "
        "column 1: expected 0, got 0.5 (1/2); this looks like: the scores are transposed"),
    "the scale after the softmax, the scores returned unscaled": (
        [(SCALED, "scores = [[s for s in row]"),
         (WEIGHTS, "weights = [[w / math.sqrt(d) for w in masked_softmax(row, oks)] "
                   "for row, oks in zip(masked_scores, allowed)]")],
        "baseline scores = Q·Kᵀ/√2, before the mask: scores row 1, column 1: expected "
        "0.6931471806, got 0.9802581435; this looks like: the scale is applied after the softmax"),
    "the first answer kept for every call": (
        [('"output": output}', '"output": output}\n\n\n_first = []\n_attention = attention\n\n\n'
                               'def attention(Q, K, V, allowed):\n'
                               '    _first.append(_attention(Q, K, V, allowed))\n'
                               '    return _first[0]')],
        "weights with allowed = [[T, F, T], [F, T, T], [T, T, F]]: weights row 1, column 1: "
        "expected 0.5 (1/2), got 1; this looks like: attention returns the same answer whatever "
        "it is given"),
    "a log-sum-exp softmax, which loses digits near −1e10": (
        [("total = sum(exps)\n    return [e / total for e in exps]",
          "lse = top + math.log(sum(exps))\n"
          "    return [math.exp(s - lse) if ok else 0.0 for s, ok in zip(scores, allowed)]")],
        "weights when every score is near −1e10: a blocked source still gets none: weights row 2, "
        "column 1: expected 0.5 (1/2), got 0.4999997606; this looks like: the weights lose digits "
        "near −1e10: the difference of two numbers near 1e10"),
    "an answer of 200,000 rows": (
        [("def matmul(left, right):\n",
          "def matmul(left, right):\n    if len(left) == 2 and len(right) == 3:\n"
          "        return [[0.0, 0.0]] * 200_000\n")],
        "matmul: a (2, 3)·(3, 2) product, then one drawn afresh: the product: an answer of "
        "200,000 rows for a (2, 2) matrix"),
    "a softmax mask of another length accepted": (
        [("if not scores or len(scores) != len(allowed) or not any(allowed):",
          "if not scores or not any(allowed):")],
        "masked_softmax rejects a mask of another length: expected ValueError for scores and a "
        "mask of different lengths (3 scores, 1 mask entry), but it returned"),
}


def mutant(changes):
    source = LEARNER
    for line, instead in changes:
        assert source.count(line) == 1, line
        source = source.replace(line, instead)
    return source


class Mistakes(EveryReport, MessageAssertions, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        """Every mutant graded once, in this process, on the checks of SEED drawn once."""
        own = {name: (mutant(changes), {}) for name, (changes, _) in MUTANTS.items()}
        own["a ValueError subclass"] = ("class ShapeError(ValueError):\n    pass\n" + (
            LEARNER.replace('raise ValueError("the shapes do not fit")',
                            'raise ShapeError("the shapes do not fit")')), {})
        own["a syntax error in a module of its own"] = ("from my_softmax import masked_softmax\n"
                                                        + LEARNER, {})
        own["a key of its own that differs each run"] = ("import time\n" + LEARNER.replace(
            'return {"scores": scores,',
            'return {"seconds": time.perf_counter(), "scores": scores,'), {})
        checks = lab_checks(SEED)
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess), \
                mock.patch.object(grade_lab06, "lab_checks", lambda seed: checks):
            paths = write_sources(tmp, own)
            helper = os.path.join(os.path.dirname(paths["a syntax error in a module of its own"]),
                                  "my_softmax.py")
            with open(helper, "w", encoding="utf-8") as f:
                f.write("import math\n\n\ndef masked_softmax(scores, allowed)\n    pass\n")
            cls.gradings = {name: grade_lab06.grading(paths[name], seed=SEED) for name in own}
        cls.graded = {name: report(found) for name, found in cls.gradings.items()}

    def test_each_known_mistake_is_named_on_its_first_fail(self):
        for name in MUTANTS:
            lines, passed = self.graded[name]
            with self.subTest(mistake=name):
                self.assertFalse(passed)
                self.assertIn(MUTANTS[name][1], first_fail(lines), "\n".join(lines))

    def test_a_key_beyond_the_four_parts_is_the_files_own_and_changes_no_verdict(self):
        lines, passed = self.graded["a key of its own that differs each run"]
        self.assertTrue(passed, "\n".join(lines))

    def test_a_syntax_error_in_a_module_the_file_imports_names_that_module_and_line(self):
        lines, passed = self.graded["a syntax error in a module of its own"]
        self.assertFalse(passed)
        self.assertEqual(first_fail(lines), "FAIL  importing tiny_attention.py: syntax error in "
                                            "my_softmax.py (line 4): expected ':'")

    def test_the_course_reports_fail_exactly_the_text_reports_fail_lines(self):
        """Gradescope's failed tests and JUnit's failures are the text report's FAIL lines, in
        order (so the first names the mistake), one test a check; the score counts those that
        passed: every check for a careful file."""
        count = len(lab_checks())
        for name in [*MUTANTS, "a ValueError subclass"]:
            lines, passed = self.graded[name]
            fails = [line for line in logical(lines) if line.startswith("FAIL")]
            results = json.loads(gradescope(self.gradings[name], 1.5))
            suite = ElementTree.fromstring(junit(self.gradings[name], 1.5))
            with self.subTest(file=name):
                self.assertEqual([f"FAIL  {test['name']}: {test['output']}"
                                  for test in results["tests"] if test["status"] == "failed"],
                                 fails)
                self.assertEqual([f"FAIL  {case.get('name')}: {case.find('failure').get('message')}"
                                  for case in suite.iter("testcase")
                                  if case.find("failure") is not None], fails)
                self.assertEqual((len(results["tests"]), suite.get("tests"), suite.get("failures")),
                                 (count, str(count), str(len(fails))))
                self.assertEqual(results["score"], count - len(fails))
                self.assertEqual(results["score"] == count, passed)
        drawn = [test["name"] for test in results["tests"]
                 if test["visibility"] == "after_due_date"]
        self.assertEqual(len(drawn), 3)
        self.assertTrue(all("drawn afresh" in name for name in drawn), drawn)

    def test_a_file_that_cannot_be_imported_scores_0_each_test_saying_why(self):
        results = json.loads(gradescope(self.gradings["a syntax error in a module of its own"], 1))
        self.assertEqual(results["score"], 0)
        self.assertEqual({test["output"] for test in results["tests"]},
                         {"did not run: the grading stopped at importing tiny_attention.py: syntax "
                          "error in my_softmax.py (line 4): expected ':'"})

    def test_a_valueerror_subclass_is_a_valueerror(self):
        lines, passed = self.graded["a ValueError subclass"]
        self.assertTrue(passed, "\n".join(lines))

    def test_grade_takes_a_head_and_changes_and_names_the_first_mistake(self):
        """From the command line, each file graded in this process (InProcess)."""
        post_softmax = mutant(MUTANTS["post-softmax masking"][0])
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess):
            head = os.path.join(tmp, "head.json")
            with open(head, "w", encoding="utf-8") as f:
                f.write('{"X": [[1, 0], [0, 1], [1, 1], [0.5, -1]], "WQ": [[1, 0], [0, 1]], '
                        '"WK": [[1, 0], [0, 1]], "WV": [[2, 0], [0, 4]]}')
            good = grade_source(LEARNER, "--head", head, "--scale-key", "4=2",
                                     "--block", "4,1")
            bad = grade_source(post_softmax, "--scale-key", "3=2")
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

    def test_every_shape_of_answer_gets_a_fail_that_says_what_came(self):
        """Each check, handed answers of every shape (an int, a float, None, a bool, a string,
        rows that are ints, dicts, empty lists, NaN), says what is wrong and raises nothing."""
        class Shapes:
            kept = {}           # no earlier answers: each shape is judged as it comes

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

    def test_a_call_that_keeps_its_arguments_edits_none_and_one_that_flips_a_sign_edits_it(self):
        """The runner compares each argument before and after a call to its last bit: a
        reference kept to an argument changes no bit, and 0.0 made −0.0 is an edit."""
        module = type(sys)("kept")
        exec("KEPT = []\n\n\ndef keep(rows, row):\n    KEPT.extend([rows, rows[0], row[0]])\n"
             "    return 1\n\n\ndef flip(rows, row):\n    row[0] = -row[0]\n    return 1\n",
             module.__dict__)
        for name, edited in (("keep", []), ("flip", [1])):
            with self.subTest(function=name):
                reply = grade_lab06_runner.call(module, name, [[[0.5, 1.0]], [0.0, 2.0]])
                self.assertEqual(reply, {"value": 1, "edited": edited})

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


if __name__ == "__main__":
    unittest.main()

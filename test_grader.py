"""Lab 06's scaffold and grader: the scaffold, a correct file, and one mutant per known mistake.

Each mutant is a learner's tiny_attention.py with one mistake learners really make, written out in
LEARNER below and changed in one place; the grader must fail it and name that mistake.
"""

import os
import tempfile
import textwrap
import unittest
from unittest import mock

import grade_lab06
import lab06 as lab
from helpers_for_tests import MessageAssertions, run_main, run_script

# A learner's correct file, written the plain way. Each mutant replaces one of its lines.
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

# mistake: ([(a line of LEARNER, what the mutant has instead), ...], the diagnosis it must get)
MUTANTS = {
    "post-softmax masking": (
        [(WEIGHTS, "weights = [[w if ok else 0.0 for w, ok in zip(masked_softmax(row, [True] * "
                   "len(row)), oks)] for row, oks in zip(scores, allowed)]")],
        "the mask is applied after the softmax and the rows are not renormalised"),
    "no scale": ([(SCALED, "scores = [[s for s in row]")],
                 "the scores are not scaled: divide Q·Kᵀ by √d"),
    "divided by d": ([(SCALED, "scores = [[s / d for s in row]")],
                     "the scores are divided by d, not √d"),
    "polarity inverted": (
        [(MASKED, "masked_scores = [[-math.inf if ok else s for s, ok in zip(row, oks)]"),
         (WEIGHTS, "weights = [masked_softmax(row, [not ok for ok in oks]) "
                   "for row, oks in zip(scores, allowed)]")],
        "the mask's polarity is inverted"),
    "softmax over columns": (
        [(WEIGHTS, "weights = [list(r) for r in zip(*[masked_softmax(list(col), "
                   "[s != -math.inf for s in col]) for col in zip(*masked_scores)])]")],
        "the softmax is taken over each column"),
    "zero-score bug": (
        [(MASKED, "masked_scores = [[s if ok else 0.0 for s, ok in zip(row, oks)]"),
         (WEIGHTS, ALL_SOURCES)],
        "blocked scores are set to 0.0 instead of −∞"),
    "finite sentinel": (
        [(MASKED, "masked_scores = [[s if ok else -1e9 for s, ok in zip(row, oks)]"),
         (WEIGHTS, ALL_SOURCES)],
        "a blocked score stood in for by a finite number (such as −1e9)"),
    "inputs edited in place": (
        [("d = len(Q[0])", "d = len(Q[0])\n    for row in Q:\n        row[:] = [x / math.sqrt(d) "
                           "for x in row]"),
         (SCALED, "scores = [[s for s in row]")],
        "the inputs were edited in place (Q changed)"),
}


def mutant(changes):
    source = LEARNER
    for line, instead in changes:
        assert source.count(line) == 1, line
        source = source.replace(line, instead)
    return source


class Grader(MessageAssertions, unittest.TestCase):

    def grade_source(self, source):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            return run_script("perturb_attention.py", "--grade", path)

    def test_a_correct_file_passes_every_check_and_exits_0(self):
        done = self.grade_source(LEARNER)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertNotIn("FAIL", done.stdout)
        self.assertRegex(done.stdout, r"\n(\d+) of \1 checks pass\n$")

    def test_our_core_in_the_scaffolds_three_functions_passes_every_check(self):
        source = textwrap.dedent('''
            from attention import attend, masked_softmax, matmul


            def attention(Q, K, V, allowed):
                cache = attend(Q, K, V, allowed)
                nothing_blocked = [[True] * len(K) for _ in Q]
                return {"scores": attend(Q, K, V, nothing_blocked)["scores"],
                        "masked_scores": cache["scores"], "weights": cache["weights"],
                        "output": cache["mixed"]}
        ''')
        done = self.grade_source(source)
        self.assertEqual(done.returncode, 0, done.stdout)

    def test_each_known_mistake_gets_its_diagnosis(self):
        for name, (changes, diagnosis) in MUTANTS.items():
            with self.subTest(mistake=name):
                done = self.grade_source(mutant(changes))
                self.assertEqual(done.returncode, 1, done.stdout)
                self.assertIn(diagnosis, done.stdout)

    def test_the_untouched_scaffold_is_not_implemented_yet_everywhere(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            self.assertEqual(run_script("perturb_attention.py", "--scaffold", path).returncode, 0)
            done = run_script("perturb_attention.py", "--grade", path)
        self.assertEqual(done.returncode, 1)
        self.assertEqual(done.stderr, "")
        lines = done.stdout.splitlines()[:-1]
        self.assertTrue(lines and all(line.startswith("FAIL") and "not implemented yet" in line
                                      for line in lines), done.stdout)

    def test_the_scaffold_never_overwrites_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mine.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("# my work\n")
            self.assertOneLineError(run_script("perturb_attention.py", "--scaffold", path), "already exists")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "# my work\n")

    def test_a_syntax_error_is_one_line_naming_the_file_and_line(self):
        self.assertOneLineError(self.grade_source("def matmul(left, right)\n    pass\n"),
                                "tiny_attention.py, line 1: syntax error")

    def test_an_import_error_is_one_line_naming_the_file_and_line(self):
        self.assertOneLineError(
            self.grade_source("import math\nimport numpyy\n"),
            "tiny_attention.py, line 2: importing it raised ModuleNotFoundError")

    def test_a_loop_that_never_ends_is_stopped(self):
        source = mutant([("    check(Q, K, V, allowed)\n", "    while True:\n        pass\n")])
        with mock.patch.object(grade_lab06, "TIME_LIMIT", 0.05):   # 3 s in use; 17 calls here
            done = self.grade_source(source)
        self.assertEqual(done.returncode, 1)
        self.assertIn("attention was stopped after 0.05 s: does a loop never end?", done.stdout)

    def test_the_main_part_does_not_run_when_graded(self):
        main_part = '\nif __name__ == "__main__":\n    raise SystemExit(9)\n'
        done = self.grade_source(LEARNER + main_part)
        self.assertEqual(done.returncode, 0, done.stdout)


if __name__ == "__main__":
    unittest.main()

"""Lab 06's predictions sheet and submission: `--predict FILE` writes a blank sheet or checks one
exactly, never printing an answer; `--predict FILE --submission S` writes the learner's answers
beside the program's and keeps what the learner wrote. Every expected answer here comes from
lab06.lab's results (sheet.answers), none is typed in."""

import itertools
import math
import os
import platform
import re
import tempfile
import unittest
from unittest import mock

from lab06 import sheet, submission
from lab06.exact import answer_text, exact_form
from tests.helpers import HERE, run_script


def decimal_text(form):
    """An exact value written another way than the program writes it: a terminating fraction as
    its decimal (3/2 as 1.5), a multiple of ln 2 or c with a * (1*ln2, 2*c), −∞ as -inf."""
    if form == -math.inf:
        return "-inf"
    fraction, unit = form
    denominator = fraction.denominator
    while denominator % 2 == 0 or denominator % 5 == 0:
        denominator //= 2 if denominator % 2 == 0 else 5
    text = str(float(fraction)) if denominator == 1 else str(fraction)
    return f"{text}*{unit.replace(' ', '')}" if unit else text


def filled(answers, changed=None, style=None):
    """A sheet's text with every item answered as the program writes it, or as style writes each
    entry (style(value, units)); changed: {id: answer} in place of some."""
    def write(value, units):
        if isinstance(value, list):
            return "[" + ", ".join(write(entry, units) for entry in value) + "]"
        return style(value, units) if style and isinstance(value, float) else \
            answer_text(value, units)
    changed = changed or {}
    return "".join(f"{key}: {changed.get(key, write(answers[key], units))}\n"
                   for key, _, units in sheet.ITEMS)


class Folder(unittest.TestCase):
    """A temporary folder for a sheet, and the lab's answers; no test of its own."""

    @classmethod
    def setUpClass(cls):
        cls.answers = sheet.answers()

    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        self.path = os.path.join(self.folder, "predictions.txt")

    def predict(self, text, *args):
        """Write text as the sheet (unless None), then run --predict on it with args."""
        if text is not None:
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(text)
        return run_script("perturb_attention.py", "--predict", self.path, *args, cwd=self.folder)

    def line(self, done, key):
        """The checker's line of one item."""
        found = [line for line in done.stdout.splitlines() if line.startswith(f"{key}: ")]
        self.assertEqual(len(found), 1, done.stdout)
        return found[0]


class Sheet(Folder):

    def test_a_sheet_filled_right_in_mixed_exact_forms_passes(self):
        turn = itertools.count()     # every other entry as the program writes it, or as decimals

        def mixed(value, units):
            form = exact_form(value, units)
            return decimal_text(form) if next(turn) % 2 else answer_text(value, units)
        text = filled(self.answers, style=mixed)
        for form in ("3/2", "1.5", "2 ln 2", "1.0*ln2", "−∞", "-inf", "[c, ", "1.0*c"):
            self.assertIn(form, text)
        done = self.predict(text)
        self.assertEqual((done.returncode, done.stderr), (0, ""), done.stdout)
        count = len(sheet.ITEMS)
        self.assertEqual(done.stdout.splitlines()[-1],
                         f"{count} of {count} right, 0 wrong, 0 that cannot be read, "
                         f"0 not yet predicted")

    def test_wrong_and_rounded_answers_are_named_by_id_without_their_right_value(self):
        a, z = self.answers["1.5 A"], self.answers["1.6 Z"]
        wrong_a = [row[:] for row in a]
        wrong_a[2][1] = a[1][0]                             # 1/3 where the lab has 1/4
        rounded_z = answer_text(z).replace(answer_text(z[1][0]), f"{z[1][0]:.4f}", 1)
        zero_based = [p - 1 for p in self.answers["2.2 A rows changed"]]
        done = self.predict(filled(self.answers, {
            "1.5 A": answer_text(wrong_a), "1.6 Z": rounded_z, "2.2 A rows changed":
            str(zero_based), "1.S": "[[0.6931, 0, ln 2], [0, ln 2, ln 2], [ln 2, ln 2, 2 ln 2]]"}))
        self.assertEqual(done.returncode, 1)
        self.assertEqual(self.line(done, "1.5 A"), "1.5 A: WRONG, row 3, entry 2 is not right")
        for key, place in (("1.6 Z", "row 2, entry 1"), ("1.S", "row 1, entry 1")):
            self.assertEqual(self.line(done, key), f"{key}: WRONG, {place} is a rounded "
                                                   f"decimal: write it exactly (a fraction, or "
                                                   f"in ln 2)")
        self.assertIn("WRONG", self.line(done, "2.2 A rows changed"))
        self.assertIn("(positions count from 1)", self.line(done, "2.2 A rows changed"))
        for key in ("1.5 A", "1.6 Z", "2.2 A rows changed", "1.S"):
            self.assertNotIn(answer_text(self.answers[key], ["ln 2"]), done.stdout)
        for entry in (a[2][1], z[1][0]):
            self.assertNotIn(answer_text(entry), done.stdout)
        self.assertTrue(done.stdout.splitlines()[-1].startswith(
            f"{len(sheet.ITEMS) - 4} of {len(sheet.ITEMS)} right, 4 wrong"), done.stdout)

    def test_a_decimal_near_the_answer_but_no_rounding_of_it_is_not_called_rounded(self):
        """A learner's sheet: 0.41 where the lab has 2/5, and 0.4 or 0.34 for 1/3, were called
        "a rounded decimal", which told where the answer lay; they are wrong, as any other."""
        a = self.answers["1.5 A"]
        for written in ("0.4", "0.34"):
            near = answer_text(a).replace(answer_text(a[1][0]), written, 1)
            done = self.predict(filled(self.answers, {"1.5 A": near}))
            self.assertEqual(self.line(done, "1.5 A"), "1.5 A: WRONG, row 2, entry 1 is not right")
        sums = self.answers["1.bug row sums"]
        done = self.predict(filled(self.answers, {"1.bug row sums": answer_text(sums).replace(
            answer_text(sums[0]), f"{float(sums[0]) + 0.01:.2f}", 1)}))
        self.assertEqual(self.line(done, "1.bug row sums"),
                         "1.bug row sums: WRONG, entry 1 is not right")

    def test_ln_with_brackets_is_said_to_be_written_without_them(self):
        done = self.predict(filled(self.answers, {"1.S": "[[ln(2), 0, ln 2], [0, ln 2, ln 2], "
                                                         "[ln 2, ln 2, 2 ln 2]]"}))
        self.assertIn("ln(…) is written without brackets here: ln 2, 2 ln 2",
                      self.line(done, "1.S"))

    def test_a_blank_answer_is_not_yet_predicted(self):
        done = self.predict(None)
        self.assertEqual(done.returncode, 0, done.stderr)
        done = self.predict(None)
        self.assertEqual(done.returncode, 1)
        self.assertEqual([line for line in done.stdout.splitlines()[:-1]],
                         [f"{key}: not yet" for key, _, _ in sheet.ITEMS])
        self.assertTrue(done.stdout.endswith(f"{len(sheet.ITEMS)} not yet predicted\n"))

    def test_an_answer_that_cannot_be_read_says_what_it_expected(self):
        done = self.predict("1.5 A: [[1, 0, 0], [1/3\n2.1 z3: 1.5, 2\n2.1 A rows changed: none\n"
                            "2.1 Z rows changed: [2, 3]\n1.6 Z: [[2, 0], [2/3, x], [3/2, 3]]\n"
                            "1.5 a: [1]\n")
        self.assertEqual(done.returncode, 1)
        for key, expected in (("1.5 A", "expected a matrix [[a, b], [c, d]]"),
                              ("2.1 z3", "expected a vector [a, b]"),
                              ("2.1 A rows changed", "expected positions counted from 1"),
                              ("1.6 Z", "row 2, entry 2: expected an exact number such as 5/4")):
            self.assertIn(f"{key}: cannot read", self.line(done, key))
            self.assertIn(expected, self.line(done, key))
        self.assertEqual(self.line(done, "2.1 Z rows changed"), "2.1 Z rows changed: right")
        self.assertIn("line 6: '1.5 a' is no item of the sheet", done.stdout)

    def test_the_sheet_is_never_overwritten(self):
        self.predict(None)
        with open(self.path, encoding="utf-8") as f:
            written = f.read()
        self.assertIn("# Numbers exact", written)
        self.assertIn("\n1.5 A:\n", written)
        for args in ((), ("--submission", self.path)):
            done = self.predict(written.replace("1.5 A:", "1.5 A: [1]"), *args)
            self.assertNotEqual(done.returncode, 0)
            with open(self.path, encoding="utf-8") as f:
                self.assertEqual(f.read(), written.replace("1.5 A:", "1.5 A: [1]"))
        done = run_script("perturb_attention.py", "--predict", "README.md", cwd=HERE)
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        self.assertIn("one of this folder's own files", done.stderr)

    def test_an_unusable_command_line_exits_2(self):
        for args in (("--predict", self.path, "--table"), ("--submission", "s.md"),
                     ("--predict", self.path, "--ablate-value", "2")):
            done = run_script("perturb_attention.py", *args, cwd=self.folder)
            self.assertEqual(done.returncode, 2, args)
            self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertFalse(os.path.exists(self.path))


class Submission(Folder):

    def submit(self, text):
        self.submission = os.path.join(self.folder, "submission.md")
        done = self.predict(text, "--submission", self.submission)
        with open(self.submission, encoding="utf-8") as f:
            return done, f.read()

    def test_the_submission_sets_the_learners_answers_beside_the_programs(self):
        answered = {"1.5 A": "[[1, 0, 0], [0.333, 2/3, 0], [1/4, 1/4, 1/2]]", "2.3 z3": "[2, 8/3]"}
        done, text = self.submit("".join(f"{key}: {answer}\n" for key, answer in answered.items()))
        self.assertEqual(done.stdout.splitlines()[-1], f"wrote {self.submission}")
        self.assertIn("| item | by hand | program output | agreement |", text)
        for key, answer in answered.items():
            program = answer_text(self.answers[key])
            self.assertRegex(text, re.escape(f"| {key} | {answer} | {program} | ")
                             + ("agree |" if answer == program else "differ: row 2, entry 1"))
        self.assertIn("| 1.6 Z |   | (predict it first) | not predicted |", text)   # no answer yet
        self.assertNotIn(answer_text(self.answers["1.6 Z"]), text)
        self.assertIn(f"Python {platform.python_version()}", text)
        self.assertIn(f"--predict {self.path} --submission {self.submission}", text)
        self.assertIn(f"No tiny_attention.py beside {self.path}", text)
        for n, question in enumerate(submission.PART_FOUR, 1):
            self.assertIn(f"\n### Question {n}: {question}\n", text)
        program = text.split(submission.START)[1].split(submission.END)[0]
        self.assertNotIn("Question 1", program)

    def test_written_again_it_keeps_the_learners_lines(self):
        _, text = self.submit("2.3 z3: [2, 8/3]\n")
        heading = f"### Question 1: {submission.PART_FOUR[0]}\n"
        mine = text.replace(heading, heading + "\nMy answer, in my words.\n| a | b |\n")
        with open(self.submission, "w", encoding="utf-8") as f:
            f.write("Name: a learner\n\n" + mine + "\nA last line of mine.\n")
        _, again = self.submit("2.3 z3: [3/2, 2]\n")
        self.assertIn("| 2.3 z3 | [3/2, 2] |", again)
        self.assertNotIn("| 2.3 z3 | [2, 8/3] |", again)
        for line in ("Name: a learner", "My answer, in my words.\n| a | b |",
                     "A last line of mine."):
            self.assertEqual(again.count(line), 1, line)
        self.assertEqual((again.count(submission.START), again.count(submission.END)), (1, 1))

    def test_a_file_without_the_programs_markers_is_never_replaced(self):
        self.submission = os.path.join(self.folder, "submission.md")
        with open(self.submission, "w", encoding="utf-8") as f:
            f.write("my own notes\n")
        done = self.predict("2.3 z3: [2, 8/3]\n", "--submission", self.submission)
        self.assertEqual(done.returncode, 1)
        self.assertIn("does not hold <!-- program: start -->", done.stderr)
        with open(self.submission, encoding="utf-8") as f:
            self.assertEqual(f.read(), "my own notes\n")

    def test_the_graders_verdict_and_command_are_in_the_submission(self):
        with open(os.path.join(self.folder, "tiny_attention.py"), "w", encoding="utf-8") as f:
            f.write("# the learner's file\n")
        report = (["PASS  matmul: Q = X·WQ", "1 of 1 checks pass"], True)
        with mock.patch("lab06.grader.grade", return_value=report) as grade:
            _, text = self.submit("")
        grade.assert_called_once_with(os.path.join(self.folder, "tiny_attention.py"))
        self.assertIn(f"--grade {os.path.join(self.folder, 'tiny_attention.py')}`: PASS, every "
                      f"check (exit 0)\n\n```\nPASS  matmul: Q = X·WQ\n1 of 1 checks pass\n```",
                      text)

    def test_question_5_is_the_readmes_own(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn(submission.PART_FOUR[4][0].lower() + submission.PART_FOUR[4][1:], readme)


if __name__ == "__main__":
    unittest.main()

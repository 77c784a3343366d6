"""Predict first: no door, README or scaffold shows an answer of Lab 06's Parts 1 and 2 before the
learner asks for it (--baseline, a change flag, --all, --json), and the lab's page hides its maps
until they are revealed (tests/test_explorer.py). The answers are lab06.sheet's, from lab06.lab."""

import json
import os
import re
import unittest

from lab06 import lab, sheet
from lab06.exact import answer_text
from lab06.scaffold import SCAFFOLD
from tests.helpers import HERE, MessageAssertions, run_script


def revealing(value):
    """The texts that would give an answer away: as the lab writes it (1/3, [3/2, 3]) and as
    Python prints its floats ([1.5, 3.0]); a lone small number or an empty list is no answer."""
    if not isinstance(value, list) or not value or all(
            isinstance(entry, list) and not entry for entry in value):
        return []
    texts = [answer_text(value)]
    if all(isinstance(entry, (int, float)) for entry in value):
        texts.append(str([round(float(entry), 10) for entry in value]))
    return texts


ANSWERS = [(key, text) for key, value in sheet.answers().items() for text in revealing(value)]


class NoAnswerBeforeItIsAskedFor(MessageAssertions, unittest.TestCase):

    def assertNoAnswer(self, text, where):
        for key, answer in ANSWERS:
            self.assertNotIn(answer, text, f"{where} shows {key}")
        self.assertNotRegex(text, r"\d/\d|\bln 2\b|(?<!Part )\b\d+\.\d", where)

    def test_the_bare_door_says_where_to_start_and_shows_no_answer(self):
        done = run_script("perturb_attention.py")
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertIn("--predict my-sheet.txt", done.stdout)
        self.assertNoAnswer(done.stdout, "perturb_attention.py")

    def test_table_alone_lists_each_intervention_and_the_command_that_runs_it(self):
        done = run_script("perturb_attention.py", "--table")
        self.assertNoAnswer(done.stdout.replace("[1, 0]", ""), "--table")   # q₃ := [1, 0] is asked
        record = lab.lab()["interventions"]
        for key, title in lab.TITLES.items():
            command = re.search(re.escape(title) + r"\n +python3 perturb_attention.py (.*)",
                                done.stdout)
            self.assertIsNotNone(command, title)
            flags = command.group(1).replace("--table", "--json").split()
            found = json.loads(run_script("perturb_attention.py", *flags).stdout)["intervention"]
            self.assertEqual(found["weights"], [[round(w, lab.DIGITS) for w in row]
                                                for row in record[key]["weights"]], key)

    def test_a_picture_of_the_labs_head_is_drawn_only_when_asked_for(self):
        for view in ("--svg", "--export"):
            with self.subTest(view=view):
                done = run_script("perturb_attention.py", view, "never-written.svg")
                self.assertOneLineError(done, f"{view} of the lab's head would show its answers: "
                                              f"add --baseline")

    def test_the_labs_readmes_and_scaffold_hold_no_answer(self):
        """answers.md holds them, for after predicting."""
        for name in ("README.md", os.path.join("lab06", "README.md"),
                     os.path.join("explorer", "README.md")):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                text = f.read()
            for key, answer in ANSWERS:
                self.assertNotIn(answer, text, f"{name} shows {key}")
        for key, answer in ANSWERS:
            self.assertNotIn(answer, SCAFFOLD, f"the scaffold shows {key}")


if __name__ == "__main__":
    unittest.main()

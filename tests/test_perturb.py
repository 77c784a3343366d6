"""Lab 06, checked against answers derived by hand.

Throughout: Q = X, K = c·X and c/√2 = ln 2, so S = ln 2 · X·Xᵀ = ln 2 · [[1, 0, 1],
[0, 1, 1], [1, 1, 2]] and exp(S) is made of powers of 2: every weight is a ratio of small integers.
V = [[2, 0], [0, 4], [2, 4]]. Rows are 0-based in code; the lab's 1-based names (z₃, v₂) are
given beside them.
"""

import math
import os
import shutil
import tempfile
import unittest
from unittest import mock
from fractions import Fraction as F

from common.golden import rounded, to_json
from lab06 import lab
from lab06 import attend, masked_softmax
from tests.helpers import run_script

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder
# The float computation of a ratio of powers of 2 is off by a few ulps at most; 1e-9 is the lab's
# bound.
TOLERANCE = 1e-9


class Lab06(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.lab = lab.lab()

    def assertWithinTolerance(self, actual, expected, what):
        """actual (floats, nested lists) equals expected (Fractions) within TOLERANCE."""
        if isinstance(expected, list):
            self.assertEqual(len(actual), len(expected), what)
            for n, (a, e) in enumerate(zip(actual, expected)):
                self.assertWithinTolerance(a, e, f"{what}[{n}]")
        else:
            self.assertLess(
                abs(F(actual) - F(expected)), TOLERANCE, f"{what}: {actual} != {expected}"
            )

    def test_recorded_trace(self):
        with open(os.path.join(HERE, "lab06", "perturb-trace.json"), encoding="utf-8") as f:
            self.assertEqual(
                f.read(), to_json(rounded(lab.lab(), lab.DIGITS)), "perturb-trace.json is stale"
            )

    def test_baseline_weights_and_output(self):
        """Row 0 sees only itself: [1]. Row 1: exp [0, ln 2] = [1, 2], denominator 3: [1/3, 2/3].
        Row 2: exp [ln 2, ln 2, 2 ln 2] = [2, 2, 4], denominator 8: [1/4, 1/4, 1/2].
        Z = A·V: z₁ = [2, 0]; z₂ = 1/3·[2, 0] + 2/3·[0, 4] = [2/3, 8/3];
        z₃ = 1/4·[2, 0] + 1/4·[0, 4] + 1/2·[2, 4] = [3/2, 3]."""
        base = self.lab["baseline"]
        self.assertWithinTolerance(
            base["weights"], [[1, 0, 0], [F(1, 3), F(2, 3), 0], [F(1, 4), F(1, 4), F(1, 2)]], "A"
        )
        self.assertWithinTolerance(base["output"], [[2, 0], [F(2, 3), F(8, 3)], [F(3, 2), 3]], "Z")
        self.assertEqual(base["masked_scores"][0][1:], [-math.inf, -math.inf])
        self.assertWithinTolerance(
            base["scores"][0][2], math.log(2), "row 0's unmasked score for source 2 (ln 2)"
        )

    def test_buggy_post_softmax(self):
        """Softmax over all three sources first. Row 0: exp [ln 2, 0, ln 2] = [2, 1, 2] over 5 ->
        keep 2/5. Row 1: exp [0, ln 2, ln 2] = [1, 2, 2] over 5 -> keep [1/5, 2/5]. Row 2 sees
        everything: [1/4, 1/4, 1/2]. Row sums 2/5, 3/5, 1. Z: [4/5, 0]; 1/5·[2, 0] + 2/5·[0, 4] =
        [2/5, 8/5]; [3/2, 3]."""
        bug = self.lab["buggy_post_softmax"]
        self.assertWithinTolerance(
            bug["weights"],
            [[F(2, 5), 0, 0], [F(1, 5), F(2, 5), 0], [F(1, 4), F(1, 4), F(1, 2)]],
            "A",
        )
        self.assertWithinTolerance(bug["row_sums"], [F(2, 5), F(3, 5), 1], "row sums")
        self.assertWithinTolerance(
            bug["output"], [[F(4, 5), 0], [F(2, 5), F(8, 5)], [F(3, 2), 3]], "Z"
        )

    def test_value_ablation(self):
        """v₂ := 0. Scores do not involve V, so A is unchanged (no row). z₂ = 1/3·[2, 0] =
        [2/3, 0] and z₃ = 1/4·[2, 0] + 1/2·[2, 4] = [3/2, 2] change; z₁ never read v₂."""
        run = self.lab["interventions"]["value_ablation"]
        self.assertEqual((run["weight_rows_changed"], run["output_rows_changed"]), ([], [1, 2]))
        self.assertWithinTolerance(run["output"][2], [F(3, 2), 2], "new z₃")

    def test_query_perturbation(self):
        """q₃ := [1, 0]: row 2's scores become ln 2·[1, 0, 1], exp [2, 1, 2] over 5: [2/5, 1/5,
        2/5]. z₃ = 2/5·[2, 0] + 1/5·[0, 4] + 2/5·[2, 4] = [8/5, 12/5]. Only row 2 of A and of
        Z."""
        run = self.lab["interventions"]["query_perturbation"]
        self.assertEqual((run["weight_rows_changed"], run["output_rows_changed"]), ([2], [2]))
        self.assertWithinTolerance(run["weights"][2], [F(2, 5), F(1, 5), F(2, 5)], "new a₃")
        self.assertWithinTolerance(run["output"][2], [F(8, 5), F(12, 5)], "new z₃")

    def test_connection_removal(self):
        """Forbid 3 -> 2: row 2 keeps sources 0 and 2, exp [2, 4] over 6: [1/3, 0, 2/3]; the
        weight of the removed source is redistributed. z₃ = 1/3·[2, 0] + 2/3·[2, 4] = [2,
        8/3]."""
        run = self.lab["interventions"]["connection_removal"]
        self.assertEqual((run["weight_rows_changed"], run["output_rows_changed"]), ([2], [2]))
        self.assertWithinTolerance(run["weights"][2], [F(1, 3), 0, F(2, 3)], "new a₃")
        self.assertWithinTolerance(run["output"][2], [2, F(8, 3)], "new z₃")

    def test_future_key_perturbation(self):
        """k₃ := 2·k₃: only row 2 may read source 2, its score becomes 4 ln 2, exp [2, 2, 16]
        over 20: [1/10, 1/10, 4/5]. z₃ = [1/5 + 8/5, 2/5 + 16/5] = [9/5, 18/5]. Rows 0 and 1
        cannot change."""
        run = self.lab["interventions"]["future_key_perturbation"]
        self.assertEqual((run["weight_rows_changed"], run["output_rows_changed"]), ([2], [2]))
        self.assertWithinTolerance(run["weights"][2], [F(1, 10), F(1, 10), F(4, 5)], "new a₃")
        self.assertWithinTolerance(run["output"][2], [F(9, 5), F(18, 5)], "new z₃")

    def test_buggy_procedure_leaks_the_doubled_future_key(self):
        """In the bug, row 0's denominator holds exp(q₁·2k₃/√2) = exp(2 ln 2) = 4: [2, 1, 4]
        over 7, keep 2/7, so z₁ = [4/7, 0] instead of [4/5, 0]. Row 1: [1, 2, 4] over 7, z₂ =
        1/7·[2, 0] + 2/7·[0, 4] = [2/7, 8/7]."""
        buggy = self.lab["interventions"]["future_key_perturbation"]["buggy_output"]
        self.assertWithinTolerance(
            buggy, [[F(4, 7), 0], [F(2, 7), F(8, 7)], [F(9, 5), F(18, 5)]], "buggy Z"
        )
        self.assertNotEqual(buggy[0], self.lab["buggy_post_softmax"]["output"][0])

    def test_shared_value_shift(self):
        """Adding s = [1, −2] to every value adds (Σ_j a_ij)·s to z_i. Correct rows sum to 1: Z
        + s = [[3, −2], [5/3, 2/3], [5/2, 1]]. The bug's rows sum to 2/5, 3/5, 1: [4/5, 0] +
        2/5·s = [6/5, −4/5], [2/5, 8/5] + 3/5·s = [1, 2/5], [3/2, 3] + s = [5/2, 1]."""
        shift = self.lab["checks"]["shared_value_shift"]
        self.assertWithinTolerance(
            shift["output"], [[3, -2], [F(5, 3), F(2, 3)], [F(5, 2), 1]], "shifted Z"
        )
        self.assertWithinTolerance(
            shift["buggy_output"], [[F(6, 5), F(-4, 5)], [1, F(2, 5)], [F(5, 2), 1]], "buggy"
        )

    def test_equal_mixtures_from_different_maps(self):
        """[1/4, 1/4, 1/2] and [3/8, 1/8, 1/2] over values [2, 0], [2, 0], [4, 0]: both 1/2·2 +
        1/2·4 = 3. Equal outputs do not mean equal attention."""
        eq = self.lab["checks"]["equal_mixtures"]
        self.assertWithinTolerance(eq["output_a"], [3, 0], "output a")
        self.assertWithinTolerance(eq["output_b"], [3, 0], "output b")
        self.assertNotEqual(eq["weights_a"], eq["weights_b"])

    def test_score_offset_keeps_the_weights(self):
        """softmax(s + 1000) = softmax(s): the stable softmax subtracts the row's maximum first.
        Multiplying by 1000 is a different operation: it sharpens the row toward its maximum."""
        offset = self.lab["checks"]["score_offset"]
        self.assertLess(offset["max_difference"], 1e-12)
        self.assertWithinTolerance(
            offset["offset_weights"], self.lab["baseline"]["weights"], "offset weights"
        )
        row = self.lab["baseline"]["masked_scores"][2]
        self.assertGreater(masked_softmax([1000 * s for s in row], [True] * 3)[2], 1 - 1e-12)

    def test_baseline_is_unchanged_after_the_interventions(self):
        self.assertIs(self.lab["baseline_unchanged"], True)
        self.assertEqual(lab.baseline(), self.lab["baseline"])

    def test_each_case_runs_the_head_once_and_the_views_run_it_no_more(self):
        """attention is one call of the core; lab() runs the core once per run it records (the
        baseline, 4 interventions, the shift and the offset, the buggy procedure on the baseline,
        the doubled key and the shift, and the baseline again for baseline_unchanged: 11); an
        experiment with the post-softmax bug, once for its baseline and the bug (2), and with a
        change too, once more for the change and the bug after it (4); the tables, the SVG and the
        page run it no more."""
        from lab06 import head
        from lab06.page import lab_page
        from lab06.tables import changes_table, lab_svg, part_one_table
        calls = []
        core = head.attention_core

        def counted(*args, **kwargs):
            calls.append(1)
            return core(*args, **kwargs)

        with mock.patch.object(head, "attention_core", counted):
            lab.attention(*lab.projected())
            self.assertEqual(len(calls), 1, "attention")
            for changes, count in ((None, 11), ([], 2), ([lab.ablate_value(2)], 4)):
                del calls[:]
                result = lab.lab() if changes is None else lab.experiment(
                    lab.HEAD, changes, ["post-softmax"])
                self.assertEqual(len(calls), count, changes)
                table = part_one_table if changes == [] else changes_table
                for view in (table, lab_svg, lab_page, lab.cases):
                    view(result)
                    self.assertEqual(len(calls), count, view.__name__)

    def test_softmax_over_destinations(self):
        """Column j's softmax over the queries allowed to read source j. Column 1: scores
        ln 2·[1, 0, 1], exp [2, 1, 2] over 5; column 2: ln 2·[1, 1] over rows 2 and 3, [1/2, 1/2];
        column 3: row 3 alone. Z: z₁ = 2/5·[2, 0] = [4/5, 0]; z₂ = 1/5·[2, 0] + 1/2·[0, 4] =
        [2/5, 2]; z₃ = 2/5·[2, 0] + 1/2·[0, 4] + 1·[2, 4] = [14/5, 6]."""
        weights, output = lab.softmax_over_destinations(*lab.projected())
        self.assertWithinTolerance(
            weights, [[F(2, 5), 0, 0], [F(1, 5), F(1, 2), 0], [F(2, 5), F(1, 2), 1]], "A")
        self.assertWithinTolerance(output, [[F(4, 5), 0], [F(2, 5), 2], [F(14, 5), 6]], "Z")

    def test_changes_act_where_they_belong_and_leave_the_head_alone(self):
        """A shift of every value keeps A; an offset of row 3's scores keeps its weights up to
        rounding; a map of your own for row 3 is mixed as given; none of them touches HEAD."""
        before = lab.baseline()
        shifted = lab.run(lab.HEAD, [lab.shift_values([1.0, -2.0])])
        self.assertEqual(shifted["weights"], before["weights"])
        self.assertWithinTolerance(shifted["output"], [[3, -2], [F(5, 3), F(2, 3)], [F(5, 2), 1]],
                                   "Z + [1, −2]")
        offset = lab.run(lab.HEAD, [lab.offset_scores(3, 1000.0)])
        self.assertWithinTolerance(offset["weights"], before["weights"], "offset weights")
        self.assertEqual(offset["masked_scores"][0], before["masked_scores"][0])
        own = lab.run(lab.with_values(lab.HEAD, lab.EQUAL_MIXTURE_VALUES),
                      [lab.set_weights(3, [0.375, 0.125, 0.5])])
        self.assertEqual(own["output"][2], [3.0, 0.0])
        self.assertEqual(lab.baseline(), before)

    def test_a_weight_on_a_blocked_source_is_refused(self):
        with self.assertRaises(ValueError) as caught:
            lab.run(lab.HEAD, [lab.set_weights(1, [0.5, 0.5, 0.0])])
        self.assertIn("query 1 may not read source 2: its weight must be 0, got 0.5",
                      str(caught.exception))

    def test_exact_fractions_only_within_the_labs_tolerance_of_a_small_denominator(self):
        """One rule for the lab's tables, grader and explorer (common.views.TOLERANCE, 1e-9)."""
        from explorer import page as explorer
        self.assertEqual(lab.exact_fraction(0.3333333333333333), F(1, 3))
        self.assertEqual(lab.exact_fraction(-8 / 35), F(-8, 35))
        self.assertEqual(lab.exact_fraction(1 / 3 + 1e-10), F(1, 3))
        self.assertEqual(explorer.fraction(1 / 3 + 1e-10), ("1/3", "≈"))
        self.assertIsNone(lab.exact_fraction(1 / 3 + 2e-9))
        self.assertIsNone(explorer.fraction(1 / 3 + 2e-9))
        self.assertIsNone(lab.exact_fraction(1 / 101))        # a denominator above 100
        self.assertIsNone(lab.exact_fraction(math.inf))


class PartOne(unittest.TestCase):
    """--table --baseline holds Part 1's steps: each row's sources and softmax sum, A as fractions,
    and z_i as its scaled value vectors, and none of the later parts' answers; the README's answer
    key quotes them as the program prints them."""

    @classmethod
    def setUpClass(cls):
        cls.table = run_script("perturb_attention.py", "--table", "--baseline").stdout
        cls.full = run_script("perturb_attention.py", "--table", "--all").stdout

    def test_part_1_and_part_2_are_two_doors_that_share_no_answer(self):
        for title in [lab.TITLES[key] for key in lab.INTERVENTIONS] + ["baseline unchanged"]:
            self.assertIn(title, self.full)
            self.assertNotIn(title, self.table)
        for part_one in ("A as fractions", "softmax of each row", "z_i = Σ", "shapes:"):
            self.assertIn(part_one, self.table)
            self.assertNotIn(part_one, self.full)

    def test_part_1_writes_the_shapes_c_and_each_dot_product_out(self):
        """q₂·k₁ = 0·c + 1·0 = 0 and q₃·k₃ = 1·c + 1·c = 2c: with c/√2 = ln 2, S is ln 2 ·
        [[1, 0, 1], [0, 1, 1], [1, 1, 2]] before the mask."""
        self.assertIn("shapes: X (3, 2), WQ (2, 2), WK (2, 2), WV (2, 2); Q (3, 2), K (3, 2), "
                      "V (3, 2);\n        S = Q·Kᵀ/√d (3, 3) with d = 2, A (3, 3), "
                      "Z = A·V (3, 2)\n", self.table)
        self.assertIn(f"c = √2·ln 2 = {lab.C!r}, kept exact", self.table)
        self.assertIn("x₃  c  c\n", self.table)
        self.assertIn("q₂·k₁ = 0·c + 1·0 = 0; s₂₁ = 0/√2 = 0\n", self.table)
        self.assertIn("q₃·k₃ = 1·c + 1·c = 2c; s₃₃ = 2c/√2 = 2 ln 2\n", self.table)
        self.assertIn("before the mask, each entry a multiple of ln 2 where it is one\n"
                      "      x₁    x₂      x₃\nx₁  ln 2     0    ln 2\nx₂     0  ln 2    ln 2\n"
                      "x₃  ln 2  ln 2  2 ln 2\n", self.table)

    def test_the_buggy_procedure_is_part_1_with_its_fractions_and_row_sums(self):
        bug = run_script("perturb_attention.py", "--table", "--baseline", "--bug",
                         "post-softmax").stdout
        self.assertTrue(bug.startswith(self.table.rstrip("\n")))
        self.assertIn("buggy: softmax, then zero the future\n  row sums: 2/5, 3/5, 1\n"
                      "  A as fractions:\n     x₁   x₂   x₃\nx₁  2/5    0    0\n"
                      "x₂  1/5  2/5    0\nx₃  1/4  1/4  1/2\n", bug)
        refused = run_script("perturb_attention.py", "--table", "--bug", "post-softmax")
        self.assertEqual(refused.returncode, 2)
        self.assertIn("is Part 1's answer: add --baseline", refused.stderr)

    def test_each_rows_denominator_is_2_3_and_8(self):
        """exp(ln 2) = 2; exp(0) + exp(ln 2) = 3; exp(ln 2) + exp(ln 2) + exp(2 ln 2) = 8."""
        self.assertIn("x₁          x₁                  2    2\n"
                      "x₂      x₁, x₂               1, 2    3\n"
                      "x₃  x₁, x₂, x₃            2, 2, 4    8\n", self.table)

    def test_weights_as_fractions_and_z3_as_three_scaled_values(self):
        self.assertIn("A as fractions\n     x₁   x₂   x₃\nx₁    1    0    0\n"
                      "x₂  1/3  2/3    0\nx₃  1/4  1/4  1/2\n", self.table)
        self.assertIn("z₃ = 1/4·[2, 0] + 1/4·[0, 4] + 1/2·[2, 4] = [1/2, 0] + [0, 1] + "
                      "[1, 2] = [3/2, 3]\n", self.table)

    def test_the_answer_key_quotes_the_table(self):
        with open(os.path.join(HERE, "lab06", "answers.md"), encoding="utf-8") as f:
            fold = f.read()
        table = self.table + "\n"
        excerpt = "".join(table[table.index(first):table.index(last, table.index(first))]
                          for first, last in (
            ("softmax of each row:", "A = softmax"), ("A as fractions", "Z = A·V"),
            ("z_i = Σ", "\n\n")))
        self.assertIn("```\n" + excerpt.rstrip("\n") + "\n```", fold)
        columns = lab.transpose(lab.softmax_over_destinations(*lab.projected())[0])
        shown = ", ".join(f"[{', '.join(str(lab.exact_fraction(w)) for w in column if w)}]"
                          for column in columns)
        self.assertIn(" and ".join(shown.rsplit(", ", 1)), " ".join(fold.split()))
        sums = [str(lab.exact_fraction(math.fsum(row)))
                for row in lab.softmax_over_destinations(*lab.projected())[0]]
        self.assertIn(f"the rows sum to {', '.join(sums[:-1])} and {sums[-1]}",
                      " ".join(fold.split()))
        leak = run_script("perturb_attention.py", "--scale-key", "3=2", "--bug", "post-softmax",
                          "--table").stdout
        line = next(line for line in leak.splitlines() if line.startswith("  z₁: [4/5, 0]"))
        self.assertIn(line.strip(), fold)


class CommandLine(unittest.TestCase):

    def test_check_passes_on_the_recorded_file(self):
        done = run_script("perturb_attention.py", "--check")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_check_fails_with_one_line_when_the_file_is_stale_or_missing(self):
        def stale(tmp):
            with open(os.path.join(tmp, "lab06", "perturb-trace.json"), "a", encoding="utf-8") as f:
                f.write(" ")

        def missing(tmp):
            os.remove(os.path.join(tmp, "lab06", "perturb-trace.json"))

        for prepare, fragment in (
            (stale, "differs from a fresh run"),
            (missing, "cannot read perturb-trace.json"),
        ):
            with self.subTest(fragment=fragment), tempfile.TemporaryDirectory() as tmp:
                os.mkdir(os.path.join(tmp, "lab06"))
                shutil.copyfile(os.path.join(HERE, "lab06", "perturb-trace.json"),
                                os.path.join(tmp, "lab06", "perturb-trace.json"))
                prepare(tmp)
                done = run_script("perturb_attention.py", "--check", folder=tmp)
                self.assertNotEqual(done.returncode, 0)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertIn(fragment, done.stderr)


class CoreRejects(unittest.TestCase):
    """attend raises ValueError, naming what was expected and what came."""

    def setUp(self):
        self.q, self.k, self.v, self.allowed = lab.projected()

    def assertRejects(self, fragment, q=None, k=None, v=None, allowed=None):
        with self.assertRaises(ValueError) as caught:
            attend(
                self.q if q is None else q,
                self.k if k is None else k,
                self.v if v is None else v,
                self.allowed if allowed is None else allowed,
            )
        self.assertIn(fragment, str(caught.exception))

    def test_ragged_matrix(self):
        self.assertRejects(
            "each q row must have 2 numbers, got 1 in row 2", q=[[1.0, 0.0], [1.0], [1.0, 1.0]]
        )

    def test_empty_matrix(self):
        self.assertRejects("k is an empty sequence", k=[])

    def test_query_and_key_widths_differ(self):
        self.assertRejects(
            "query and key widths must match: q is (3, 2), k is (3, 3)", k=[[1.0, 0.0, 0.0]] * 3
        )

    def test_key_and_value_counts_differ(self):
        self.assertRejects(
            "keys and values must be as many: k has 3 rows, v has 2", v=[[1.0, 0.0]] * 2
        )

    def test_mask_of_the_wrong_size(self):
        self.assertRejects(
            "allowed must be a (3, 3) matrix of bools", allowed=[[True, False], [True, True]]
        )

    def test_mask_entry_not_a_bool(self):
        self.assertRejects(
            "allowed[1][0] must be True or False, got int 1",
            allowed=[[True, False, False], [1, True, False], [True, True, True]],
        )

    def test_row_with_every_source_blocked(self):
        self.assertRejects(
            "allowed[1] is all False: that query may attend to no source",
            allowed=[[True, False, False], [False, False, False], [True, True, True]],
        )

    def test_non_finite_query_key_or_value(self):
        for name in ("q", "k", "v"):
            matrix = [[1.0, 0.0], [0.0, 1.0], [1.0, math.nan]]
            with self.subTest(name=name):
                self.assertRejects(
                    f"{name}[2][1] must be a finite number, got nan", **{name: matrix}
                )

    def test_score_that_overflows(self):
        big = [[1e200, 1e200]] * 3
        self.assertRejects("too large for floats", q=big, k=big)

    def test_softmax_rejects_a_non_finite_allowed_score(self):
        with self.assertRaises(ValueError) as caught:
            masked_softmax([0.0, math.inf], [True, True])
        self.assertIn("score 2 must be finite where allowed, got inf", str(caught.exception))


if __name__ == "__main__":
    unittest.main()

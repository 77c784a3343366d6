"""Experiments without editing source: a head of your own, any intervention, every intermediate."""

import json
import os
import re
import tempfile
import unittest
import xml.etree.ElementTree as ET

from bpe import train
from lab06 import lab
from tests.helpers import HERE, MessageAssertions, run_main, run_script
import trace_attention as ta

SVG = "{http://www.w3.org/2000/svg}"
# Four positions of width 2; WK = WQ = I, so S = X·Xᵀ/√2.
HEAD = {"X": [[1, 0], [0, 1], [1, 1], [0.5, -1]], "WQ": [[1, 0], [0, 1]],
        "WK": [[1, 0], [0, 1]], "WV": [[2, 0], [0, 4]]}


class OwnHead(MessageAssertions, unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, data, name="head.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(data if isinstance(data, str) else json.dumps(data))
        return path

    def run_lab(self, *args):
        return run_script("perturb_attention.py", *args)

    def test_a_head_of_four_positions_prints_head_and_baseline_as_the_trace_does(self):
        done = self.run_lab("--head", self.write(HEAD))
        self.assertEqual(done.returncode, 0, done.stderr)
        result = json.loads(done.stdout)
        with open(os.path.join(HERE, "lab06", "perturb-trace.json"), encoding="utf-8") as f:
            recorded = json.load(f)
        self.assertEqual(list(result), ["head", "baseline"])
        self.assertEqual(list(result["head"]), list(recorded["head"]))
        self.assertEqual(list(result["baseline"]), list(recorded["baseline"]))
        self.assertEqual(result["head"]["allowed"], [[j <= i for j in range(4)] for i in range(4)])
        self.assertEqual(len(result["baseline"]["weights"]), 4)

    def test_a_given_mask_is_used(self):
        allowed = [[True, True, True, True]] * 4
        result = json.loads(self.run_lab("--head", self.write(dict(HEAD, allowed=allowed))).stdout)
        self.assertTrue(all(w > 0 for row in result["baseline"]["weights"] for w in row))

    def test_each_invalid_head_is_one_line(self):
        cases = {
            "not JSON": ("{", "head.json is not valid JSON: Expecting"),
            "a list": ("[1, 2]", "must hold a JSON object with X, WQ, WK and WV, got list"),
            "a missing matrix": ({k: v for k, v in HEAD.items() if k != "WV"},
                                 "must have X, WQ, WK, WV and may have allowed; missing WV"),
            "an unknown key": (dict(HEAD, Wo=[[1]]), "unknown Wo"),
            "a ragged X": (dict(HEAD, X=[[1, 0], [0]]),
                           "head.json: each X row must have 2 numbers"),
            "widths that differ": (dict(HEAD, WK=[[1, 0, 0], [0, 1, 0]]),
                                   "WQ and WK need as many columns (a query meets a key in a dot "
                                   "product), got 2 and 3"),
            "a WQ of the wrong height": (dict(HEAD, WQ=[[1, 0], [0, 1], [1, 1]]),
                                         "head.json: WQ needs one row per column of X (2), got 3 "
                                         "rows"),
            "a mask entry that is not a bool": (
                dict(HEAD, allowed=[[1, 0, 0, 0]] + [[True] * 4] * 3), "must be True or False"),
            "a row with every source blocked": (
                dict(HEAD, allowed=[[False] * 4] + [[True] * 4] * 3),
                "allowed[0] is all False: that query may attend to no source"),
            "a mask of the wrong size": (dict(HEAD, allowed=[[True]]),
                                         "allowed must be a (4, 4) matrix of bools"),
            "a value that is not a number": (dict(HEAD, WV=[[2, 0], [0, "4"]]), "must be a number"),
        }
        for what, (data, fragment) in cases.items():
            with self.subTest(what):
                self.assertOneLineError(self.run_lab("--head", self.write(data)), fragment)

    def test_each_intervention_flag_counts_positions_from_1(self):
        path = self.write(HEAD)
        cases = {  # flag: (rows of A changed, rows of Z changed), 0-based as the trace records them
            ("--ablate-value", "2"): ([], [1, 2, 3]),
            ("--set-query", "4=1,0"): ([3], [3]),
            ("--scale-key", "4=2"): ([3], [3]),
            ("--block", "4,1"): ([3], [3]),
        }
        for flag, (a_rows, z_rows) in cases.items():
            with self.subTest(flag=flag):
                done = self.run_lab("--head", path, *flag)
                self.assertEqual(done.returncode, 0, done.stderr)
                run = json.loads(done.stdout)["intervention"]
                self.assertEqual((run["weight_rows_changed"], run["output_rows_changed"]),
                                 (a_rows, z_rows))
                self.assertIn("buggy_output", run)

    def test_flags_combine_into_one_intervention_on_the_labs_own_head(self):
        done = self.run_lab("--ablate-value", "2", "--block", "3,2")
        run = json.loads(done.stdout)["intervention"]
        self.assertEqual(run["changes"], ["v₂ := 0", "3 ↛ 2"])
        # row 3 reads sources 1 and 3 only, [1/3, 0, 2/3], and v₂ is 0 anyway: z₃ = [2, 8/3]
        self.assertEqual(run["weights"][2][1], 0.0)
        self.assertAlmostEqual(run["output"][2][0], 2.0, places=9)
        self.assertAlmostEqual(run["output"][2][1], 8 / 3, places=9)

    def test_a_position_outside_the_head_is_one_line(self):
        path = self.write(HEAD)
        for flag, fragment in (
                (("--ablate-value", "5"), "--ablate-value 5: value 5 is not a position of this "
                                          "head: expected 1 to 4"),
                (("--set-query", "1=1,2,3"), "--set-query 1=1,2,3: query 1 needs 2 numbers"),
                (("--block", "0,1"), "--block 0,1: query 0 is not a position"),
                (("--block", "1,1"), "--block 1,1: blocking 1 ↛ 1 leaves query 1 no source"),
                (("--scale-key", "x=2"), "--scale-key takes J=c")):
            with self.subTest(flag=flag):
                self.assertOneLineError(self.run_lab("--head", path, *flag), fragment)

    def test_the_bug_flag_shows_the_buggy_procedure(self):
        done = self.run_lab("--head", self.write(HEAD), "--bug", "post-softmax")
        result = json.loads(done.stdout)
        self.assertLess(result["buggy_post_softmax"]["row_sums"][0], 1.0)

    def test_a_four_position_head_goes_through_every_view(self):
        path = self.write(HEAD)
        args = ("--head", path, "--set-query", "4=1,0", "--bug", "post-softmax")
        table = self.run_lab(*args, "--table").stdout
        for name in ("q₄ := [1, 0]", "x₄", "buggy: softmax, then zero the future", "a₄: ",
                     "z₄: "):
            self.assertIn(name, table)
        part_one = self.run_lab("--head", path, "--table", "--baseline").stdout
        for name in ("Q", "K", "V", "S = Q·Kᵀ/√d", "A = softmax", "Z = A·V", "x₄"):
            self.assertIn(name, part_one)
        svg_path = os.path.join(self.tmp.name, "head.svg")
        self.assertEqual(self.run_lab(*args, "--svg", svg_path).returncode, 0)
        root = ET.parse(svg_path).getroot()
        titles = [g.get("data-title") for g in root.iter(f"{SVG}g") if g.get("class") == "panel"]
        self.assertEqual(titles, ["baseline", "q₄ := [1, 0]",
                                  "buggy: softmax, then zero the future, after q₄ := [1, 0]"])
        self.assertLessEqual(float(root.get("width")), 900)

    def test_write_and_check_refuse_an_experiment(self):
        self.assertOneLineError(self.run_lab("--check", "--head", self.write(HEAD)),
                                "--write and --check work on the recorded file alone")
        for args in (("--block", "3,2"), ("--values", "1,0/0,1/1,1"), ("--bug", "destinations")):
            with self.subTest(args=args):
                done = self.run_lab("--check", *args)
                self.assertOneLineError(done, f"drop {args[0]}")
                self.assertEqual(done.returncode, 2)

    def test_the_scaffold_takes_nothing_else(self):
        for args in (("--block", "3,2"), ("--table",), ("--bug", "destinations")):
            with self.subTest(args=args):
                done = self.run_lab("--scaffold", os.path.join(self.tmp.name, "t.py"), *args)
                self.assertOneLineError(done, "--scaffold writes a starter file and takes nothing "
                                              f"else; drop {args[0]}")
                self.assertEqual(done.returncode, 2)
        self.assertEqual(os.listdir(self.tmp.name), [])


class BugFollowsTheIntervention(unittest.TestCase):
    """--bug runs on the changed head, and says what the change did to it: the future key leaks
    into position 1 (4/5 -> 4/7) in the JSON, the table and the SVG alike."""

    @classmethod
    def setUpClass(cls):
        args = ("--scale-key", "3=2", "--bug", "post-softmax")
        cls.json = json.loads(run_script("perturb_attention.py", *args).stdout)
        cls.table = run_script("perturb_attention.py", *args, "--table").stdout
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "leak.svg")
            run_script("perturb_attention.py", *args, "--svg", path)
            cls.svg = ET.parse(path).getroot()

    def test_json_holds_the_bug_before_and_after_the_change(self):
        bug = self.json["buggy_post_softmax"]
        self.assertEqual(bug["changes"], ["k₃ := 2·k₃"])
        self.assertEqual(bug["baseline_output"][0], [0.8, 0.0])
        self.assertEqual(bug["output"][0], [0.5714285714, 0.0])        # 4/7, rounded as recorded
        self.assertEqual(bug["output_rows_changed"], [0, 1, 2])
        self.assertEqual(bug["output"], self.json["intervention"]["buggy_output"])

    def test_table_shows_z1_move_from_4_5_to_4_7(self):
        section = self.table[self.table.index("buggy: softmax, then zero the future, after"):]
        self.assertIn("Z changed at x₁, x₂, x₃", section)
        self.assertIn("  z₁: [4/5, 0] → [4/7, 0], moved by [-8/35, 0]", section)
        self.assertIn("  a₁: [2/5, 0, 0] → [2/7, 0, 0], moved by [-4/35, 0, 0]", section)

    def test_svg_outlines_the_bugs_changed_rows(self):
        panels = {g.get("data-title"): g for g in self.svg.iter(f"{SVG}g")
                  if g.get("class") == "panel"}
        bug = panels["buggy: softmax, then zero the future, after k₃ := 2·k₃"]
        changed = [r for r in bug.iter(f"{SVG}rect") if "side-changed" in r.get("class", "")]
        self.assertEqual(len(changed), 3)


class EveryExerciseAtHand(MessageAssertions, unittest.TestCase):
    """Part 1's steps, the softmax over destinations and the optional checks, from the command
    line: each prints what changed and what did not."""

    def run_lab(self, *args):
        done = run_script("perturb_attention.py", *args)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_each_readme_exercise_opens_one_door_and_counts_positions_from_1(self):
        """Every command of lab06/README.md's exercise table runs; a Part 1 command (and only
        one) prints Part 1's tables; a Part 2, Part 4 or optional one prints the rows its change
        moved, each before → after, and no table of Part 1; no position is counted from 0."""
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            rows = re.findall(r"^\| (Part [\d.]+|optional)[^|]*\| `python3 perturb_attention\.py "
                              r"([^`]*)` \|$", f.read(), re.M)
        self.assertGreaterEqual(len(rows), 12)
        with tempfile.TemporaryDirectory() as tmp:
            head = os.path.join(tmp, "my-head.json")
            with open(head, "w", encoding="utf-8") as f:
                json.dump(HEAD, f)
            for part, command in rows:
                with self.subTest(command=command):
                    args = [head if arg == "my-head.json" else arg for arg in command.split()]
                    printed = self.run_lab(*args)
                    if part == "Part 1":
                        self.assertIn("--baseline", args)
                    elif part != "Part 4":
                        self.assertNotIn("--baseline", args)
                    self.assertEqual("A as fractions" in printed, "--baseline" in args)
                    if "--baseline" not in args:
                        self.assertRegex(printed, r"\n  [saz][₁-₉]+: \[.*\] → \[")
                    self.assertNotRegex(printed, r"[xqkvsaz]₀|row 0|position 0")

    def test_destinations_is_a_bug_of_its_own_whose_columns_sum_to_1(self):
        """Column 1 (source x₁) is read by x₁, x₂, x₃ with scores ln 2·[1, 0, 1]:
        [2/5, 1/5, 2/5]; column 2 by x₂, x₃, ln 2·[1, 1]: [1/2, 1/2]; column 3 by x₃ alone:
        [1]."""
        bug = json.loads(self.run_lab("--json", "--bug", "destinations"))[
            "softmax_over_destinations"]
        self.assertEqual(bug["weights"], [[0.4, 0.0, 0.0], [0.2, 0.5, 0.0], [0.4, 0.5, 1.0]])
        self.assertEqual(bug["column_sums"], [1.0, 1.0, 1.0])
        self.assertEqual(bug["row_sums"], [0.4, 0.7, 1.9])
        self.assertIn("buggy: softmax over the destinations (each column)\n"
                      "  row sums: 2/5, 7/10, 19/10\n  column sums: 1, 1, 1\n",
                      self.run_lab("--bug", "destinations", "--table", "--baseline"))

    def test_a_shared_value_shift_moves_each_correct_z_by_the_shift_and_the_bugs_by_less(self):
        table = self.run_lab("--shift-values", "1,-2", "--bug", "post-softmax", "--table")
        shift, bug = table.split("buggy: softmax")
        self.assertIn("  A: no row changed", shift)
        for row, (old, new) in enumerate(((("2", "0"), ("3", "-2")),
                                          (("2/3", "8/3"), ("5/3", "2/3")),
                                          (("3/2", "3"), ("5/2", "1"))), 1):
            self.assertIn(f"  z{'₁₂₃'[row - 1]}: [{', '.join(old)}] → [{', '.join(new)}], "
                          f"moved by [1, -2]", shift)
        self.assertIn("  z₁: [4/5, 0] → [6/5, -4/5], moved by [2/5, -4/5]", bug)

    def test_a_constant_added_to_a_rows_scores_moves_its_weights_by_rounding_alone(self):
        table = self.run_lab("--offset-scores", "3=1000", "--table")
        section = table[table.index("row 3's scores + 1000"):]
        self.assertIn("  s₃: [ln 2, ln 2, 2 ln 2] → [1000.6931, 1000.6931, 1001.3863], moved by "
                      "[1000, 1000, 1000]", section)
        self.assertIn("  z₃: [3/2, 3] → [3/2, 3], moved by [0, 0]", section)
        self.assertRegex(section, r"\(A moved by at most \d\.\de-1\d: rounding alone\)")

    def test_a_rows_scores_times_1000_move_its_weights_to_its_largest_score(self):
        """× 1000 beside + 1000: row 3's scores ln 2·[1, 1, 2] become 1000 ln 2·[1, 1, 2], so its
        softmax puts all its weight on source 3 (exp(−1000 ln 2) is 0 in floats): z₃ = v₃."""
        section = self.run_lab("--scale-scores", "3=1000", "--table")
        self.assertIn("  s₃: [ln 2, ln 2, 2 ln 2] → [1000 ln 2, 1000 ln 2, 2000 ln 2]", section)
        self.assertIn("  a₃: [1/4, 1/4, 1/2] → [0, 0, 1]", section)
        self.assertIn("  z₃: [3/2, 3] → [2, 4], moved by [1/2, 1]", section)

    def test_own_values_and_a_map_of_your_own_give_equal_mixtures(self):
        """Values [2, 0], [2, 0], [4, 0]: the baseline's a₃ = [1/4, 1/4, 1/2] and the map
        [3/8, 1/8, 1/2] both give z₃ = 1/2·2 + 1/2·4 = [3, 0]."""
        args = ("--values", "2,0/2,0/4,0", "--set-weights", "3=3/8,1/8,1/2")
        result = json.loads(self.run_lab(*args))
        self.assertEqual(result["intervention"]["weight_rows_changed"], [2])
        self.assertEqual(result["intervention"]["output_rows_changed"], [])
        self.assertEqual(result["intervention"]["output"][2], [3.0, 0.0])
        self.assertEqual(result["head"]["V"], [[2.0, 0.0], [2.0, 0.0], [4.0, 0.0]])
        table = self.run_lab(*args, "--table")
        self.assertIn("a₃ := [3/8, 1/8, 1/2] (Z unchanged)", table)
        self.assertIn("  a₃: [1/4, 1/4, 1/2] → [3/8, 1/8, 1/2]", table)
        self.assertIn("  Z: no row changed\n  z₃: [3, 0], unchanged", table)

    def test_a_huge_number_is_shown_with_an_exponent_not_its_hundreds_of_digits(self):
        for args in (("--scale-scores", "3=1e308"), ("--set-query", "3=1e150,1e150")):
            with self.subTest(args=args):
                done = run_script("perturb_attention.py", *args, "--table")
                self.assertEqual(done.returncode, 0, done.stderr)
                self.assertIsNone(re.search(r"[0-9]{20}", done.stdout), done.stdout[:300])
                self.assertRegex(done.stdout, r"6\.9315e\+(307|149)")

    def test_each_bad_optional_flag_is_one_line(self):
        for args, fragment in (
                (("--values", "2,0/2,0"),
                 "--values: V needs one row per position of the head (3), got 2 rows"),
                (("--values", "2,x"), "--values takes rows a,b/c,d/..."),
                (("--shift-values", "1,2,3"), "--shift-values 1,2,3: the shift needs 2 numbers"),
                (("--offset-scores", "4=1"), "--offset-scores 4=1: row 4 is not a position of "
                                             "this head: expected 1 to 3"),
                (("--offset-scores", "3=1,2"), "--offset-scores takes I=c such as 3=1000"),
                (("--set-weights", "1=0.5,0.5,0"), "--set-weights 1=0.5,0.5,0: query 1 may not "
                                                    "read source 2: its weight must be 0, got 0.5"),
                (("--set-weights", "3=1,0"), "--set-weights 3=1,0: row 3 needs 3 weights"),
                (("--set-weights", "3=1/0,0,1"), "--set-weights takes I=a,b,..."),
                (("--block", "3"), "--block takes I,J such as 3,2, got '3' (see --help)"),
                (("--scale-key", "3=1e300", "--scale-key", "3=1e300"),
                 "after k₃ := 1e+300·k₃; k₃ := 1e+300·k₃: k[2][0] must be a finite number, got "
                 "inf (indices from 0)"),
                (("--scale-key", "3=1e200", "--set-query", "3=1e200,1e200"),   # no index in it
                 "after k₃ := 1e+200·k₃; q₃ := [1e+200, 1e+200]: matmul (3, 2)·(2, 3) could "
                 "overflow: a sum of 2 products of entries up to 1e+200 and 9.8e+199 can pass "
                 "1.8e+308; the numbers are too large for floats\n"),
                (("--block", "3,2,1"), "--block takes I,J such as 3,2, got '3,2,1' (see --help)"),
                (("--bug", "columns"), "invalid choice: 'columns'")):
            with self.subTest(args=args):
                self.assertOneLineError(run_script("perturb_attention.py", *args), fragment)


class EveryIntermediate(MessageAssertions, unittest.TestCase):

    def test_show_prints_each_intermediate_labelled_by_token(self):
        done = run_main(ta.main, "--table", "--show", ",".join(ta.INTERMEDIATES))
        self.assertEqual(done.returncode, 0, done.stderr)
        for name in ta.INTERMEDIATES:
            self.assertIn(ta.CAPTIONS[name], done.stdout)
        t = ta.trace()
        self.assertRegex(done.stdout, r"\n␣ball +" + " +".join(f"{v:.4f}" for v in t["out"][4]))
        self.assertRegex(done.stdout, r"\nmia +" + " +".join(f"{v:.4f}" for v in t["x"][0]))
        self.assertRegex(done.stdout, r"\(T, d_model\)\n +1 +2 +3 +4\n")   # counted from 1

    def test_show_refuses_an_unknown_name_and_needs_table(self):
        self.assertOneLineError(
            run_main(ta.main, "--table", "--show", "q,attn"),
            "--show takes names from x,q,k,v,scores,weights,mixed,out, got attn")
        self.assertOneLineError(run_main(ta.main, "--show", "q"), "add --table")

    def test_a_trained_tokenizer_can_trace_its_own_sentence(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mine.json")
            train("the quick brown fox jumps over the lazy dog. " * 20, 60).save(path)
            done = run_main(ta.main, "--tokenizer", path, "--sentence", "the lazy fox.")
        self.assertEqual(done.returncode, 0, done.stderr)
        t = json.loads(done.stdout)
        self.assertEqual("".join(t["tokens"]), "the lazy fox.")
        self.assertEqual(t["changed_sentence"], "the lazy hat.")

    def test_an_edit_that_changes_nothing_asks_for_changed(self):
        self.assertOneLineError(run_main(ta.main, "--sentence", "mia has a red hat."),
                                "would change nothing in 'mia has a red hat.': give --changed TEXT")


if __name__ == "__main__":
    unittest.main()

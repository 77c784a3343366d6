"""The induction circuit set by hand (training/induction.py): its four figures meet their bars on
several seeds, layer 1's output zeroed leaves chance, each layer is the lesson's attention_forward
bit for bit, and `train_attention.py --induction` prints what training/README.md shows."""

import json
import os
import tempfile
import unittest

from attention import add, attention_forward
from tests.helpers import HERE, MessageAssertions, bits, run_script
from training import induction

SEEDS = (1, 2, 3)       # seed 1 is the command's default, the README's
BAR = 0.99              # the previous-token and induction scores must reach this


class InductionCircuit(MessageAssertions, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.found, cls.runs = {}, {}
        for seed in SEEDS:
            cls.found[seed], run, ablated = induction.measure(seed)
            cls.runs[seed] = {"run": run, "ablated": ablated}

    def test_the_four_figures_meet_their_bars_on_every_seed(self):
        for seed, found in self.found.items():
            with self.subTest(seed=seed):
                self.assertGreaterEqual(found["previous_token_score"], BAR, f"seed {seed}")
                self.assertGreaterEqual(found["induction_score"], BAR, f"seed {seed}")
                self.assertEqual(found["accuracy"], 1.0, f"seed {seed}")
                self.assertEqual(found["ablated_accuracy"], 1 / induction.V, f"seed {seed}")

    def test_with_layer_1_zeroed_every_logit_ties_and_each_place_scores_chance(self):
        for seed in SEEDS:
            tokens, ablated = induction.repeated_tokens(seed), self.runs[seed]["ablated"]
            self.assertEqual(ablated["x1"], ablated["x0"], f"seed {seed}")
            for i in range(induction.N + 1, 2 * induction.N):
                self.assertEqual(ablated["logits"][i], [0.0] * induction.V, f"seed {seed}, {i}")
            self.assertEqual(induction.accuracy(ablated["logits"], tokens), 1 / induction.V)

    def test_the_tokens_are_bos_then_n_distinct_drawn_then_the_same_n_again(self):
        for seed in SEEDS:
            tokens = induction.repeated_tokens(seed)
            drawn = tokens[1:induction.N + 1]
            self.assertEqual(tokens, [induction.BOS] + drawn + drawn, f"seed {seed}")
            self.assertEqual(len(set(drawn)), induction.N, f"seed {seed}")
            self.assertTrue(all(0 <= t < induction.V for t in drawn), f"seed {seed}")

    def test_both_layers_are_attention_forwards_output_bit_for_bit(self):
        run = self.runs[1]["run"]
        first = attention_forward(induction.previous_token_head(), run["x0"])
        self.assertEqual(bits(run["x1"]), bits(add(run["x0"], first["out"])))
        second = attention_forward(induction.induction_head(), run["x1"])
        self.assertEqual(bits(run["x2"]), bits(add(run["x1"], second["out"])))
        for name in ("q", "k", "v", "scores", "weights", "mixed", "out"):
            self.assertEqual(bits(run["first"][name]), bits(first[name]), name)
            self.assertEqual(bits(run["second"][name]), bits(second[name]), name)

    def test_the_json_carries_the_four_figures_and_the_svg_both_maps(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "maps.svg")
            done = run_script("train_attention.py", "--induction", "--json", "--svg", path)
            with open(path, encoding="utf-8") as f:
                svg = f.read()
        self.assertEqual(done.returncode, 0, done.stderr)
        printed = json.loads(done.stdout)
        for name in ("previous_token_score", "induction_score", "accuracy", "ablated_accuracy",
                     "seed", "vocabulary", "n"):
            self.assertEqual(printed[name], self.found[1][name], name)
        self.assertEqual(svg.count('<g class="panel"'), 2)
        self.assertIn("layer 1: previous-token head", svg)
        self.assertIn("layer 2: induction head", svg)

    def test_a_flag_of_the_trained_model_is_refused_in_one_line(self):
        for flags in (["--steps", "3"], ["--story", "the ball is"], ["--check"]):
            with self.subTest(flags=flags):
                done = run_script("train_attention.py", "--induction", *flags)
                self.assertOneLineError(done, f"--induction sets its weights by hand and draws "
                                              f"its own sequence: drop {flags[0]}")

    def test_a_seed_below_0_is_refused_for_it_draws_what_its_opposite_draws(self):
        self.assertOneLineError(run_script("train_attention.py", "--induction", "--seed", "-1"),
                                "seed must be at least 0, got -1: Python's random draws the same "
                                "for -1 as for 1")

    def test_the_readme_shows_what_the_command_prints(self):
        done = run_script("train_attention.py", "--induction")
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            readme = f.read()
        shown = "```\n$ python3 train_attention.py --induction\n" + done.stdout + "```"
        self.assertIn(shown, readme, f"training/README.md should show:\n{shown}")
        self.assertEqual(done.stdout, induction.table(self.found[1]))


if __name__ == "__main__":
    unittest.main()

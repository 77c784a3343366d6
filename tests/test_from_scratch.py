"""Both layers learned from scratch (training/from_scratch.py): layer 1's weights from place alone,
the hand-written backward of both losses against central differences, B1's own learning rate, the
record of seeds 1 to 3 and the README's figures from it, and the door's refusals."""

import json
import math
import os
import random
import tempfile
import unittest

from attention import softmax_row
from common.gradcheck import central_differences, max_err
from common.safe_io import read_json
from tests.helpers import GRAD_TOLERANCE, HERE, MessageAssertions, run_script
from training import from_scratch, given_layer, tables
from training.adam import Adam
from training.stories import COLOURS

SEED = 20261204
RUN = os.path.join(HERE, "training", "from-scratch-run.json")


class FromScratch(MessageAssertions, unittest.TestCase):

    def test_layer_1_reads_the_four_places_before_each_row_by_their_distance_alone(self):
        bias = [2.0, 1.0, 0.5, -1.0]
        self.assertEqual(from_scratch.layer_1_row(bias, 0), ([0], [1.0]))
        for i in range(1, 9):
            with self.subTest(row=i):
                places, weights = from_scratch.layer_1_row(bias, i)
                self.assertEqual(places, list(range(max(0, i - 4), i)))
                self.assertAlmostEqual(sum(weights), 1.0, delta=1e-15)
                self.assertEqual(weights, softmax_row([bias[i - j - 1] for j in places]))
        self.assertEqual(from_scratch.layer_1_weights({"B1": [bias]}),
                         from_scratch.layer_1_row(bias, 4)[1][::-1])
        self.assertGreater(*from_scratch.layer_1_weights({"B1": [bias]})[:2])

    def test_the_gradient_of_both_losses_matches_central_differences(self):
        """Every parameter, B1 and the next-token head A among them, on prompts of 2, 3 and 7
        tokens (the first row reads itself; later rows read up to four places back)."""
        params = from_scratch.init_params(6, SEED, d_model=3, d_head=2)
        rng = random.Random(SEED)
        params["B1"] = [[rng.uniform(-1, 1) for _ in range(from_scratch.PLACES)]]
        for prompt, answer in (([4, 0], 2), ([4, 1, 3], 5), ([3, 1, 4, 1, 5, 0, 2], 7)):
            with self.subTest(prompt=prompt):
                loss, grads = from_scratch.loss_and_grads(params, prompt, answer)
                grads["E"] = [grads["E"].get(t, [0.0] * 3) for t in range(6)]

                def total():
                    fw = from_scratch.forward(params, prompt)
                    classes = from_scratch.next_classes()
                    rows = [-math.log(softmax_row(row)[classes[t]])
                            for row, t in zip(fw["next"], prompt[1:])]
                    return (-math.log(softmax_row(fw["logits"])[answer])
                            + sum(rows) / len(rows))

                self.assertAlmostEqual(loss, total(), delta=1e-12)
                numeric = {name: central_differences(total, m) for name, m in params.items()}
                self.assertEqual(sorted(numeric), sorted(grads))
                self.assertLess(max_err(grads, numeric), GRAD_TOLERANCE)

    def test_layer_1s_biases_learn_at_their_own_rate_and_the_rest_at_adams(self):
        """Adam's first step moves every weight with a gradient by its learning rate (the first
        m/√s is ±1, but for Adam's eps): B1 by 0.1, every other weight by 0.005."""
        params = from_scratch.init_params(8, SEED, d_model=4, d_head=2)
        before = {name: [row[:] for row in m] for name, m in params.items()}
        _, grads = given_layer.batch_grads(params, [([1, 2, 3, 4, 5, 6], 3)],
                                           from_scratch.loss_and_grads)
        Adam(params, 10, given_layer.LEARNING_RATE, from_scratch.RATES).step(params, grads)
        for name in ("B1", "Wv1", "A", "U"):
            moved = [abs(a - b) for r, s in zip(params[name], before[name]) for a, b in zip(r, s)]
            rate = from_scratch.RATES.get(name, given_layer.LEARNING_RATE)
            self.assertAlmostEqual(max(moved), rate, delta=rate * 1e-4, msg=name)

    def test_every_token_has_a_class_and_the_colours_are_theirs(self):
        classes = from_scratch.next_classes()
        vocab = given_layer.training_tokenizer().vocab
        self.assertEqual(len(classes), len(vocab))
        for colour in COLOURS:
            self.assertEqual(classes[vocab.index(" " + colour)], COLOURS.index(colour))
        self.assertEqual(classes[vocab.index(" is")], from_scratch.NEXT.index("is"))

    def test_the_door_takes_seed_write_or_check_alone(self):
        for args, dropped in ((["--steps", "3"], "--steps"), (["--layers", "2"], "--layers"),
                              (["--check", "--seed", "2"], "--seed"),
                              (["--story", "the ball is"], "--story")):
            with self.subTest(args=args):
                self.assertOneLineError(run_script("train_attention.py", "--from-scratch", *args),
                                        f"drop {dropped}")

    def test_write_with_a_seed_is_refused_a_seed_not_recorded_or_a_record_of_another_way(self):
        """--write --seed N resumes a stopped run, seed N beside the record's others: N must be 1,
        2 or 3, and the record one of this way of training (else seed N's row would not fit)."""
        recorded = read_json(RUN, "the from-scratch run")
        for seed, changes, said in (("4", {}, "records one of seeds 1…3, not 4"),
                                    ("2", {"places": 3}, "is not a run recorded this way"),
                                    ("2", {"seeds": {}}, "is not a run recorded this way")):
            with self.subTest(seed=seed, changes=changes), tempfile.TemporaryDirectory() as tmp:
                os.makedirs(os.path.join(tmp, "training"))
                with open(os.path.join(tmp, "training", "from-scratch-run.json"), "w",
                          encoding="utf-8") as f:
                    json.dump({**recorded, **changes}, f)
                done = run_script("train_attention.py", "--from-scratch", "--write", "--seed",
                                  seed, folder=tmp)
                self.assertOneLineError(done, said)


def merged(record, given):
    """Each seed's sets from scratch beside the same seed's with layer 1 given (two-layer-run)."""
    beside = {seed["seed"]: seed["two layers"] for seed in given["seeds"]}
    return [{"seed": seed["seed"], "from scratch": seed["from scratch"],
             "layer 1 given": beside[seed["seed"]]} for seed in record["seeds"]]


def curve_table(records):
    """Each seed's second object and layer 1's weight one back, every CURVE_EVERY stories."""
    lines = ["| stories | " + " | ".join(f"seed {r['seed']}: second object | one back"
                                         for r in records) + " |",
             "|---" * (1 + 2 * len(records)) + "|"]
    for points in zip(*(r["second_object_curve"] for r in records)):
        lines.append(f"| {points[0]['stories']:,} | " + " | ".join(
            f"{p['correct']} | {p['layer_1_weights'][0]:.2f}" for p in points) + " |")
    return "\n".join(lines) + "\n"


def listed(items):
    """'a, b and c'."""
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def span(records, model, kind):
    """The least and the most of kind over records' model answers: "59" or "57 to 60"."""
    found = [record[model][kind] for record in records]
    return str(found[0]) if min(found) == max(found) else f"{min(found)} to {max(found)}"


def verdict(record, given):
    """The README's sentence on the sets of two or three things, and the bar's."""
    both = merged(record, given)
    kinds = ("third object", "second object", "middle of three", "first of three")
    short = [f"seed {seed['seed']} ({seed['from scratch']['third object']})"
             for seed in record["seeds"] if seed["from scratch"]["third object"] < 57]
    return (f"**From scratch, the third of three is answered {span(both, 'from scratch', kinds[0])}"
            f" of 60, the second of two {span(both, 'from scratch', kinds[1])}, the middle of "
            f"three {span(both, 'from scratch', kinds[2])} and the first of three "
            f"{span(both, 'from scratch', kinds[3])}**, where the model with layer 1 given answers "
            + ", ".join(span(both, "layer 1 given", kind) for kind in kinds[:3]) + " and "
            + span(both, "layer 1 given", kinds[3]) + " on the same seeds. The bar set for this "
            "run, 57 of 60 (95%) on the third of three, is "
            + ("met for every recorded seed." if not short else
               f"not met for {listed(short)}."))


@unittest.skipUnless(os.path.exists(RUN), "from-scratch-run.json is not recorded yet")
class Record(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.record = read_json(RUN, "the from-scratch run")
        cls.given = read_json(os.path.join(HERE, "training", "two-layer-run.json"), "the run")
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            cls.readme = f.read()

    def test_the_record_says_how_it_learned_and_holds_every_set_for_seeds_1_to_3(self):
        self.assertEqual(self.record["learned"], from_scratch.LEARNED)
        self.assertEqual((self.record["rates"], self.record["places"]),
                         (from_scratch.RATES, from_scratch.PLACES))
        self.assertEqual([seed["seed"] for seed in self.record["seeds"]], list(given_layer.SEEDS))
        for seed in self.record["seeds"]:
            self.assertEqual(list(seed["from scratch"]), list(self.given["seeds"][0]["two layers"]))
            self.assertEqual(seed["stories"], from_scratch.STORIES)

    def test_the_curve_keeps_every_curve_every_stories_up_to_the_final_model(self):
        for seed in self.record["seeds"]:
            curve = seed["second_object_curve"]
            self.assertEqual([point["stories"] for point in curve],
                             list(range(given_layer.CURVE_EVERY, seed["stories"] + 1,
                                        given_layer.CURVE_EVERY)))
            self.assertEqual(curve[-1]["correct"], seed["from scratch"]["second object"])
            self.assertEqual(curve[-1]["layer_1_weights"], seed["layer_1_weights"])

    def test_the_second_object_stays_near_chance_for_tens_of_thousands_of_stories(self):
        """The README's words: every seed answers the second object fewer than 45 of 60 times
        (chance is 30, a story has two colours) for more than 20,000 stories after the curve's
        first point, where layer 1 has already learned."""
        readme = " ".join(self.readme.split())
        self.assertIn("stays near chance (30 of 60) for tens of thousands of stories more", readme)
        for seed in self.record["seeds"]:
            curve = seed["second_object_curve"]
            above = next(p["stories"] for p in curve if p["correct"] >= 45)
            self.assertGreater(above - curve[0]["stories"], 20_000, f"seed {seed['seed']}")

    def test_the_readme_quotes_the_recorded_tables(self):
        self.assertIn(tables.two_layer_table(merged(self.record, self.given),
                                             ("from scratch", "layer 1 given")), self.readme)
        self.assertIn(curve_table(self.record["seeds"]), self.readme)

    def test_the_readme_says_the_recorded_figures(self):
        readme = " ".join(self.readme.split())
        self.assertIn(verdict(self.record, self.given), readme)
        seeds = self.record["seeds"]
        weights = [listed([f"{w:.2f}" for w in seed["layer_1_weights"]])
                   + f" (seed {seed['seed']})" for seed in seeds]
        self.assertIn(f"are {listed(weights)}.", readme)
        self.assertIn("it puts most of its weight on the two tokens before, as the hand-set head "
                      "does (1/2 each), the nearer a little more.", readme)
        for seed in seeds:
            one, two, *_ = seed["layer_1_weights"]
            self.assertTrue(one + two > 0.5 and one > two, f"seed {seed['seed']}: {one}, {two}")
        self.assertIn(f"with {from_scratch.STORIES:,} stories a seed", readme)
        # seeds 1 and 2 ended in the run of three; seed 3 was recorded after it, with --seed 3
        took = listed([f"{seed['seconds']} s (seed {seed['seed']})" for seed in seeds[:2]])
        self.assertIn(f"three at a time and then two: {took}.", readme)
        self.assertIn(f"by itself and recorded it beside them: {seeds[2]['seconds']} s.", readme)
        reached = [next(p["stories"] for p in seed["second_object_curve"] if p["correct"] >= 57)
                   for seed in seeds]
        self.assertIn(f"reaches 57 at {listed([f'{n:,}' for n in reached])} stories", readme)
        first = listed([f"{seed['second_object_curve'][0]['layer_1_weights'][0]:.2f} (seed "
                        f"{seed['seed']})" for seed in seeds])
        self.assertIn(f"after 4,000 stories its weight one back is already {first}, up from "
                      f"{1 / from_scratch.PLACES:.2f} (the four places alike)", readme)

"""The two-layer model (training/two_layers.py): its hand-written backward through both layers and
the residual stream against central differences, and its question row against the whole second
layer's last row, numbers and gradients, bit for bit; with layer 1 given (training/given_layer.py):
its fixed weights, its backward, the fast variant against the plain one, a short training, the
stories it is measured on, the record and the README's figures (the raindrop story blocked and
patched on the recorded model), and the door's refusals."""

import json
import math
import os
import random
import re
import runpy
import unittest
from unittest import mock

from attention import (add, attention_backward, attention_forward, init_attention, matmul,
                       softmax_row)
from common.gradcheck import central_differences, max_err
from tests.helpers import (GRAD_TOLERANCE, HERE, LISTED, RAINDROP, MessageAssertions, bits,
                           question_row_and_its_gradient, raindrop_figures, run_script)
from training.model import predict as predict_one_layer
from training.recorded_model import read_model
from training import given_layer, interventions, stories, tables, two_layers
from training.adam import Adam

SEED = 20261201


class TwoLayers(unittest.TestCase):

    def test_the_second_layers_question_row_is_its_whole_last_row_bit_for_bit(self):
        """forward computes layer 2 at the question alone and loss_and_grads only what reaches it:
        attention_forward of layer 2 on x1, and attention_backward with dLoss/d(out) zero but in
        the last row, give the same numbers and layer 2's gradients to the last bit."""
        params = two_layers.init_params(6, SEED, d_model=4, d_head=3)
        for prompt, answer in (([0], 2), ([0, 1, 0], 3), ([3, 1, 4, 1, 5], 2)):
            with self.subTest(prompt=prompt):
                fw = two_layers.forward(params, prompt)
                full = attention_forward(two_layers.layer(params, 2), fw["x1"])
                d_logits = softmax_row(fw["logits"])
                d_logits[answer] -= 1.0
                d_out = question_row_and_its_gradient(self, fw["row"], fw["out2"], full, d_logits,
                                                      params["U"])
                expected, _ = attention_backward(two_layers.layer(params, 2), fw["x1"], full,
                                                 d_out)
                _, grads = two_layers.loss_and_grads(params, prompt, answer)
                for name, grad in expected.items():
                    self.assertEqual(bits(grads[f"{name}2"]), bits(grad), name)

    def test_layer_n_of_seed_s_starts_from_the_seed_2s_plus_n_minus_1(self):
        """Each layer's Wq, Wk, Wv and Wo (layer 1's Wv and Wo) are init_attention's for the seed
        2s + n − 1, so seeds 0…4 give their two layers ten different starts."""
        starts = []
        for seed in range(5):
            params = two_layers.init_params(4, seed, 3, 2)
            for n in two_layers.LAYERS:
                drawn = init_attention(3, 2, 2 * seed + n - 1)
                for name in ("Wv", "Wo") if n == 1 else drawn:     # layer 1 has no Wq1, Wk1
                    self.assertEqual(params[f"{name}{n}"], drawn[name])
                starts.append(str(params[f"Wv{n}"]))
        self.assertEqual(len(set(starts)), 10)


def gradient_rows(grads, vocab, d_model):
    """grads with E's {token: row} made a whole (vocab, d_model) matrix, for max_err."""
    return dict(grads, E=[grads["E"].get(t, [0.0] * d_model) for t in range(vocab)])


class LayerOneGiven(MessageAssertions, unittest.TestCase):

    def test_given_layer_1_reads_the_two_tokens_before_each_place_and_learns_no_query(self):
        """Row i's weights are 1/2 on i − 2 and i − 1 (1 on place 0 in rows 0 and 1), and its mixed
        is given_weights·v bit for bit; there is no Wq1 or Wk1 to learn."""
        params = two_layers.init_params(6, SEED, d_model=4, d_head=3)
        self.assertNotIn("Wq1", params)
        self.assertNotIn("Wk1", params)
        weights = two_layers.given_weights(5)
        self.assertEqual(weights[0][0], 1.0)
        self.assertEqual(weights[1][:2], [1.0, 0.0])
        self.assertEqual(weights[4], [0.0, 0.0, 0.5, 0.5, 0.0])
        x0 = two_layers.embed(params, [3, 1, 4, 1, 5])
        first = two_layers.previous_token_head(params, x0)
        self.assertEqual(bits(first["mixed"]), bits(matmul(weights, first["v"])))

    def test_given_layer_1s_gradient_matches_central_differences(self):
        """Every learned parameter, layer 1's value and output among them, on a prompt of 5."""
        params = two_layers.init_params(6, SEED, d_model=3, d_head=2)
        prompt, answer = [4, 1, 4, 2, 0], 5
        _, grads = two_layers.loss_and_grads(params, prompt, answer)

        def loss():
            return -math.log(softmax_row(two_layers.forward(params, prompt)["logits"])[answer])

        numeric = {name: central_differences(loss, matrix) for name, matrix in params.items()}
        self.assertEqual(sorted(numeric), sorted(grads))
        self.assertLess(max_err(gradient_rows(grads, 6, 3), numeric), GRAD_TOLERANCE)

    def test_the_fast_variant_is_the_plain_loss_and_gradient_to_rounding(self):
        """loss_and_grads_fast regroups the same sums, so it may differ in the last bits only:
        within 1e-12 on gradients of size about 1 (a dropped term misses by far more)."""
        params = two_layers.init_params(9, SEED, d_model=6, d_head=4)
        for prompt, answer in (([0], 2), ([0, 1], 3), ([3, 1, 4, 1, 5, 8, 2, 6], 7)):
            with self.subTest(prompt=prompt):
                loss, grads = two_layers.loss_and_grads(params, prompt, answer)
                fast_loss, fast = given_layer.loss_and_grads_fast(params, prompt, answer)
                self.assertAlmostEqual(loss, fast_loss, delta=1e-12)
                self.assertEqual(sorted(grads["E"]), sorted(fast["E"]))
                self.assertLess(max_err(gradient_rows(grads, 9, 6), gradient_rows(fast, 9, 6)),
                                1e-12)

    def test_a_short_training_of_batches_lowers_the_loss(self):
        """Ten of Adam's steps on one batch of 8 stories of random tokens: the batch's loss
        falls by more than a third."""
        rng = random.Random(SEED)
        batch = [([rng.randrange(12) for _ in range(rng.randint(3, 8))], rng.randrange(11))
                 for _ in range(given_layer.BATCH)]
        params = two_layers.init_params(12, SEED, d_model=6, d_head=4)
        adam = Adam(params, 10, given_layer.LEARNING_RATE * 10)
        first, _ = given_layer.batch_grads(params, batch)
        for _ in range(10):
            adam.step(params, given_layer.batch_grads(params, batch)[1])
        self.assertLess(given_layer.batch_grads(params, batch)[0], first * 2 / 3)

    def test_train_model_refuses_a_count_or_batches_it_cannot_train_and_a_seed_not_an_int(self):
        for kwargs in ({"count": 0}, {"count": 7}, {"count": -8}, {"count": 8.0}, {"batches": 0},
                       {"batches": -1}, {"batches": 1.5}, {"batches": "2"}):
            with self.subTest(**kwargs):
                self.assertMessage(ValueError, "train_model needs count an int of at least 8",
                                   lambda: given_layer.train_model(1, **kwargs))
        for call in (given_layer.train_model, given_layer.held_out):
            self.assertMessage(TypeError, "seed must be an int, got", call, "1")

    def test_the_sets_of_three_list_three_things_and_ask_about_the_first_middle_or_third(self):
        sets = stories.cannot_stories(SEED, ([], {}), stories.TWO_LAYER_SETS)
        self.assertEqual(list(sets), list(stories.TWO_LAYER_SETS))
        for kind, asked in (("first of three", 0), ("middle of three", 1), ("third object", 2)):
            for s in sets[kind]:
                listed = re.match(r"\w+ has an? (\w+) (\w+), an? (\w+) (\w+) and an? (\w+) (\w+)\.",
                                  s.text)
                self.assertIsNotNone(listed, s.text)
                pairs = list(zip(listed.groups()[::2], listed.groups()[1::2]))
                self.assertEqual(pairs[asked], (s.colour, s.thing), (kind, s.text))
                self.assertEqual(s.distractor, next(c for c, thing in pairs if thing != s.thing),
                                 (kind, s.text))    # the first colour of another thing
                self.assertTrue(s.text.endswith(f" the {s.thing} is {s.colour}."), s.text)

    def test_a_two_layer_training_story_asks_about_a_thing_given_its_colour(self):
        """The answer is the colour given to the thing asked about, wherever it stands."""
        rng, asked_later = random.Random(SEED), 0
        for _ in range(30):
            s = stories.two_layer_story(rng, None)
            body = s.text[:-len(f" the {s.thing} is {s.colour}.")]
            self.assertRegex(body, rf"\b{s.colour} {s.thing}\b|\b{s.thing}\b.*\b{s.colour}\b")
            asked_later += s.distractor is not None or body.count(" has a") > 1
        self.assertGreater(asked_later, 0)

    def test_training_stories_list_three_things_in_one_sentence_never_in_three(self):
        """What the README warns of: three things told in three sentences are a form never
        trained."""
        rng, lists_of_three = random.Random(SEED), 0
        for _ in range(300):
            s = stories.two_layer_story(rng, stories.made_up_words())
            sentences = re.split(r"[.!?] ", s.text[:-len(f" the {s.thing} is {s.colour}.")])
            told = [sum(word in stories.COLOURS for word in re.findall(r"[a-z]+", sentence))
                    for sentence in sentences]
            self.assertTrue(sum(told) < 3 or max(told) == sum(told), s.text)
            lists_of_three += max(told) == 3
        self.assertGreater(lists_of_three, 0)
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            self.assertIn("they list three things in one sentence, never in three",
                          " ".join(f.read().split()))

    def test_predict_answers_with_layer_2s_weights_and_refuses_a_one_layer_model(self):
        tokenizer = stories.training_tokenizer()
        params = two_layers.init_params(len(tokenizer.vocab), SEED, d_model=4, d_head=2)
        model = {"tokenizer": tokenizer, "params": params, "layers": 2}
        text = "mia has a red ball. the ball is"
        answer, weights = given_layer.predict(model, text)
        self.assertIn(answer.strip(), stories.COLOURS)
        fw = two_layers.forward(params, tokenizer.encode(text))
        self.assertEqual([w for _, w in weights], fw["row"]["weights"][0])
        del params["Wq2"]
        self.assertMessage(TypeError, "Wq2", given_layer.predict, model, text)

    def test_recorded_model_reads_either_recorded_model_and_refuses_other_layers(self):
        door = runpy.run_path(os.path.join(HERE, "train_attention.py"))     # its Python names
        two = door["recorded_model"](layers=2)
        self.assertEqual((two["layers"], two["params"]), (2, given_layer.read_model(os.path.join(
            HERE, "training", "two-layer-model.json"))["params"]))
        self.assertNotIn("layers", door["recorded_model"]())
        for layers in (0, 3, "2"):
            self.assertMessage(ValueError, f"layers must be 1 or 2, got {layers!r}",
                               door["recorded_model"], layers)
            self.assertMessage(ValueError, f"layers must be 1 or 2, got {layers!r}",
                               door["train_model"], 1, 1, None, layers)

    def test_layers_other_than_1_or_2_and_flags_it_cannot_take_are_refused(self):
        for args, fragment in ((["--layers", "3"], "--layers must be 1 or 2, got 3"),
                               (["--layers", "2", "--block", "3"], "add --story TEXT"),
                               (["--layers", "2", "--svg", "two.svg"], "drop --svg"),
                               (["--layers", "2", "--steps", "9"], "drop --steps"),
                               (["--layers", "2", "--seed", "2", "--story", "the ball is"],
                                "answers from the recorded seed 1): drop --seed")):
            self.assertOneLineError(run_script("train_attention.py", *args), fragment)


RUN_PATH = os.path.join(HERE, "training", "two-layer-run.json")


def curve_table(records):
    """Each seed's second_object_curve, a row per count of stories, in Markdown, as the README
    quotes it."""
    lines = ["| stories | " + " | ".join(f"seed {r['seed']}" for r in records) + " |",
             "|---" * (1 + len(records)) + "|"]
    for points in zip(*(r["second_object_curve"] for r in records)):
        lines.append(f"| {points[0]['stories']:,} | "
                     + " | ".join(str(p["correct"]) for p in points) + " |")
    return "\n".join(lines) + "\n"


class WrittenStories(unittest.TestCase):

    def test_each_written_story_asks_about_its_second_or_third_coloured_thing(self):
        tokenizer = stories.training_tokenizer()
        for kind, n in (("written: second object", 2), ("written: third object", 3)):
            found = given_layer.written_stories()[kind]
            self.assertEqual(len(found), 60)
            for s in found:
                with self.subTest(story=s.text):
                    told = s.text[:-len(f" the {s.thing} is {s.colour}.")]
                    colours = [w for w in re.findall(r"[a-z]+", told) if w in stories.COLOURS]
                    self.assertEqual(len(set(colours)), n)
                    self.assertEqual(colours[n - 1], s.colour)
                    self.assertIn(s.thing, re.findall(r"[a-z]+", told))
                    stories.encode_question(tokenizer, stories.question(s))     # fits


class RecordedModel(MessageAssertions, unittest.TestCase):
    """The README's raindrop story, on the recorded two-layer model: its answer, and --block and
    --patch on layer 2's question row."""

    @classmethod
    def setUpClass(cls):
        cls.model, cls.blocked, cls.patched, cls.listed = raindrop_figures()
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            cls.readme = " ".join(f.read().split())

    def test_layer_2_weighs_the_colour_asked_about_where_one_layer_answers_the_first(self):
        answer, weights = given_layer.predict(self.model, RAINDROP)
        self.assertEqual(answer, " blue")
        self.assertEqual(max(weights, key=lambda tw: tw[1])[0], " blue")
        one_layer = read_model(os.path.join(HERE, "training", "trained-model.json"))
        self.assertEqual(predict_one_layer(one_layer, RAINDROP)[0], " brown")
        self.assertIn(f"layer 2 puts {max(w for _, w in weights):.4f} of its weight on \" blue\"",
                      self.readme)

    def test_in_a_list_layer_2_weighs_the_row_after_the_thing_asked_about(self):
        answer, weights = self.listed
        top = max(range(len(weights)), key=lambda i: weights[i][1])
        self.assertEqual((answer, [token for token, _ in weights[top - 2:top + 1]]),
                         (" blue", [" blue", " kite", "."]))
        self.assertIn(f"asked \"{LISTED}\", layer 2 puts {weights[top][1]:.4f} of its weight on "
                      f"the \".\" at position {top + 1}, whose row holds \" blue\" and \" kite\"",
                      self.readme)

    def test_block_and_patch_read_layer_2s_question_row_bit_for_bit(self):
        before, _ = self.blocked[0]
        fw = two_layers.forward(self.model["params"], stories.encode_question(
            self.model["tokenizer"], RAINDROP))
        self.assertEqual((before["logits"], before["weights"]),
                         (fw["logits"], fw["row"]["weights"][0]))

    def test_blocking_and_patching_the_colour_give_the_readmes_figures(self):
        (colour, after_colour), (both, after_both) = self.blocked
        values = [f"{p['v']:.4f}" for p in self.patched["positions"][14:17]]
        self.assertEqual([p["token"] for p in self.patched["positions"][14:17]],
                         [" green", ".", " the"])
        self.assertEqual([(colour["answer"], after_colour["answer"]),
                          (both["answer"], after_both["answer"])],
                         [(" blue", " blue"), (" blue", " brown")])
        self.assertIn("`--block 15` gives ' blue' → ' blue', for the \".\" after it holds",
                      self.readme)
        self.assertIn("`--block 15,16`, and it answers as one layer does: ' blue' → ' brown', "
                      "though by another path:", self.readme)
        top = max(range(len(after_both["weights"])), key=after_both["weights"].__getitem__)
        self.assertEqual(after_both["tokens"][top - 2:top + 1], [" brown", " palm", "."])
        self.assertIn(f"most of its weight goes to the \".\" at position {top + 1}, whose row "
                      f"holds \" brown\" and \" palm\".", self.readme)
        self.assertIn(f"position 15 restores {values[0]} of the logit difference, that of position "
                      f"16 {values[1]} and that of position 17 {values[2]}:", self.readme)

    def test_patching_the_mixed_row_keeps_the_corrupted_runs_stream(self):
        """The clean mixed row put into the corrupted run restores what it restores beside the
        corrupted stream x1[T−1], which reads the object the two questions differ in."""
        clean = "mia has a red ball. tom has a blue cup. the ball is"
        corrupted = clean.replace("the ball is", "the cup is")
        params, tokenizer = self.model["params"], self.model["tokenizer"]
        ran = [two_layers.forward(params, stories.encode_question(tokenizer, text))
               for text in (clean, corrupted)]
        patched = matmul(add(ran[1]["x1"][-1:], matmul(ran[0]["row"]["mixed"], params["Wo2"])),
                         params["U"])[0]
        red, blue = stories.COLOURS.index("red"), stories.COLOURS.index("blue")
        d = [logits[red] - logits[blue] for logits in (ran[0]["logits"], ran[1]["logits"], patched)]
        found = interventions.patch(self.model, clean, corrupted)["mixed"]
        self.assertEqual(found, (d[2] - d[1]) / (d[0] - d[1]))
        self.assertLess(found, 0.99)

    def test_a_recorded_model_of_the_wrong_shapes_is_refused_naming_the_weight(self):
        params = self.model["params"]       # each case read as its JSON reads (not written out)
        for name, changed, fragment in (
                ("E", params["E"][:5], "has E of shape (5, 32), expected"),
                ("Wv2", [row[:-1] for row in params["Wv2"]], "has Wv2 of shape (32, 15), expected "
                                                            "(32, 16)"),
                ("U", [row + [0.0] for row in params["U"]], "has U of shape (32, 12), expected "
                                                           "(32, 11)"),
                ("Wo1", params["Wo1"][:-1], "has Wo1 of shape (15, 32), expected (16, 32)")):
            record = {"seed": 1, "layers": 2, "params": dict(params, **{name: changed})}
            with self.subTest(weight=name), mock.patch.object(given_layer, "read_json",
                                                              return_value=record):
                self.assertMessage(ValueError, fragment, given_layer.read_model, "any.json")

    def test_a_story_refused_prints_nothing_before_its_error(self):
        for args in (["--story", "the ball"], ["--story", RAINDROP, "--block", "20"]):
            done = run_script("train_attention.py", "--layers", "2", *args)
            self.assertEqual((done.returncode, done.stdout), (1, ""), done.stderr)

    def test_the_command_says_layer_1_is_given_beside_patching(self):
        done = run_script("train_attention.py", "--layers", "2", "--patch", RAINDROP, "--into",
                          RAINDROP.replace("is blue", "is green"))
        self.assertEqual(done.stdout.splitlines()[:2],
                         [f"({given_layer.GIVEN})",
                          "clean answer ' blue', corrupted answer ' green'"])

    def test_blocking_names_layer_2s_weights_as_the_story_does(self):
        done = run_script("train_attention.py", "--layers", "2", "--story", RAINDROP, "--block",
                          "15")
        self.assertEqual(done.stdout.splitlines()[2],
                         "layer 2's weight on each token, before → after:", done.stderr)


@unittest.skipUnless(os.path.exists(RUN_PATH), "two-layer-run.json is not recorded yet")
class Record(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(RUN_PATH, encoding="utf-8") as f:
            cls.record = json.load(f)

    def test_the_record_says_layer_1_is_given_and_holds_every_set_for_each_seed(self):
        self.assertEqual(self.record["given"], given_layer.GIVEN)
        for seed in self.record["seeds"]:
            for model in ("two layers", "one layer"):
                self.assertEqual(list(seed[model]), list(stories.HELD_OUT + stories.TWO_LAYER_SETS)
                                 + list(given_layer.written_stories()))

    def test_each_recorded_training_lowers_its_loss(self):
        for seed in self.record["seeds"]:
            losses = [entry["mean_loss"] for entry in seed["losses"]]
            self.assertLess(losses[-1], losses[0] / 4, seed["seed"])

    def test_the_readme_quotes_the_recorded_figures(self):
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertIn(tables.two_layer_table(self.record["seeds"]), readme)
        self.assertIn(curve_table(self.record["seeds"]), readme)
        for seed in self.record["seeds"]:      # the seconds each training took, as measured
            self.assertIn(f"{seed['seconds']} s (seed {seed['seed']})", readme.replace("\n", " "))
        self.assertIn(given_layer.GIVEN, readme.replace("\n", " "))

    def test_the_readme_says_the_recorded_spans_and_when_the_second_object_is_found(self):
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())

        def span(kind, model="two layers"):
            found = [seed[model][kind] for seed in self.record["seeds"]]
            return str(found[0]) if min(found) == max(found) else f"{min(found)} to {max(found)}"

        self.assertIn(f"the second of two things {span('second object')} of 60, the middle of "
                      f"three {span('middle of three')} and the third of three "
                      f"{span('third object')}, against {span('second object', 'one layer')}, "
                      f"{span('middle of three', 'one layer')} and "
                      f"{span('third object', 'one layer')} for one layer; on the stories "
                      f"written by hand {span('written: second object')} and "
                      f"{span('written: third object')}", readme)
        self.assertIn(f"The first of three, whose colour is the story's first, two layers answer "
                      f"{span('first of three')} of 60, and one layer "
                      f"{span('first of three', 'one layer')}.", readme)
        self.assertIn(f"two layers answer {span('new words')} of 60", readme)
        distractors = span("distractor's object")
        self.assertIn(f"the distractor's thing {distractors}.", readme)
        least = {kind: min(seed["two layers"][kind] for seed in self.record["seeds"])
                 for kind in self.record["seeds"][0]["two layers"]}
        self.assertGreaterEqual(min(least[kind] for kind in stories.TWO_LAYER_SETS
                                    if kind != "distractor's object"), 57)   # two or three things
        named = ("written: second object", "written: third object", "new words",
                 "distractor's object")      # the bar's sentence names these first
        self.assertTrue(all(least[kind] < 57 for kind in named), least)
        short = [f"{kind} ({least[kind]})" for kind in least if least[kind] < 57
                 and kind not in named]      # then every other set short of 57, at its least
        self.assertIn(f"nor, by a story or two, on {', '.join(short[:-1])} and {short[-1]};",
                      readme.replace(" at the least", ""))
        self.assertIn(f"{given_layer.STORIES:,} fresh stories a seed", readme)
        self.assertIn(f"every {given_layer.CURVE_EVERY:,} stories of the training", readme)
        self.assertEqual({seed["stories"] for seed in self.record["seeds"]}, {given_layer.STORIES})
        reached = [next(point["stories"] for point in seed["second_object_curve"]
                        if point["correct"] >= 57) for seed in self.record["seeds"]]
        self.assertIn(f"reaches 57 at {reached[0]:,}, {reached[1]:,} and {reached[2]:,} stories",
                      readme)

    def test_the_curve_scores_the_second_object_every_curve_every_up_to_the_final_score(self):
        for seed in self.record["seeds"]:
            curve = seed["second_object_curve"]
            self.assertEqual([point["stories"] for point in curve],
                             list(range(given_layer.CURVE_EVERY, seed["stories"] + 1,
                                        given_layer.CURVE_EVERY)))
            self.assertEqual(curve[-1]["correct"], seed["two layers"]["second object"])


if __name__ == "__main__":
    unittest.main()

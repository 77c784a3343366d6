"""train_attention.py: the stories, the bigram, the whole model's gradient, and a short training."""

import json
import math
import os
import random
import unittest

import train_attention as tr
from bpe import train as train_tokenizer
from helpers_for_tests import HERE, MessageAssertions, run_main

SEED = 20261129
# Central differences with ε = 1e-6 on a loss of size ~1: truncation O(ε²) and rounding about
# 1e-16/ε = 1e-10, so a right gradient agrees within 1e-7 and a dropped path misses by far more.
EPS, GRAD_TOLERANCE = 1e-6, 1e-7


class Stories(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.train, cls.test, cls.shifted = tr.stories(SEED)

    def test_the_answer_is_the_colour_of_the_first_sentence(self):
        for text, colour in self.train + self.test:
            first, *_, last = text.split(". ")
            named = [c for c in tr.COLOURS if f" {c} " in f" {first} " or first.endswith(f" {c}")]
            self.assertEqual(named, [colour], text)
            self.assertTrue(last.endswith(f" is {colour}."), text)
            middle = text[len(first):-len(last)]
            self.assertFalse(any(f" {c} " in middle for c in tr.COLOURS),
                             f"a filler names a colour: {text}")

    def test_test_stories_are_not_in_the_training_set(self):
        self.assertEqual(len(self.test), tr.TEST_STORIES)
        self.assertFalse({text for text, _ in self.test} & {text for text, _ in self.train})

    def test_shifted_stories_are_the_test_stories_one_sentence_later(self):
        self.assertEqual(self.shifted,
                         [(f"{tr.SHIFT} {text}", colour) for text, colour in self.test])

    def test_the_colour_sits_at_several_places(self):
        tokenizer = train_tokenizer("\n".join(text for text, _ in self.train), 10_000)
        places = set()
        for text, colour in self.train:
            prompt, answer = tr.question(tokenizer.encode(text))
            places.add(len(prompt) - prompt.index(answer))
        self.assertGreaterEqual(len(places), 10, "the colour should not always be as far back")
        self.assertGreaterEqual(max(places), 20)
        self.assertLessEqual(min(places), 8)

    def test_every_word_is_one_token_so_the_colour_is_one_prediction(self):
        texts = [text for text, _ in self.train + self.test + self.shifted]
        tokenizer = train_tokenizer("\n".join(texts), 10_000)
        for text in texts[:200]:
            tokens = tokenizer.tokens(text)
            self.assertEqual(len(tokens), len(text.split()) + text.count(".") + text.count(",")
                             + text.count("!"), text)
        for colour in tr.COLOURS:
            self.assertEqual(tokenizer.tokens(" " + colour), [" " + colour])


class Bigram(unittest.TestCase):

    def test_bigram_predicts_the_most_frequent_follower_smallest_on_a_tie(self):
        """After 1: 2 twice, 3 once -> 2. After 2: 1 once, 3 once -> the tie goes to 1."""
        self.assertEqual(tr.bigram([[1, 2, 1, 2], [1, 3], [2, 3]]), {1: 2, 2: 1})


class Gradient(unittest.TestCase):

    def test_whole_model_gradient_matches_central_differences_in_every_parameter(self):
        """Embeddings -> attention -> residual -> unembedding -> loss, on a prompt of 5 tokens."""
        model = tr.init_model(vocab_size=6, max_len=6, seed=SEED)
        prompt, answer = [3, 1, 4, 1, 5], 2
        _, grads = tr.loss_and_grads(model, prompt, answer)
        for name, matrix in model.items():
            for i, row in enumerate(matrix):
                for j, saved in enumerate(row):
                    row[j] = saved + EPS
                    up = tr.loss_and_grads(model, prompt, answer)[0]
                    row[j] = saved - EPS
                    down = tr.loss_and_grads(model, prompt, answer)[0]
                    row[j] = saved
                    numeric = (up - down) / (2 * EPS)
                    self.assertLess(abs(grads[name][i][j] - numeric), GRAD_TOLERANCE,
                                    f"d{name}[{i}][{j}]: {grads[name][i][j]} vs {numeric}")

    def test_log_softmax_takes_large_logits(self):
        self.assertEqual(tr.log_softmax([1000.0, 1000.0]), [-math.log(2)] * 2)


class ShortTraining(unittest.TestCase):

    def test_the_loss_falls_by_half_in_64_steps(self):
        train, _, _ = tr.stories(SEED)
        tokenizer = train_tokenizer("\n".join(text for text, _ in train), 10_000)
        questions = [tr.question(tokenizer.encode(text)) for text, _ in train[:8]]
        model = tr.init_model(len(tokenizer.vocab), 60, SEED)
        before = sum(tr.loss_and_grads(model, *q)[0] for q in questions)
        adam = tr.Adam(model, steps=64)
        for step in range(64):
            adam.step(model, tr.loss_and_grads(model, *questions[step % len(questions)])[1])
        after = sum(tr.loss_and_grads(model, *q)[0] for q in questions)
        self.assertLess(after, before / 2, f"seed {SEED}: loss {before} -> {after}")


class RecordedRun(MessageAssertions, unittest.TestCase):

    def test_the_recorded_run_holds_its_goals(self):
        with open(os.path.join(HERE, "training-run.json"), encoding="utf-8") as f:
            run = json.load(f)
        self.assertGreaterEqual(run["attention"]["correct"], 57)
        self.assertGreaterEqual(run["shifted"]["correct"], 54)
        self.assertEqual(run["attention"]["total"], 60)
        self.assertEqual(run["config"]["seed"], tr.SEED)
        self.assertEqual(run["config"]["steps"], tr.STEPS)

    def test_the_committed_figure_is_what_svg_draws_of_the_recorded_run(self):
        with open(os.path.join(HERE, "training-run.json"), encoding="utf-8") as f:
            run = json.load(f)
        with open(os.path.join(HERE, "learned-attention.svg"), encoding="utf-8") as f:
            self.assertEqual(f.read(), tr.example_svg(run), "learned-attention.svg is stale: run "
                             "python3 train_attention.py --svg learned-attention.svg")

    def test_write_and_check_refuse_other_settings(self):
        self.assertOneLineError(run_main(tr.main, "--check", "--steps", "5"),
                                "--write and --check record the default run")

    def test_a_bad_step_count_is_one_line(self):
        self.assertOneLineError(run_main(tr.main, "--steps", "0"), "--steps must be at least 1")


if __name__ == "__main__":
    unittest.main()

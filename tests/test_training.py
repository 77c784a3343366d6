"""The colour stories and their model (training/), the recorded run (training-run.json) and
train_attention.py's command line: each set of stories holds what its name says, both bigrams,
the whole model's gradient, Adam's steps, a short training, predict's door, the recorded claims,
and the command line's refusals."""

import functools
import json
import math
import os
import random
import re
import tempfile
import unittest
from collections import Counter

from attention import attention_backward, attention_forward, matmul, softmax_row
from common.gradcheck import central_differences, max_err
from tests.helpers import (GRAD_TOLERANCE, HERE, MessageAssertions, bits,
                           question_row_and_its_gradient, recorded_seed_stories, run_script)
from bpe import chunks
from training import adam, bigrams, model, stories, tables, train
from training.recorded_model import read_model

SEED = 20261129


def sentences(text):
    """'mia has a red ball! the ball is red.' -> ['mia has a red ball', 'the ball is red']: every
    sentence of the generator ends with . ! or ?, and none holds one inside."""
    return [part[:-1] for part in re.split(r"(?<=[.!?]) ", text)]


def colours_in(sentence):
    words = re.split(r"[ ,!?.']+", sentence)
    return [word for word in words if word in stories.COLOURS]


def colour_sentences(s):
    """The indices of the story's sentences that name a colour, its question left out."""
    return [i for i, one in enumerate(sentences(s.text)[:-1]) if colours_in(one)]


def tokens(text):
    return len(stories.training_tokenizer().encode(text))


class Stories(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.train, cls.tests = recorded_seed_stories()

    def test_the_answer_is_the_colour_of_the_first_colour_sentence(self):
        for s in self.train + [s for test in self.tests.values() for s in test]:
            parts = sentences(s.text)
            named = colour_sentences(s)
            self.assertEqual(colours_in(parts[named[0]]), [s.colour], s.text)
            self.assertIn(s.thing, re.split(r"[ ,!?']+", parts[named[0]]), s.text)
            self.assertEqual(parts[-1], f"the {s.thing} is {s.colour}", s.text)
            if s.distractor is None:
                self.assertEqual(len(named), 1, s.text)
            else:
                self.assertEqual(len(named), 2, s.text)
                distractor = parts[named[1]]
                self.assertEqual(colours_in(distractor), [s.distractor], s.text)
                self.assertNotEqual(s.distractor, s.colour, s.text)
                self.assertNotIn(s.thing, re.split(r"[ ,!?']+", distractor), s.text)

    def test_each_held_out_set_is_what_its_name_says(self):
        """Where the first colour sentence stands (after how many lead-ins), how many sentences
        follow it, whether a distractor does, and what else each set's name promises."""
        for kind, test in self.tests.items():
            self.assertEqual(len(test), stories.TEST_STORIES, kind)
            for s in test:
                named, count = colour_sentences(s), len(sentences(s.text))
                first, after = named[0], count - named[0] - 2     # sentences after the first
                lead_ins, fillers, distractor = {
                    "plain": (range(1), range(6), False),
                    "distractor early": (range(1), range(1, 7), True),
                    "distractor late": (range(1), range(1, 7), True),
                    "lead-in": (range(1, 4), range(6), False), "shifted": ([1], range(6), False),
                    "long": (range(1), range(6, 9), False),
                    "long lead-in": (range(4, 9), range(6), False),
                    "late colour": (range(9, 15), range(2), False),
                    "lead-in and distractor": (range(1, 9), range(1, 7), True),
                    "punctuation": (range(5), range(7), None),
                    "new words": (range(5), range(6), None),
                    "full context": (range(15), range(1, 16), True)}[kind]
                self.assertIn(first, lead_ins, f"{kind}: {s.text}")
                self.assertIn(after, fillers, f"{kind}: {s.text}")
                if distractor is not None:
                    self.assertEqual(len(named) == 2, distractor, f"{kind}: {s.text}")
                if kind == "distractor early":
                    self.assertEqual(named, [0, 1], s.text)
                if kind == "distractor late":
                    self.assertEqual(named, [0, count - 2], s.text)
                self.assertLessEqual(tokens(stories.question(s)), stories.MAX_TOKENS, s.text)
                if kind == "full context":
                    self.assertGreaterEqual(tokens(stories.question(s)),
                                            stories.MAX_TOKENS * 3 // 4)
                if kind == "punctuation":     # every colour-free sentence holds a mark but its end
                    for i, part in enumerate(sentences(s.text)[:-1]):
                        if i not in named:
                            self.assertTrue(set(part) & set(",!?'") or s.text[
                                len(" ".join(sentences(s.text)[:i + 1])) + i] in "!?", part)
            if kind in ("lead-in", "long lead-in", "late colour"):
                self.assertEqual({colour_sentences(s)[0] for s in test},
                                 {"lead-in": {1, 2, 3}, "long lead-in": set(range(4, 9)),
                                  "late colour": set(range(9, 15))}[kind], kind)
        self.assertEqual(self.tests["shifted"],
                         [s._replace(text=f"{stories.SHIFTING_SENTENCE} {s.text}")
                          for s in self.tests["plain"]])

    def test_the_new_words_set_uses_no_word_a_training_story_holds(self):
        trained = {word for s in self.train for word in re.split(r"[ ,!?.']+", s.text)}
        trained |= {word for words in stories.STORY_WORDS.values() for phrase in words
                    for word in phrase.split()}
        new = {word for s in self.tests["new words"] for sentence in sentences(s.text)[:-1]
               for word in re.split(r"[ ,!?']+", sentence)} - set(stories.COLOURS)
        common = {"the", "a", "an", "is", "of", "in", "at", "was", "has", "had", "got", "so",
                  "all", "then", "why", "what", "it", "look", "too", "one", "day", "today", "oh",
                  "later", "there", "found", "bought", "colour", "painted", "liked", "best", "big",
                  "small", "new", "old", "little", "s", "does", "t", "nobody", "knew", "where",
                  "gone", "outside", "again", "near", "everyone", "friend", "for", "made",
                  "grandpa", "couldn", "stop", "thinking", "about", "wasn", "anymore", "afternoon",
                  "morning", "by", "with", "isn"}
        self.assertEqual((new - common) & trained, set())
        for words in stories.NEW_WORDS[:-1]:       # every list but the fillers
            self.assertFalse(set(words) & trained, words)

    def test_no_word_of_the_vocabulary_is_or_holds_a_colour(self):
        for name, words in stories.STORY_WORDS.items():
            for phrase in words:
                self.assertRegex(phrase, r"^[a-z]+( [a-z]+)*$", name)
                for colour in stories.COLOURS + ["gray"]:
                    self.assertNotIn(colour, phrase, name)
        for words in stories.NEW_WORDS:
            for phrase in words:
                for colour in stories.COLOURS:
                    self.assertNotIn(colour, phrase.replace("{", " "))

    def test_held_out_stories_are_neither_trained_on_nor_repeated(self):
        texts = [s.text for kind, test in self.tests.items() for s in test]
        self.assertEqual(len(set(texts)), len(texts))
        self.assertFalse(set(texts) & {s.text for s in self.train})

    def test_training_stories_put_the_first_colour_anywhere_in_the_context(self):
        """story_shape's shares: no lead-in in 30 of 100, 1 to 3 in 25, 4 to 8 in 20 and 9 to 18
        in 25 (fewer once a story that does not fit is drawn again); a distractor in half, at every
        place after the first sentence; and the first colour at every tenth of the context."""
        count = len(self.train)
        named = {s: colour_sentences(s) for s in self.train}
        lead_ins = Counter(named[s][0] for s in self.train)
        shares = [sum(lead_ins[n] for n in part) / count
                  for part in (range(1), range(1, 4), range(4, 9), range(9, 19))]
        for share, (low, high) in zip(shares, [(0.25, 0.4), (0.2, 0.35), (0.15, 0.3),
                                               (0.1, 0.3)]):
            self.assertTrue(low < share < high, shares)
        with_distractor = [s for s in self.train if s.distractor]
        self.assertTrue(0.45 < len(with_distractor) / count < 0.55, len(with_distractor))
        gaps = Counter(named[s][1] - named[s][0] for s in with_distractor)
        self.assertLessEqual(set(range(1, 11)), set(gaps), "a distractor at each of 10 places")
        places = {tokens(stories.question(s)[:stories.question(s).index(f" {s.colour}")]) * 10
                  // stories.MAX_TOKENS for s in self.train}
        self.assertEqual(places, set(range(10)))
        self.assertEqual(max(tokens(stories.question(s)) for s in self.train), stories.MAX_TOKENS)

    def test_every_word_of_the_vocabulary_is_one_token_after_a_space_and_first(self):
        tokenizer = stories.training_tokenizer()
        vocabulary = stories.story_vocabulary()
        self.assertGreater(len(vocabulary), 2000)
        for word in vocabulary:
            self.assertEqual((len(tokenizer.encode(" " + word)), len(tokenizer.encode(word))),
                             (1, 1), word)

    def test_every_word_of_the_stories_is_one_token_so_the_colour_is_one_prediction(self):
        """Every word the generator writes, with its leading space or first in a story, and every
        mark, is one token (the made-up words of some training fillers are left out: they are
        made to be pieces)."""
        tokenizer = stories.training_tokenizer()
        checked = set()         # a chunk met again is the same check
        for kind in ("plain", "lead-in", "long", "punctuation", "full context"):
            for s in self.tests[kind]:
                for chunk in [c for c in chunks(s.text) if c not in checked]:
                    self.assertEqual(len(tokenizer.encode(chunk)), 1, f"{chunk!r} in {s.text}")
                    checked.add(chunk)

    def test_each_cannot_set_asks_about_the_second_of_two_colours(self):
        """second object: both colours in the first sentence; distractor's object: the second
        colour in the second sentence. Either way the question's object is the second colour's,
        and no story is one of stories(SEED) or repeated."""
        sets = stories.cannot_stories(train.SEED, recorded_seed_stories())
        seen = {s.text for s in self.train} | {s.text for t in self.tests.values() for s in t}
        texts = [s.text for test in sets.values() for s in test]
        self.assertEqual(len(set(texts)), len(texts))
        self.assertFalse(set(texts) & seen)
        for kind, test in sets.items():
            self.assertEqual(len(test), stories.TEST_STORIES, kind)
            for s in test:
                parts = sentences(s.text)
                named = colour_sentences(s)
                told = [c for i in named for c in colours_in(parts[i])]
                self.assertEqual(told, [s.distractor, s.colour], f"{kind}: {s.text}")
                self.assertEqual(named, [0] if kind == "second object" else [0, 1], s.text)
                words = parts[named[-1]].split()
                if kind == "second object":      # "… a red ball and a blue kite": the kite
                    self.assertEqual(words[words.index(s.colour) + 1], s.thing, s.text)
                else:
                    self.assertIn(s.thing, words, s.text)
                    self.assertNotIn(s.thing, parts[0].split(), s.text)
                self.assertEqual(parts[-1], f"the {s.thing} is {s.colour}", s.text)

    def test_a_question_about_an_unseen_object_names_none_of_the_story(self):
        for s in self.tests["plain"]:
            text = stories.unseen_question(s)
            other = text.split()[-2]
            self.assertIn(other, stories.OBJECTS)
            self.assertNotIn(other, s.text.replace(".", " ").split(), s.text)
            self.assertEqual(text.removesuffix(f"the {other} is"),
                             stories.question(s).removesuffix(f"the {s.thing} is"))


class Bigrams(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        train, cls.tests = recorded_seed_stories()
        cls.train = train[:200]         # a smaller training set: the same bigrams' rules
        cls.tokenizer = stories.training_tokenizer()
        cls.fitted = bigrams.bigrams(cls.tokenizer, cls.train)

    def test_the_question_bigram_answers_the_most_frequent_colour_after_is(self):
        counts = Counter(s.colour for s in self.train)
        top = max(counts.values())
        expected = min(self.tokenizer.encode(" " + c)[0] for c in counts if counts[c] == top)
        self.assertEqual(self.fitted["question"], {self.tokenizer.encode(" is")[0]: expected})

    def test_the_next_token_bigram_after_is_is_the_word_seen_most_often_there(self):
        after_is = Counter(nxt for s in self.train for word, nxt in
                           zip(s.text.split(), s.text.replace(".", "").split()[1:]) if word == "is")
        self.assertEqual(self.tokenizer.vocab[self.fitted["next token"][self.tokenizer.encode(
            " is")[0]]], " " + after_is.most_common(1)[0][0])

    def test_a_bigram_scores_a_story_when_its_guess_is_the_colour(self):
        is_id, red = self.tokenizer.encode(" is")[0], self.tokenizer.encode(" red")[0]
        test = self.tests["plain"]
        self.assertEqual(bigrams.bigram_score({is_id: red}, self.tokenizer, test),
                         sum(s.colour == "red" for s in test))


class Model(unittest.TestCase):

    def test_whole_model_gradient_matches_central_differences_in_every_parameter(self):
        """Embeddings -> attention -> unembedding -> loss, on a prompt of 3 tokens (E drawn at
        random: at zero, as init_params starts it, a path through E would be tried at one point
        only). The sparse rows of E's gradient are its only rows that are not zeros."""
        rng = random.Random(SEED)
        params = model.init_params(vocab_size=5, seed=SEED, d_model=3, d_head=2)
        params["E"] = [[rng.uniform(-0.5, 0.5) for _ in row] for row in params["E"]]
        prompt, answer = [3, 1, 3], 2
        _, grads = model.loss_and_grads(params, prompt, answer)
        self.assertEqual(sorted(grads["E"]), [1, 3])
        grads["E"] = [grads["E"].get(t, [0.0] * 3) for t in range(5)]

        def loss():
            return -math.log(softmax_row(model.forward(params, prompt)["logits"])[answer])

        numeric = {name: central_differences(loss, matrix) for name, matrix in params.items()}
        self.assertLess(max_err(grads, numeric), GRAD_TOLERANCE)

    def test_the_question_row_alone_is_the_whole_layers_last_row_bit_for_bit(self):
        """forward computes only the layer's last row and loss_and_grads only what reaches it. The
        whole layer (attention_forward, then attention_backward with dLoss/d(out) zero except in
        the last row) gives the same numbers and every gradient to the last bit (as float.hex, so
        a −0.0 would show): on one token, on a last token seen before, on a token repeated."""
        rng = random.Random(SEED)
        params = model.init_params(vocab_size=5, seed=SEED, d_model=4, d_head=3)
        params["E"] = [[rng.uniform(-0.5, 0.5) for _ in row] for row in params["E"]]
        for prompt, answer in (([0], 2), ([0, 1, 0], 3), ([3, 1, 4, 1, 0], 2)):
            with self.subTest(prompt=prompt):
                fw = model.forward(params, prompt)
                full = attention_forward(model.layer(params), fw["x"])
                d_logits = softmax_row(fw["logits"])
                d_logits[answer] -= 1.0
                d_out = question_row_and_its_gradient(self, fw["row"], fw["out"], full, d_logits,
                                                      params["U"])
                expected, d_x = attention_backward(model.layer(params), fw["x"], full, d_out)
                expected["U"] = [[o * d for d in d_logits] for o in full["out"][-1]]
                expected["E"] = {}
                for t, d_row in zip(prompt, d_x):
                    expected["E"][t] = [g + d for g, d in zip(expected["E"].get(t, [0.0] * 4),
                                                              d_row)]
                _, grads = model.loss_and_grads(params, prompt, answer)
                self.assertEqual(bits(grads), bits(expected))

    def test_the_position_is_fixed_and_grows_with_the_place(self):
        """position(i) is the same for every seed and model, and each of its scales grows with
        i, so that the earliest of two colours is told apart at any two places."""
        rows = [model.position(i) for i in range(stories.MAX_TOKENS)]
        for column in range(2):
            values = [row[column] for row in rows]
            self.assertEqual(values, sorted(set(values)), column)
        self.assertEqual({v for row in rows for v in row[2:]}, {0.0})
        params = model.init_params(vocab_size=3, seed=SEED)
        self.assertEqual(model.embed(params, [2, 0]), [model.position(0), model.position(1)])

    def test_adam_moves_a_weight_by_the_rate_of_its_step_against_its_gradient(self):
        """With a constant gradient, m̂ = g and ŝ = g², so each step moves a weight by the step's
        rate against the sign of g: lr, then lr/2 as the rate falls to 0 over 2 steps; a weight
        with no gradient stays. ADAM_EPS = 1e-8 beside |g| ≥ 0.5 shortens a step by at most a
        relative 2e-8: 3e-9 of the 0.15 moved."""
        params = {"W": [[1.0, 2.0, 3.0]]}
        optimizer = adam.Adam(params, steps=2, learning_rate=0.1)
        for _ in range(2):
            optimizer.step(params, {"W": [[0.5, -2.0, 0.0]]})
        for w, expected in zip(params["W"][0], [1.0 - 0.15, 2.0 + 0.15, 3.0]):
            self.assertAlmostEqual(w, expected, delta=1e-8)

    def test_a_row_no_prompt_reaches_keeps_what_it_was_running_means_and_all(self):
        """E's gradient holds the prompt's rows alone, and Adam steps only the rows it is given:
        a token no prompt holds keeps E's starting zeros however long the training."""
        params = model.init_params(vocab_size=6, seed=SEED, d_model=4, d_head=2)
        optimizer = adam.Adam(params, steps=20)
        for step in range(20):
            _, grads = model.loss_and_grads(params, [step % 3, 3, 4], step % 2)
            self.assertEqual(sorted(grads["E"]), [step % 3, 3, 4])
            optimizer.step(params, grads)
        self.assertEqual(params["E"][5], [0.0] * 4)
        self.assertEqual(optimizer.mean_grad["E"][5], [0.0] * 4)
        for t in range(5):
            self.assertTrue(any(params["E"][t]), t)

    def test_the_loss_falls_by_half_in_60_steps_of_a_task_only_attention_can_do(self):
        """Every prompt ends with the same tokens; the answer is its first token."""
        rng = random.Random(SEED)
        pairs = [([first, 4, 5, 6], first) for first in range(4)]
        params = model.init_params(vocab_size=7, seed=SEED, d_model=8, d_head=4)
        before = sum(model.loss_and_grads(params, *pair)[0] for pair in pairs)
        optimizer = adam.Adam(params, steps=60, learning_rate=0.1)
        for _ in range(60):
            optimizer.step(params, model.loss_and_grads(params, *rng.choice(pairs))[1])
        after = sum(model.loss_and_grads(params, *pair)[0] for pair in pairs)
        self.assertLess(after, before / 2, f"seed {SEED}: loss {before} -> {after}")


class Predict(MessageAssertions, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        tokenizer = stories.training_tokenizer()
        cls.model = {"tokenizer": tokenizer,
                     "params": model.init_params(len(tokenizer.vocab), SEED, d_model=4, d_head=2)}

    def test_predict_gives_a_token_and_the_questions_weight_on_every_token(self):
        text = "look! a dragon has a purple ball. the ball is"
        answer, weights = model.predict(self.model, text)
        self.assertIn(answer, [" " + colour for colour in stories.COLOURS])
        self.assertEqual([token for token, _ in weights], self.model["tokenizer"].tokens(text))
        self.assertAlmostEqual(sum(w for _, w in weights), 1.0, delta=1e-12)

    def test_a_story_of_max_tokens_is_answered(self):
        text = "the ball is " * 42 + "a is"
        _, weights = model.predict(self.model, text)
        self.assertEqual(len(weights), stories.MAX_TOKENS)

    def test_a_model_of_the_wrong_parts_is_refused_naming_the_part(self):
        tokenizer, params = self.model["tokenizer"], self.model["params"]
        for wrong, fragment in [
                ({}, "it has no tokenizer and no params"),
                ({"params": params}, "it has no tokenizer"),
                ({"tokenizer": "x", "params": params},
                 "tokenizer must be a bpe.Tokenizer, got str"),
                ({"tokenizer": None, "params": params}, "got NoneType"),
                ({"tokenizer": tokenizer, "params": {}}, "params must be a dict of the weights E, "
                                                          "U, Wq, Wk, Wv, Wo, got dict"),
                ({"tokenizer": tokenizer, "params": None}, "got NoneType")]:
            with self.subTest(model=fragment):
                self.assertMessage(TypeError, fragment, model.predict, wrong, "the ball is")

    def test_a_story_is_refused_at_the_door_naming_what_came(self):
        for text, error, fragment in [
                (b"the ball is", TypeError, "a story must be a str, got bytes"),
                ("Mia has a red ball. the ball is", ValueError, "got 'M' at position 1"),
                ("look, Mia has a red Ball. the ball is", ValueError, "got 'M' at position 7"),
                ("Look, Ivan has a ball. the ball is", ValueError, "got 'L' at position 1"),
                ("mia has a red ball. the ball is red.", ValueError,
                 "must end with its question, such as \"the ball is\", got one ending in "
                 "'ll. the ball is red.'"),
                ("the ball is " * 43 + "is", ValueError,
                 f"at most {stories.MAX_TOKENS} tokens, got 130")]:
            self.assertMessage(error, fragment, model.predict, self.model, text)
        self.assertMessage(TypeError, "model must be the dict train_model returns", model.predict,
                           self.model["params"], "the ball is")

    def test_train_model_refuses_a_seed_or_step_count_of_the_wrong_kind(self):
        self.assertMessage(TypeError, "seed must be an int, got str '1'", train.train_model, "1")
        self.assertMessage(TypeError, "steps must be an int, got float 10.0", train.train_model, 1,
                           10.0)
        self.assertMessage(ValueError, "steps must be at least 1, got 0", train.train_model, 1, 0)


class RecordedRun(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(HERE, "training", "training-run.json"), encoding="utf-8") as f:
            cls.recorded = json.load(f)
        cls.seed_1 = cls.recorded["run"]

    def test_the_recorded_run_is_the_codes_configuration(self):
        config = self.seed_1["config"]
        self.assertEqual((config["seed"], config["steps"], config["d_model"], config["d_head"],
                          config["learning_rate"], config["train_stories"]),
                         (train.SEED, train.STEPS, model.D_MODEL, model.D_HEAD, adam.LEARNING_RATE,
                          stories.TRAIN_STORIES))
        self.assertEqual([row["seed"] for row in self.recorded["seeds"]],
                         list(range(1, train.RECORDED_SEEDS + 1)))
        self.assertEqual(self.recorded["seeds"][0], tables.seed_row(self.seed_1))
        self.assertEqual(list(self.seed_1["held_out"]), list(stories.HELD_OUT))

    def test_seeds_1_to_10_answer_at_least_57_of_60_on_every_held_out_set(self):
        for row in self.recorded["seeds"][:train.TUNED_ON]:
            for kind, correct in row["correct"].items():
                self.assertGreaterEqual(correct, train.CLAIM, f"seed {row['seed']}, {kind}")

    def test_every_seed_weighs_the_colour_above_the_distractor(self):
        for row in self.recorded["seeds"]:
            for kind, on_colour in row["weight_on_colour"].items():
                self.assertGreater(on_colour, row["weight_on_distractor"][kind],
                                   f"seed {row['seed']}, {kind}")

    def test_asked_about_the_second_colour_one_layer_answers_the_first(self):
        """At most 3 of 60 answered with the colour asked for, and most with the first colour
        (where the two colours stand three tokens apart a seed may take the later one for the
        first: the README says so)."""
        for kind in stories.CANNOT:
            result = self.seed_1["cannot"][kind]
            self.assertLessEqual(result["correct"], result["total"] - train.CLAIM, kind)
            self.assertGreaterEqual(result["first_colour_answers"], result["total"] * 5 // 6, kind)
        self.assertEqual([list(row["cannot"]) for row in self.recorded["seeds"]],
                         [list(stories.CANNOT)] * train.RECORDED_SEEDS)

    def test_naming_another_object_leaves_almost_every_answer_as_it_was(self):
        """The query at " is" is made of " is" and its place alone: the object the question names
        is one key and value among many, so asking about an object the story never mentions
        instead of the second one leaves the answer as it was, in every seed."""
        for row in self.recorded["seeds"]:
            for kind, same in row["same_for_an_unseen_object"].items():
                self.assertGreaterEqual(same, train.CLAIM, f"seed {row['seed']}, {kind}")

    def test_an_unseen_object_is_answered_with_the_first_colour(self):
        unseen = self.seed_1["unseen_object"]
        first_colour = colours_in(unseen["question"])[0]
        self.assertEqual(unseen["answer"], " " + first_colour)
        self.assertEqual(unseen["first_colour_answers"], unseen["total"])

    def test_a_piece_no_story_trained_scores_below_every_colour_at_its_place(self):
        """Most rows of the recorded E are still the zeros they started as (pieces no training
        story holds: Model's test shows Adam leaves such a row as it is), and such a token is read
        as its place alone. At every fifth place j of every ninth question place T (and the last
        of each), each colour's key scores above such a token's at j, in the recorded model."""
        recorded = read_model(os.path.join(HERE, "training", "trained-model.json"))
        tokenizer, params = recorded["tokenizer"], recorded["params"]
        unseen = [t for t, row in enumerate(params["E"]) if not any(row)]
        self.assertGreater(len(unseen), len(params["E"]) // 2)
        is_id = tokenizer.encode(" is")[0]
        colours = [tokenizer.encode(" " + c)[0] for c in stories.COLOURS]

        @functools.lru_cache(maxsize=None)      # a place's keys serve every T
        def key(t, j):          # token t's key at place j
            return matmul([[e + p for e, p in zip(params["E"][t], model.position(j))]],
                          params["Wk"])[0]

        for T in sorted(set(range(2, stories.MAX_TOKENS, 9)) | {stories.MAX_TOKENS}):
            q = matmul(model.embed(params, [unseen[0]] * (T - 1) + [is_id])[-1:], params["Wq"])[0]
            for j in sorted(set(range(0, T - 1, 5)) | {T - 2}):
                empty = math.fsum(map(float.__mul__, q, key(unseen[0], j)))
                for colour, t in zip(stories.COLOURS, colours):
                    score = math.fsum(map(float.__mul__, q, key(t, j)))
                    self.assertGreater(score, empty, f"T={T}, place {j}, {colour}")

    def test_the_committed_figure_is_what_svg_draws_of_the_recorded_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "figure.svg")
            done = run_script("train_attention.py", "--svg", path)
            self.assertEqual(done.returncode, 0, done.stderr)
            kept_path = os.path.join(HERE, "training", "learned-attention.svg")
            with open(path, encoding="utf-8") as drawn, open(kept_path, encoding="utf-8") as kept:
                self.assertEqual(kept.read(), drawn.read(), "learned-attention.svg is stale: run "
                                 "python3 train_attention.py --svg learned-attention.svg")


class CommandLine(MessageAssertions, unittest.TestCase):

    def test_counts_below_one_are_refused_with_one_line(self):
        for args in (["--seeds", "0"], ["--seeds", "-1"], ["--steps", "0"]):
            done = run_script("train_attention.py", *args)
            self.assertOneLineError(done, f"{args[0]} must be at least 1, got {args[1]}")
            self.assertEqual(done.returncode, 2, args)

    def test_options_that_conflict_are_refused_with_exit_2(self):
        for args, fragment in [
                (["--seeds", "2", "--svg", "f.svg"], "--svg draws the recorded run: drop --seeds"),
                (["--check", "--steps", "5"], "--write and --check record the default run"),
                (["--write", "--story", "the ball is"], "drop --story"),
                (["--svg", "f.svg", "--seed", "2"], "drop --seed"),
                (["--all-seeds"], "--all-seeds goes with --check"),
                (["--seeds", "2", "--seed", "3"], "--seeds trains seeds 1…N")]:
            done = run_script("train_attention.py", *args)
            self.assertOneLineError(done, fragment)
            self.assertEqual(done.returncode, 2, args)

    def test_a_story_it_cannot_read_is_refused_before_training(self):
        for story, fragment in [("Mia has a red ball. the ball is", "got 'M' at position 1"),
                                ("mia has a red ball.", "must end with its question"),
                                ("the ball is " * 43 + "is",
                                 f"at most {stories.MAX_TOKENS} tokens, got 130")]:
            done = run_script("train_attention.py", "--story", story)
            self.assertOneLineError(done, fragment)
            self.assertNotIn("step", done.stderr)

    def test_story_prints_the_answer_and_a_weight_for_every_token_by_its_position_and_label(self):
        story = "mia has a red ball. tom has a blue cup too. the ball is"
        done = run_script("train_attention.py", "--story", story, "--steps", "1")
        self.assertEqual(done.returncode, 0, done.stderr)
        answer, heading, _, *rows = done.stdout.splitlines()
        self.assertRegex(answer, r"^answer: '.+'$")
        self.assertEqual(heading, "the question's weight on each token:")
        self.assertEqual(len(rows), len(story.replace(".", " .").split()))
        self.assertAlmostEqual(sum(float(row.split()[2]) for row in rows), 1.0, delta=1e-3)
        labels = [row.split()[1] for row in rows]     # a repeated token is told apart by place
        self.assertEqual(len(set(labels)), len(labels), labels)
        self.assertIn("␣ball@5", labels)
        for n, (row, label) in enumerate(zip(rows, labels), 1):    # position and @ from 1
            self.assertTrue(row.startswith(f"{n} ") and label.endswith(f"@{n}" * ("@" in label)))

    def test_check_without_a_record_says_so_before_training(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = run_script("train_attention.py", "--check", folder=tmp)
        self.assertOneLineError(done, "training-run.json")
        self.assertNotIn("step", done.stderr)


if __name__ == "__main__":
    unittest.main()

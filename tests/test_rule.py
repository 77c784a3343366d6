"""The rule the one-layer model learned (training/rule.py, rule-run.json): each set of stories
holds the case its name says, and training/README.md quotes the record and commands that answer
what it says they answer."""

import json
import os
import random
import re
import unittest

from tests.helpers import HERE, recorded_seed_stories, run_script
from training.model import predict
from training.recorded_model import read_model
from training.rule import RULE_SETS, SURNAMES, earliest_colour, rule_story
from training.stories import COLOURS, question, story_ids, training_tokenizer

SEED = 20261129


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def flat(text):
    return re.sub(r"\s+", " ", text)


def recorded_rule():
    """rule-run.json's sets, as --write wrote them."""
    return json.loads(read(os.path.join("training", "rule-run.json")))["sets"]


def colour_words(text):
    """The colour words of text, in order: 'mr brown has a red cup' -> ['brown', 'red']."""
    return [word for word in re.findall(r"[a-z]+", text) if word in COLOURS]


def tokens_between(text, first, second):
    """How many tokens stand between the first colour word's token and the second's."""
    tokens = training_tokenizer().tokens(text)
    return tokens.index(" " + second) - tokens.index(" " + first) - 1


class RuleStories(unittest.TestCase):

    def test_a_few_stories_of_each_set_have_the_shape_its_name_says(self):
        """The question is about the thing whose colour is asked for; the earliest colour word is
        that colour in the control and the opening, the other colour in every other set."""
        rng = random.Random(SEED)
        for kind in RULE_SETS:
            for _ in range(8):
                s = rule_story(rng, kind)
                text = question(s)
                with self.subTest(kind=kind, story=text):
                    self.assertRegex(text, rf"[.!?] the {s.thing} is$")
                    told = text[:-len(f" the {s.thing} is")]
                    self.assertIn(s.colour, colour_words(told))
                    agree = kind in ("control", "opens with its colour")
                    self.assertEqual(earliest_colour(text), s.colour if agree else s.distractor)
                    if kind == "control":
                        self.assertEqual(colour_words(told), [s.colour, s.distractor])
                    elif kind == "denied colour":
                        self.assertRegex(told, rf"\bnot {s.distractor}[.,] it (is|was) "
                                               rf"{s.colour}\.")
                    elif kind == "colour as a name":
                        self.assertIn(s.distractor, SURNAMES)
                        self.assertRegex(told, rf"(^|\. )mrs? {s.distractor}\b")
                    elif kind == "colour as a fruit":
                        self.assertIn(" ate an orange " if " ate " in told else " an orange ",
                                      told)
                        self.assertNotEqual(s.colour, "orange")
                    elif kind == "two colours close":
                        self.assertIn(tokens_between(told, s.distractor, s.colour), (3, 4))
                    else:
                        self.assertTrue(text.startswith(f"{s.colour} was "))
                        self.assertEqual(colour_words(told), [s.colour])

    def test_a_story_opening_with_its_colour_is_read_as_that_colours_trained_token(self):
        """Read after a space, the first word is " white", which every colour sentence trains,
        not "white", which no story trains; the recorded model answers it."""
        text = "white was the cat's hat. the hat is"
        tokenizer = training_tokenizer()
        self.assertEqual(story_ids(tokenizer, text), tokenizer.encode(" " + text))
        answer, weights = predict(read_model(os.path.join(HERE, "training", "trained-model.json")),
                                  text)
        self.assertEqual((weights[0][0], answer), (" white", " white"))

    def test_no_story_of_the_recorded_run_opens_with_a_colour_so_each_reads_as_written(self):
        """So story_ids reads every training and held-out story as tokenizer.encode does, and
        the recorded run is what it was before stories opening with a colour were read after a
        space."""
        train, tests = recorded_seed_stories()
        for s in train + [s for test in tests.values() for s in test]:
            self.assertNotIn(re.match(r"[a-z]+", s.text).group(), COLOURS, s.text)
        tokenizer = training_tokenizer()
        text = "mia has a red ball. the ball is"
        self.assertEqual(story_ids(tokenizer, text), tokenizer.encode(text))

    def test_the_earliest_colour_word_is_the_first_word_that_is_a_colour(self):
        self.assertEqual(earliest_colour("olga ate an orange. olga has a red kite. the kite is"),
                         "orange")
        self.assertEqual(earliest_colour("reddish kites are greyer. the kite is"), None)


class Readme(unittest.TestCase):

    def test_the_readme_quotes_every_count_of_rule_run_json(self):
        sets = recorded_rule()
        self.assertEqual(list(sets), list(RULE_SETS))
        table = ("| stories | the colour asked for | the earliest colour word | a colour the story "
                 "does not name |\n|---|---|---|---|\n"
                 + "".join(f"| {kind} | {one['asked']} | {one['earliest']} | {one['unnamed']} |\n"
                           for kind, one in sets.items()))
        self.assertIn(table, read(os.path.join("training", "README.md")))

    def test_each_readme_command_answers_what_the_readme_says_it_answers(self):
        readme = read(os.path.join("training", "README.md"))
        for kind, one in recorded_rule().items():
            story, answer = one["example"]["story"], one["example"]["answer"]
            shown = (f"# {kind}: answers {answer!r}\n"
                     f"python3 train_attention.py --story \"{story}\"\n")
            with self.subTest(kind=kind):
                self.assertIn(shown, readme)
                done = run_script("train_attention.py", "--story", story)
                self.assertEqual(done.stdout.splitlines()[0], f"answer: {answer!r}", done.stderr)


if __name__ == "__main__":
    unittest.main()

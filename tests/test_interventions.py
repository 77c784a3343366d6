"""The recorded model (trained-model.json) and the interventions on it (training/interventions.py),
from Python and from train_attention.py's command line: the record gives back the trained model
bit for bit and is the recorded run's; blocking renormalises and ablating does not; patching
restores what it should; every refusal is one line."""

import functools
import json
import math
import os
import re
import tempfile
import unittest
from unittest import mock

from attention import attention_forward
from bpe import Tokenizer
from common.golden import to_json
from tests.helpers import HERE, MessageAssertions, recorded_seed_stories, run_script
from training import interventions as iv, recorded_model
from training.model import D_HEAD, embed, forward, init_params, layer, predict
from training.recorded_model import model_from_record, model_record, read_model
from training.stories import ALPHABET, COLOURS, HELD_OUT, training_tokenizer
from training.train import SEED, STEPS

MODEL_PATH = os.path.join(HERE, "training", "trained-model.json")
EXAMPLE = "tom has a green kite. sam has a blue car too. the kite is"     # a distractor's story

# Stories written by hand, not by the generator: other sentence forms and orders, the colour
# swapped between clean and corrupted
OTHER_WAY = [("the kite of zoe is pink. the kite is", "the kite of zoe is black. the kite is"),
             ("look! ana has a new red bike. max runs. the bike is",
              "look! ana has a new blue bike. max runs. the bike is"),
             ("it is late. tom has a small green hat. they sing. the hat is",
              "it is late. tom has a small white hat. they sing. the hat is"),
             ("max is happy. the sun is hot. lily has a white car. the car is",
              "max is happy. the sun is hot. lily has a pink car. the car is"),
             ("mia has a red ball and a hat. the ball is",
              "mia has a blue ball and a hat. the ball is"),
             ("my dog has a green ball. the ball is", "my dog has a pink ball. the ball is")]


def bits(value):
    """Every float of nested lists as its hex text, so that −0.0 and 0.0 differ."""
    if isinstance(value, list):
        return [bits(item) for item in value]
    if isinstance(value, dict):
        return {key: bits(item) for key, item in value.items()}
    return value.hex()


@functools.lru_cache(maxsize=None)
def recorded():
    return read_model(MODEL_PATH)


def small_model():
    """A model of d_model 3 and d_head 2 on a tokenizer of three merges: its record is a few
    kilobytes where the recorded model's is 1.8 MB."""
    tokenizer = Tokenizer(ALPHABET, [(" ", "r"), (" r", "e"), (" re", "d")])
    return {"tokenizer": tokenizer,
            "params": init_params(len(tokenizer.vocab), 3, d_model=3, d_head=2)}


def recorded_run():
    with open(os.path.join(HERE, "training", "training-run.json"), encoding="utf-8") as f:
        return json.load(f)["run"]


class RecordedModel(MessageAssertions, unittest.TestCase):

    def test_the_recorded_model_is_the_recorded_runs_configuration(self):
        model, run = recorded(), recorded_run()
        self.assertEqual((model["seed"], model["steps"]), (SEED, STEPS))
        self.assertEqual(len(model["params"]["Wq"][0]), D_HEAD)
        self.assertEqual(len(model["tokenizer"].vocab), run["config"]["vocab_size"])
        self.assertEqual(model["tokenizer"].merges, training_tokenizer().merges)

    def test_the_recorded_model_draws_the_recorded_runs_example(self):
        """Every row of the figure's map and the answer, as training-run.json recorded them."""
        example = recorded_run()["example"]
        model = recorded()
        answer, _ = predict(model, example["story"])
        ids = model["tokenizer"].encode(example["story"])
        every_row = attention_forward(layer(model["params"]),
                                         embed(model["params"], ids))["weights"]
        self.assertEqual(answer, example["answer"])
        self.assertEqual([[round(w, 4) for w in row] for row in every_row], example["weights"])

    def test_a_model_comes_back_from_its_record_bit_for_bit(self):
        model = small_model()
        model["params"]["E"][0][0] = -0.0
        back = model_from_record(json.loads(to_json(model_record(model, 3, 5))))
        self.assertEqual(bits(back["params"]), bits(model["params"]))
        self.assertEqual(back["tokenizer"].merges, model["tokenizer"].merges)

    def test_each_read_gets_weights_of_its_own_and_a_changed_file_is_read_anew(self):
        """read_model keeps the model of the text it last read: a second read of the same text
        must not share a row with the first, and a file whose text changed is parsed again."""
        record = model_record(small_model(), SEED, STEPS)
        # the model read_model keeps is put back after: the recorded one, which the other tests
        # read, is not parsed again for them
        with tempfile.TemporaryDirectory() as tmp, mock.patch.dict(recorded_model.last_read):
            path = os.path.join(tmp, "trained-model.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write(to_json(record))
            first, second = read_model(path), read_model(path)
            first["params"]["E"][0][0] += 1.0
            self.assertEqual(bits(second["params"]), bits(read_model(path)["params"]))
            self.assertNotEqual(first["params"]["E"][0][0], second["params"]["E"][0][0])
            for steps in (STEPS, STEPS + 1):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(to_json(dict(record, steps=steps)))
                self.assertEqual(read_model(path)["steps"], steps)
            with open(path, "w", encoding="utf-8") as f:
                f.write("{")
            self.assertMessage(ValueError, "trained-model.json is not valid JSON", read_model, path)

    def test_a_record_that_is_not_a_model_is_refused_naming_the_part(self):
        record = model_record(small_model(), SEED, STEPS)
        short_e = dict(record, params=dict(record["params"], E=record["params"]["E"][:-1]))
        vocab, d_model = len(record["params"]["E"]), len(record["params"]["E"][0])
        for bad, fragment in [([], "must hold seed, steps, alphabet, merges and params"),
                              (dict(record, params={}), "must hold the weights E, U, Wq"),
                              (dict(record, merges=[["q", "zz"]]), "holds no tokenizer"),
                              (short_e, f"has E of shape ({vocab - 1}, {d_model}), expected "
                                        f"({vocab}, {d_model})")]:
            self.assertMessage(ValueError, fragment, model_from_record, bad)


class Interventions(MessageAssertions, unittest.TestCase):

    def test_an_unchanged_run_is_forwards_bit_for_bit(self):
        model = recorded()
        before, after = iv.intervene(model, EXAMPLE)
        fw = forward(model["params"], model["tokenizer"].encode(EXAMPLE))
        for run in (before, after):
            self.assertEqual(bits(run["logits"]), bits(fw["logits"]))
            self.assertEqual(bits(run["weights"]), bits(fw["row"]["weights"][0]))

    def test_blocking_shares_the_blocked_weight_out_over_the_rest(self):
        before, after = iv.intervene(recorded(), EXAMPLE, block=[4, 1])
        self.assertEqual((after["weights"][3], after["weights"][0]), (0.0, 0.0))
        kept = 1 - before["weights"][3] - before["weights"][0]
        for j, (b, a) in enumerate(zip(before["weights"], after["weights"])):
            if j not in (0, 3):
                self.assertAlmostEqual(a, b / kept, delta=1e-12 * max(1.0, a), msg=j)
        self.assertAlmostEqual(math.fsum(after["weights"]), 1.0, delta=1e-12)

    def test_ablating_a_value_keeps_every_weight_and_moves_the_answer(self):
        before, after = iv.intervene(recorded(), EXAMPLE, ablate=4)
        self.assertEqual(bits(after["weights"]), bits(before["weights"]))
        self.assertNotEqual(after["logits"], before["logits"])

    def test_blocking_the_first_colour_hands_the_example_to_the_distractor(self):
        before, after = iv.intervene(recorded(), EXAMPLE, block=[4])
        self.assertEqual((before["answer"], after["answer"]), (" green", " blue"))

    def test_positions_from_a_generator_block_as_a_list_does(self):
        """_positions reads block once: a generator is checked and used alike."""
        from_list = iv.intervene(recorded(), EXAMPLE, block=[4, 1])[1]
        from_generator = iv.intervene(recorded(), EXAMPLE, block=(n for n in (4, 1)))[1]
        self.assertEqual(bits(from_generator["weights"]), bits(from_list["weights"]))
        self.assertEqual(from_list["weights"][3], 0.0)

    def test_a_block_that_is_no_list_and_a_bad_story_of_a_pair_are_named(self):
        for block in (None, 4, "4"):
            with self.subTest(block=block):
                self.assertMessage(TypeError, "block takes positions as a list of ints, got "
                                   f"{type(block).__name__}", iv.intervene, recorded(), EXAMPLE,
                                   block)
        self.assertMessage(ValueError, "the clean story: a story may hold lower-case letters",
                           iv.patch, recorded(), "Mia has a red ball. the ball is", EXAMPLE)
        self.assertMessage(ValueError, "the corrupted story: a story may have at most 128 tokens",
                           iv.patch, recorded(), EXAMPLE, "the ball is " * 43 + "is")

    def test_bad_positions_and_pairs_are_refused_naming_what_came(self):
        model = recorded()
        for call, error, fragment in [
                (lambda: iv.intervene(model, EXAMPLE, block=[0]), ValueError,
                 "block takes positions 1 to 16 (the story's tokens, counted from 1), got 0"),
                (lambda: iv.intervene(model, EXAMPLE, ablate=17), ValueError,
                 "ablate takes positions 1 to 16"),
                (lambda: iv.intervene(model, EXAMPLE, block=[True]), TypeError,
                 "positions as ints, got bool True"),
                (lambda: iv.intervene(model, "mia has a red ball. the ball is",
                                      block=range(1, 10)), ValueError,
                 "block removes every source of the question (9 of 9)"),
                (lambda: iv.patch(model, EXAMPLE, "mia has a red ball. the ball is"), ValueError,
                 "the clean story has 16 tokens, the corrupted one 9"),
                (lambda: iv.patch(model, "mia has a red ball. the ball is",
                                  "mia has a red ball. the hat is"), iv.OneAnswer,
                 "both stories are answered ' red'")]:
            with self.subTest(fragment=fragment):
                self.assertMessage(error, fragment, call)


class Patching(unittest.TestCase):

    def assertColourValueCarriesTheAnswer(self, clean, corrupted):
        """The colour's value restores at least iv.RESTORES, no other value moves more than
        iv.MOVES. Returns False, asserting nothing, for two stories answered alike: there is no
        difference to restore (the model gets one of them wrong)."""
        try:
            result = iv.patch(recorded(), clean, corrupted)
        except iv.OneAnswer:
            return False
        tokens = [p["token"] for p in result["positions"]]
        clean_tokens = recorded()["tokenizer"].tokens(clean)
        at = next(n for n, (a, b) in enumerate(zip(clean_tokens, tokens)) if a != b)
        self.assertGreaterEqual(result["positions"][at]["v"], iv.RESTORES, (clean, corrupted))
        for n, p in enumerate(result["positions"]):
            if n != at and p["v"] != "unchanged":
                self.assertLessEqual(abs(p["v"]), iv.MOVES, (clean, corrupted, n))
        return True

    def test_on_the_generators_stories_the_colours_value_carries_the_answer(self):
        """The shortest story of each of seed 1's held-out sets that has one of at most 50 tokens
        (a patch costs T² and the longer sets are the record's), its colour swapped for the next
        one (the pairs the model answers alike cannot be patched): the full count over every
        story and swap is interventions-run.json's."""
        patched = 0
        for kind, test in recorded_seed_stories()[1].items():
            s = min(test, key=lambda s: len(s.text))
            if len(training_tokenizer().encode(s.text)) > 50:
                continue
            with self.subTest(kind=kind, story=s.text):
                patched += self.assertColourValueCarriesTheAnswer(*iv.colour_swapped(s))
        self.assertGreaterEqual(patched, 8)

    def test_on_stories_written_another_way_the_colours_value_carries_the_answer(self):
        for clean, corrupted in OTHER_WAY:
            with self.subTest(story=clean):
                self.assertTrue(self.assertColourValueCarriesTheAnswer(clean, corrupted))

    def test_the_mixed_row_restores_all_and_an_unread_query_nothing(self):
        result = iv.patch(recorded(), *OTHER_WAY[0])
        self.assertEqual(result["mixed"], 1.0)
        self.assertEqual({p["q"] for p in result["positions"]}, {"unchanged"})
        self.assertEqual(list(result), ["clean_answer", "corrupted_answer", "logit_difference",
                                        "positions", "mixed"])
        self.assertEqual(list(result["positions"][0]), ["position", "token", "q", "k", "v"])

    def test_the_recorded_evidence_covers_every_held_out_story(self):
        with open(os.path.join(HERE, "training", "interventions-run.json"),
                  encoding="utf-8") as f:
            found = json.load(f)
        self.assertEqual(list(found["patching"]), list(HELD_OUT))
        tests = recorded_seed_stories()[1]
        for kind, one in found["patching"].items():     # a swap for each colour not the story's
            self.assertEqual(one["pairs"] + one["refused"], sum(
                len(COLOURS) - 1 - (s.distractor is not None) for s in tests[kind]), kind)
            self.assertEqual(one["other_values_moved"], 0, kind)
            self.assertEqual(one["value_least"] < iv.RESTORES,
                             one["value_restores"] < one["pairs"], kind)
        self.assertEqual(list(found["blocking"]),
                         [kind for kind in HELD_OUT if all(s.distractor for s in tests[kind])])

        def answers(value):         # every answer the record holds, at any depth
            if isinstance(value, dict):
                return [a for key, item in value.items() for a in
                        ([item] if key.endswith("answer") else answers(item))]
            return [a for item in value for a in answers(item)] if isinstance(value, list) else []

        found_answers = answers(found["example"])
        self.assertGreaterEqual(len(found_answers), 4)
        for answer in found_answers:
            self.assertIn(answer, [" " + colour for colour in COLOURS])


def evidence_table(found):
    """The patching evidence of every held-out set of interventions-run.json in Markdown, as the
    README quotes it."""
    lines = ["| held-out set | pairs | answered alike | value ≥ 0.9 | value: least | most "
             "| key: largest | other values that moved |", "|---" * 8 + "|"]
    for kind, one in found["patching"].items():
        lines.append(f"| {kind} | {one['pairs']} | {one['refused']} | {one['value_restores']} "
                     f"| {one['value_least']} | {one['value_most']} | {one['key_largest']} "
                     f"| {one['other_values_moved']} |")
    return "\n".join(lines)


class CommandLine(MessageAssertions, unittest.TestCase):

    def test_story_json_is_the_answer_the_tokens_and_a_weight_each(self):
        done = run_script("train_attention.py", "--story", EXAMPLE, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        found = json.loads(done.stdout)
        self.assertEqual(list(found), ["answer", "tokens", "weights"])
        self.assertEqual(found["tokens"], recorded()["tokenizer"].tokens(EXAMPLE))
        self.assertEqual(found["weights"], iv.intervene(recorded(), EXAMPLE)[0]["weights"])
        self.assertEqual(found["answer"], " green")

    def test_block_json_is_the_changed_run_and_its_table_shows_before_and_after(self):
        done = run_script("train_attention.py", "--story", EXAMPLE, "--block", "4", "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout)["answer"], " blue")
        table = run_script("train_attention.py", "--story", EXAMPLE, "--ablate-value", "4")
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("answer: ' green' → ' blue'\n"
                      "the question's weight on each token, before → after:", table.stdout)
        self.assertRegex(table.stdout, r"␣green +0\.\d{4} +0\.\d{4}  ◀ value zeroed")

    def test_patch_prints_a_row_per_position_and_draws_a_cell_per_vector(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "patch.svg")
            done = run_script("train_attention.py", "--patch", OTHER_WAY[0][0], "--into",
                              OTHER_WAY[0][1], "--svg", path)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(path, encoding="utf-8") as f:
                svg = f.read()
        T = len(recorded()["tokenizer"].encode(OTHER_WAY[0][0]))
        self.assertEqual(svg.count('class="cell'), 3 * T)
        self.assertIn("unchanged: not one bit of the logits moved", svg)
        self.assertIn("the question's mixed row: 1.0000", done.stdout)
        found = json.loads(run_script("train_attention.py", "--patch", OTHER_WAY[0][0], "--into",
                                      OTHER_WAY[0][1], "--json").stdout)
        self.assertEqual(len(found["positions"]), T)
        self.assertEqual((found["clean_answer"], found["corrupted_answer"]), (" pink", " black"))

    def test_patch_json_with_svg_keeps_standard_output_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "patch.svg")
            done = run_script("train_attention.py", "--patch", OTHER_WAY[0][0], "--into",
                              OTHER_WAY[0][1], "--json", "--svg", path)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertTrue(os.path.exists(path))
        self.assertEqual(list(json.loads(done.stdout))[:2], ["clean_answer", "corrupted_answer"])
        self.assertIn(f"wrote {path}", done.stderr)

    def test_block_given_twice_blocks_both_as_one_list_does(self):
        twice = run_script("train_attention.py", "--story", EXAMPLE, "--block", "4", "--block", "9")
        once = run_script("train_attention.py", "--story", EXAMPLE, "--block", "4,9")
        self.assertEqual((twice.returncode, twice.stderr), (0, ""))
        self.assertEqual(twice.stdout, once.stdout)
        self.assertEqual(twice.stdout.count("◀ blocked"), 2)

    def test_interventions_that_cannot_run_are_refused_with_one_line(self):
        for args, fragment, code in [
                (["--block", "4"], "add --story TEXT", 2),
                (["--patch", EXAMPLE], "--patch CLEAN and --into CORRUPTED go together", 2),
                (["--json"], "--json goes with --story or --patch", 2),
                (["--story", EXAMPLE, "--block", "4,x"], "--block takes positions counted", 2),
                (["--story", EXAMPLE, "--export", "f.json", "--block", "4"], "drop --patch", 2),
                (["--write", "--patch", EXAMPLE], "drop --patch", 2),
                (["--story", EXAMPLE, "--block", "17"], "block takes positions 1 to 16", 1),
                (["--patch", EXAMPLE, "--into", "the ball is"], "the clean story has 16", 1),
                (["--patch", EXAMPLE, "--into", EXAMPLE, "--block", "4"],
                 "they do not go with --patch", 2),
                (["--story", EXAMPLE, "--ablate-value", "4", "--ablate-value", "9"],
                 "--ablate-value zeroes one token's value: give it once, got 4, 9", 2)]:
            with self.subTest(args=args):
                done = run_script("train_attention.py", *args)
                self.assertOneLineError(done, fragment)
                self.assertEqual(done.returncode, code)

    def test_a_damaged_record_is_one_line_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "training"))
            with open(os.path.join(tmp, "training", "trained-model.json"), "w") as f:
                f.write("{")
            done = run_script("train_attention.py", "--story", EXAMPLE, folder=tmp)
        self.assertOneLineError(done, "trained-model.json is not valid JSON")


# ---- the README's answer to question 5 ----------------------------------------------------------

def recorded_evidence():
    with open(os.path.join(HERE, "training", "interventions-run.json"), encoding="utf-8") as f:
        return json.load(f)


def command_block(*args):
    """A command of train_attention.py and what it prints, as the README shows them."""
    done = run_script("train_attention.py", *args)
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    shown = " ".join(f'"{a}"' if " " in a else a for a in args)
    return f"$ python3 train_attention.py {shown}\n{done.stdout}"


def readme_figures(found):
    """Each figure the READMEs quote from interventions-run.json, as they write it, by the name of
    its place."""
    patching, blocking, example = found["patching"], found["blocking"], found["example"]
    early, late = blocking["distractor early"], blocking["distractor late"]
    pairs = sum(one["pairs"] for one in patching.values())
    restores = sum(one["value_restores"] for one in patching.values())
    least = min(one["value_least"] for one in patching.values())
    shorts = [one["short_weight_most"] for one in patching.values()
              if one["short_weight_most"] is not None]
    at = example["colour_position"] - 1
    both = example["both_swapped"]["result"]["positions"]
    distractor_at = next(n for n, p in enumerate(both) if n != at and p["v"] != "unchanged")
    refused = sum(one["refused"] for one in patching.values())
    restored = (f"In {restores} of {pairs} pairs the colour's value restores at least "
                f"{iv.RESTORES} of the logit difference")
    return {
        "BLOCKING_SENTENCE": f"over the held-out sets, blocking the first colour hands the answer "
                             f"to the distractor's colour in {early['blocked_gives_distractor']} "
                             f"of {early['stories']} stories whose distractor follows the first "
                             f"sentence, and in {late['blocked_gives_distractor']} of "
                             f"{late['stories']} whose distractor stands just before the question",
        "BLOCK_LATE_SENTENCE": f"With the distractor just before the question, the distractor "
                               f"gets the largest share of the freed weight in "
                               f"{late['blocked_most_on_distractor']} of {late['stories']} "
                               f"stories, and {late['blocked_gives_neither']} answers are a colour "
                               f"that neither sentence names",
        "ABLATE_SENTENCE": f"the weights stay as they were ("
                           f"{example['ablated']['weights'][at]} on \" {example['colour']}\"), "
                           f"the mixture loses what that weight brought, and the answer goes from "
                           f"\"{example['before']['answer']}\" to "
                           f"\"{example['ablated']['answer']}\" here; over the same held-out sets "
                           f"it becomes the distractor's colour in "
                           f"{early['ablated_gives_distractor']} and "
                           f"{late['ablated_gives_distractor']} of {early['stories']}",
        "EXAMPLE_PATCH_SENTENCE": f"Here the value at the first colour's place restores "
                                  f"{both[at]['v']} of the difference and its key {both[at]['k']}; "
                                  f"the distractor's value {both[distractor_at]['v']} and its key "
                                  f"{both[distractor_at]['k']}",
        "EVIDENCE_TABLE": evidence_table(found),
        "TOTALS_SENTENCE": restored + f" ({refused} more {'pair' if refused == 1 else 'pairs'} "
                           f"the model answers alike, and patching refuses "
                           f"{'it' if refused == 1 else 'them'}), and "
                           f"another position's value moved the logits in "
                           f"{sum(one['other_values_moved'] for one in patching.values())} of "
                           f"them: the stories differ at the colour alone, so every other value is "
                           f"the same in both",
        "SHORT_SENTENCE": f"The {pairs - restores} pairs below {iv.RESTORES} (as little as "
                          f"{least}) "
                          f"are stories on which the question weighs the colour "
                          f"{max(shorts, default=None)} or less in one of the two runs: there the "
                          f"weight is split, and the key, which sets the weight, matters too (the "
                          f"most a key restores in any pair is "
                          f"{max(one['key_largest'] for one in patching.values())})",
        "RESTORED": restored,
        "KEY_LITTLE": f"the colour's key restores little (up to "
                      f"{max(one['key_largest'] for one in patching.values())}, where the weight "
                      f"was split)",
        "BLOCK_TOKEN": f"blocking the first colour, token {example['colour_position']}:",
        "TIMING_SENTENCE": f"Each command answers from the recorded model in at most "
                           f"{slowest_command():.2f} s of wall time on a 2-core machine",
    }


def slowest_command():
    """The slowest wall time bench-interventions.txt records, in seconds."""
    with open(os.path.join(HERE, "benchmarks", "bench-interventions.txt"), encoding="utf-8") as f:
        rows = [line.split("|") for line in f if line.startswith("| --")]
    return max(float(row[3]) for row in rows)


def readme_blocks(found):
    """The two commands the training README shows with their output."""
    example = found["example"]
    return {"BLOCK_OUTPUT": command_block("--story", example["story"], "--block",
                                          str(example["colour_position"])),
            "PATCH_OUTPUT": command_block("--patch", example["both_swapped"]["clean"], "--into",
                                          example["both_swapped"]["corrupted"])}


def flat(text):
    return re.sub(r"\s+", " ", text)


LAB06_ONLY = ("KEY_LITTLE",)     # the figures only lab06/README.md quotes


class Readme(unittest.TestCase):

    def test_the_training_readme_quotes_the_recorded_interventions(self):
        with open(os.path.join(HERE, "training", "README.md"), encoding="utf-8") as f:
            readme = f.read()
        found = recorded_evidence()
        for name, figure in readme_figures(found).items():
            if name not in LAB06_ONLY:
                self.assertTrue(flat(figure) in flat(readme), f"training/README.md should quote, "
                                f"from interventions-run.json ({name}):\n{figure}")
        for name, block in readme_blocks(found).items():
            self.assertIn("```\n" + block + "```", readme, f"training/README.md should show "
                                                           f"({name}):\n{block}")

    def test_lab06_answers_question_5_with_the_recorded_numbers(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            readme = flat(f.read())
        figures = readme_figures(recorded_evidence())
        for name in ("BLOCKING_SENTENCE", "RESTORED") + LAB06_ONLY:
            self.assertTrue(flat(figures[name]).lower() in readme.lower(),
                            f"lab06/README.md should quote ({name}):\n{figures[name]}")

    def test_every_question_to_the_recorded_model_took_under_3_s(self):
        """Read from the benchmark's record: no test here is timed."""
        self.assertLess(slowest_command(), 3.0)

    def test_a_patch_tables_row_number_and_its_labels_position_agree(self):
        """Both count from 1: the README's row `8 ␣palm@8`, not `8 ␣palm@7`."""
        result = recorded_evidence()["example"]["both_swapped"]["result"]
        rows = [line.split()[:2] for line in iv.patch_table(result).splitlines()
                if re.match(r"\d+ ", line)]
        self.assertEqual([int(number) for number, _ in rows],
                         [p["position"] for p in result["positions"]])
        repeated = [(number, label) for number, label in rows if "@" in label]
        self.assertTrue(repeated, "the example has a token twice")
        for number, label in repeated:
            self.assertEqual(label.rsplit("@", 1)[1], number, label)

    def test_the_figures_story_is_the_recorded_runs_example(self):
        self.assertEqual(recorded_evidence()["example"]["story"],
                         recorded_run()["example"]["story"])


if __name__ == "__main__":
    unittest.main()

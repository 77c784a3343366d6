"""The READMEs are true: every figure one quotes is the one the recorded trace holds, every Python
example in one runs and prints what it shows, and every function one points to exists. Each test
reads the README where its text lives: the top folder's, or a folder's (lab06/, training/, ...)."""

import doctest
import importlib
import json
import os
import re
import shutil
import tempfile
import unittest
from fractions import Fraction

import bpe
from common import views
from common.golden import rounded
from tests.helpers import raindrop_figures, run_main, shipped
from training import induction, model, stories, tables, train

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder
BENCH_RECORDS = [name for name in shipped(".txt")                   # the tree is the list
                 if name.startswith(os.path.join("benchmarks", "bench-"))]


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def readme_names():
    """README.md and every folder's README.md, as paths from the project folder: the tree is the
    list, none typed by hand."""
    return [name for name in shipped("README.md") if name.count(os.sep) <= 1]


def score_row(row):
    """[-0.0306, None] -> "[-0.0306, −∞]", the way the README writes a row of scores."""
    return "[" + ", ".join("−∞" if s is None else f"{s:.4f}" for s in row) + "]"


def weights_table(trace):
    """The lesson's weights table in Markdown: rows attend, columns are attended to; masked cells
    are 0."""
    labels = [token.strip() for token in trace["tokens"]]
    lines = ["| | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for i, (label, row) in enumerate(zip(labels, trace["weights"])):
        cells = [f"{w:.4f}" if j <= i else "0" for j, w in enumerate(row)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def quoted_figures(trace):
    """Each figure the README's walkthrough quotes, written as the README writes it: positions
    counted from 1, as the views count them, from the trace's indices from 0."""
    masks = trace["masks"]
    edited = [i for i, (a, b) in enumerate(zip(trace["tokens"], trace["changed_tokens"])) if a != b]
    cats = views.token_labels(["the", " cat", " saw", " the", " cat"])
    changed = {mode: views.positions_text(result["rows_changed_by_the_edit"])
               for mode, result in masks.items()}
    return [
        f"a token that occurs twice gets its position, counted from 1: `{cats[1]}`, `{cats[4]}`",
        "tokens " + ", ".join(json.dumps(t) for t in trace["tokens"]),
        f"ids `{trace['ids']}`",
        ", ".join(json.dumps(t) for t in trace["changed_tokens"])
        + f" — one token changed, at {views.positions_text(edited)}",
        f"first input row `{trace['x'][0]}`",
        f"first row of Wq `{trace['params']['Wq'][0]}`",
        f"first token: `{score_row(trace['scores'][0])}`",
        f"last token: `{score_row(trace['scores'][-1])}`",
        weights_table(trace),
        f"row sums `{trace['row_sums']}`",
        (
            f"max error {trace['gradient_check']['max_error_rounded']} (ε ="
            f" {trace['gradient_check']['epsilon']})"
        ),
        f"causal: the edit changes {changed['causal']}",
        f"position 1's weight on the future is {masks['causal']['weight_on_future_row_0']}",
        f"none: the edit changes {changed['none']}",
        f"future weight of position 1 is {masks['none']['weight_on_future_row_0']}",
        f"zero: the edit changes {changed['zero']}",
        f"future weight of position 1 is {masks['zero']['weight_on_future_row_0']}",
    ]


INTERVENTIONS = {
    "value_ablation": "2.1 value ablation: v₂ := [0, 0]",
    "query_perturbation": "2.2 query perturbation: q₃ := [1, 0]",
    "connection_removal": "2.3 connection removal: 3 may not read 2",
    "future_key_perturbation": "2.4 future-key perturbation: k₃ := 2·k₃",
}


def fraction(x):
    """0.6666666667 -> "2/3": the small fraction a float of the lab stands for."""
    f = Fraction(x).limit_denominator(100)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def lab_table(lab):
    """The answer key's table of the four interventions, from perturb-trace.json, its rows named
    from 1 by the trace's labels."""
    lines = [
        "| intervention | rows of A changed | rows of Z changed | new z₃ |",
        "|---|---|---|---|",
    ]
    for key, label in INTERVENTIONS.items():
        run = lab["interventions"][key]
        z3 = run["output"][2]
        a_rows, z_rows = (", ".join(run[f"{key}_rows_changed_labels"]) or "none"
                          for key in ("weight", "output"))
        lines.append(
            f"| {label} | {a_rows} | {z_rows} | "
            f"`{z3}` = [{', '.join(fraction(x) for x in z3)}] |"
        )
    return "\n".join(lines)


def lab_figures(lab):
    base, bug, mix = lab["baseline"], lab["buggy_post_softmax"], lab["checks"]["equal_mixtures"]
    leak = lab["interventions"]["future_key_perturbation"]["buggy_output"]
    return [
        lab_table(lab),
        f"baseline weights `{base['weights']}`",
        f"baseline output `{base['output']}`",
        f"the buggy weights `{bug['weights']}`",
        f"row sums `{bug['row_sums']}`",
        f"its first output row moves from `{bug['output'][0]}` to `{leak[0]}`",
        (
            f"([{fractions(lab['interventions']['connection_removal']['weights'][2])}] instead of "
            f"[{fractions(base['weights'][2])}])"
        ),
        f"leaves the weight {fraction(base['weights'][2][1])} on source 2",
        f"[{fractions(mix['weights_a'])}] and [{fractions(mix['weights_b'])}], produce the same"
        " mixture of "
        + ", ".join(f"[{fractions(v)}]" for v in mix["values"]),
    ]


def fractions(values):
    return ", ".join(fraction(x) for x in values)


def seeds_sentence(rows):
    """What the seeds show: how many of those STEPS was chosen on and of the rest reach the claim
    on every held-out set, and the worst set of all."""
    tuned, more = rows[:train.TUNED_ON], rows[train.TUNED_ON:]
    claim, total = train.CLAIM, stories.TEST_STORIES

    def good(some):
        return sum(min(row["correct"].values()) >= claim for row in some)

    worst, seed, kind = min((c, row["seed"], k) for row in rows for k, c in row["correct"].items())
    return (f"Seeds 1 to {len(tuned)}: {good(tuned)} of {len(tuned)} answer at least {claim} of "
            f"{total} on every held-out set. Seeds {len(tuned) + 1} to {len(rows)}, trained only "
            f"once the number of steps was chosen: {good(more)} of {len(more)}. The worst set of "
            f"all is {worst} of {total} (seed {seed}, {kind}).")


NUMBER_WORDS = ["no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve", "thirteen", "fourteen"]


def training_run_seconds():
    """The whole default run's median wall seconds, as benchmarks/bench-training.txt records it."""
    row = [line for line in read("benchmarks/bench-training.txt").splitlines()
           if re.match(r"\| \d", line)][0]
    return float(row.split("|")[1])


def training_figures(recorded):
    """Each figure the README's training section quotes, as the README writes it, by the name of
    its place in the section."""
    run, rows = recorded["run"], recorded["seeds"]
    config, held_out = run["config"], run["held_out"]
    example, unseen, after_is = run["example"], run["unseen_object"], run["bigram_after_is"]
    question_bigram = [result["question bigram"] for result in held_out.values()]
    next_token_bigram = [result["next token bigram"] for result in held_out.values()]
    on = {word: example["weights"][-1][example["tokens"].index(" " + word)]
          for word in (example["colour"], example["distractor"])}
    early, late = held_out["distractor early"], held_out["distractor late"]
    cannot = [run["cannot"][kind] for kind in stories.CANNOT]
    most = max((c, -row["seed"], kind) for row in rows for kind, c in row["cannot"].items())
    most = (most[0], -most[1], most[2])
    same = min(n for row in rows for n in row["same_for_an_unseen_object"].values())
    colours, total = len(stories.COLOURS), stories.TEST_STORIES
    return {
        "HELD_OUT_SETS": f"{NUMBER_WORDS[len(held_out)]} held-out sets of {total} stories",
        "RUN_TIME": f"prints the run of seed 1 (about {training_run_seconds():.0f} s on a 2-core "
                    f"machine",
        "FORMS": f"fillers in {len(stories.FILLERS)} sentence forms",
        "RAMP": f"evenly (`{model.RAMP:g} · i/{stories.MAX_TOKENS - 1}`)",
        "VOCABULARY": f"written from the {len(stories.story_vocabulary())} words a training "
                      f"story can hold",
        "COLOUR_FORMS": f"the eleven basic colour terms of English, given in "
                        f"{len(set(stories.COLOUR_FORMS))} forms",
        "EACH_TWICE": "each about " + ["never", "once", "twice", "three times"][
            config["steps"] // config["train_stories"]],
        "ALL_SEEDS": f"`python3 train_attention.py --seeds {len(rows)}` trains seeds 1 to "
                     f"{len(rows)}",
        "CONFIG": f"d_model {config['d_model']}, d_head {config['d_head']}, "
                  f"{config['steps']} steps",
        "TABLE_HELD_OUT": tables.held_out_table(run),
        "NEXT_TOKEN_SENTENCE": f"after \" is\" it says \"{after_is['next token']}\", never a "
                               f"colour, so its {max(next_token_bigram)} of {total}",
        "QUESTION_SENTENCE": f"always answers the colour most frequent in training, "
                             f"\"{after_is['question']}\"",
        "CHANCE": f"(1 in {colours}, about {total / colours:.1f} of {total})",
        "QUESTION_RANGE": f"{min(question_bigram)} to {max(question_bigram)} of {total}",
        "TABLE_SEEDS": tables.seeds_header() + "".join(
            tables.seeds_line(row) for row in rows[:train.TUNED_ON]),
        "SEEDS_SENTENCE": seeds_sentence(rows),
        "STEPS_PHRASE": f"in {config['steps']} steps of one story each",
        "LAST_ROW": f"the last row is the question, \" is\" of "
                    f"\"{' '.join(example['story'].split()[-3:])}\"",
        "EXAMPLE_SENTENCE": f"It puts {on[example['colour']]} of its weight on "
                            f"\" {example['colour']}\", the first sentence's colour, and "
                            f"{on[example['distractor']]} on \" {example['distractor']}\", the "
                            f"distractor's, and answers \"{example['answer']}\"",
        "MEAN_EARLY": f"question puts on average {early['weight_on_colour']} on the colour and "
                      f"{early['weight_on_distractor']} on the distractor",
        "MEAN_LATE": f"{late['weight_on_colour']} and {late['weight_on_distractor']}",
        "UNSEEN_LINE": f"{unseen['question']} -> \"{unseen['answer']}\"",
        "UNSEEN_COUNT": f"It does so in {unseen['first_colour_answers']} of {unseen['total']} "
                        f"plain stories",
        "CANNOT_SENTENCE": f"Seed 1 answers the colour asked for in {cannot[0]['correct']} of "
                           f"{total} and {cannot[1]['correct']} of {total}, and the first colour "
                           f"in {cannot[0]['first_colour_answers']} and "
                           f"{cannot[1]['first_colour_answers']}",
        "CANNOT_MOST": f"Over seeds 1 to {len(rows)} the most any answers is {most[0]} of "
                       f"{total} (seed {most[1]}, {most[2]})",
        "CANNOT_SAME": f"each seed gives the same answer in at least {same} of {total} stories",
        "CONTEXT": f"A story may have up to {stories.MAX_TOKENS} tokens (`MAX_TOKENS`)",
        "LONGEST": f"The longest training prompt has {run['longest_training_prompt']} tokens",
        "STORY_COMMAND": f"python3 train_attention.py --story \"{example['story']}\"",
        "STORY_RETURNS": f"returns the answer (`\"{example['answer']}\"`)",
    }


def flat(text):
    """Text with every run of white space made one space, so that a wrapped line still matches."""
    return re.sub(r"\s+", " ", text)


def numbers_in(value):
    """Every number in a nested JSON value, as floats."""
    if isinstance(value, dict):
        return [n for item in value.values() for n in numbers_in(item)]
    if isinstance(value, list):
        return [n for item in value for n in numbers_in(item)]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    return []


class ReadmeIsTrue(unittest.TestCase):

    def test_readme_quotes_the_recorded_trace(self):
        readme, trace = flat(read("README.md")), json.loads(read("attention-trace.json"))
        for figure in quoted_figures(trace):
            self.assertTrue(
                flat(figure) in readme,
                f"README.md should quote, from attention-trace.json:\n{figure}",
            )

    def test_the_lab06_answer_key_quotes_the_lab06_trace(self):
        answers, lab = flat(read("lab06/answers.md")), json.loads(read("lab06/perturb-trace.json"))
        for figure in lab_figures(lab):
            self.assertTrue(
                flat(figure) in answers,
                f"lab06/answers.md should quote, from perturb-trace.json:\n{figure}",
            )

    def test_every_four_decimal_number_in_the_readme_is_in_a_recorded_trace(self):
        recorded = set()
        for name in ("attention-trace.json", "lab06/perturb-trace.json",
                     "training/training-run.json", "kv_cache/kv-cache-trace.json",
                     "training/interventions-run.json"):
            recorded.update(numbers_in(json.loads(read(name))))
        for name in BENCH_RECORDS:
            recorded.update(float(n) for n in re.findall(r"-?\d+\.\d+", read(name)))
        # the induction circuit keeps no record: its weights are set by hand, its figures computed
        recorded.update(numbers_in(rounded(induction.measure(1)[0], 4)))
        # and the raindrop story's, from the recorded two-layer model
        _, blocked, patched, (_, listed) = raindrop_figures()
        recorded.update(numbers_in(rounded([list(run) for run in blocked] + [patched, listed], 4)))
        for name in readme_names():
            for match in re.finditer(r"-?\d+\.\d{4,}\b", read(name)):
                self.assertTrue(
                    float(match.group()) in recorded,
                    f"{name} quotes {match.group()}, no trace records it",
                )

    def test_readme_quotes_the_recorded_benchmarks(self):
        readme = read("benchmarks/README.md")
        for name in BENCH_RECORDS:
            self.assertTrue(
                "```\n" + read(name) + "```" in readme,
                f"benchmarks/README.md should quote {name} whole",
            )

    def test_at_the_lesson_size_the_layer_is_at_least_1_2_times_as_fast_as_the_listing(self):
        """The recorded median of the turns' ratios, listing / attention.py, is at least 1.2."""
        record = read("benchmarks/bench-attention.txt")
        table = record.split("| attention.py µs | listing µs | speedup |")[1].split("\n\n")[0]
        rows = [line.split("|")[1:-1] for line in table.splitlines() if re.match(r"\| \d", line)]
        self.assertEqual(len(rows), 1, table)
        self.assertGreaterEqual(float(rows[0][2].strip().rstrip("×")), 1.2, rows[0])

    def test_benchmark_speedup_follows_from_the_measured_times(self):
        """speedup = listing s / attention.py s, from the times the record prints, and at least
        1.2 at T=256 and T=512."""
        # the layer's table; the cache's, after it, is checked by test_kv_cache
        record = read("benchmarks/bench-attention.txt")
        layer_table = record.split("| T | attention.py s")[1].split("| T | cache s")[0]
        rows = [
            line.split("|")[1:-1]
            for line in layer_table.splitlines()
            if re.match(r"\| \d", line)
        ]
        self.assertTrue(rows)
        for T, layer, listing, speedup, _ in rows:
            # The times are printed to 4 decimals, the speedup from the unrounded times: it lies
            # between the ratios of the rounding's extremes, give or take its own last digit.
            layer, listing, half = float(layer), float(listing), 0.5e-4
            low, high = (listing - half) / (layer + half), (listing + half) / (layer - half)
            shown = float(speedup.strip().rstrip("×"))
            self.assertTrue(low - 0.005 <= shown <= high + 0.005, f"T={T}: {shown} vs {low}-{high}")
            if int(T) >= 256:   # the floor the plain form keeps: 1.2× the listing's speed
                self.assertGreaterEqual(shown, 1.2, f"T={T}")

    def test_tokenizer_commands_print_what_the_readme_shows(self):
        readme = read("README.md")
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(os.path.join(HERE, "README.md"), os.path.join(tmp, "README.md"))
            done = run_main(
                bpe.main,
                "train",
                "README.md",
                "--vocab-size",
                "300",
                "--out",
                "my-tokenizer.json",
                cwd=tmp,
            )
        shown = "300 tokens (… characters and … merges) saved to my-tokenizer.json\n"
        self.assertTrue("```\n" + shown + "```" in readme, f"README.md should show:\n{shown}")
        self.assertRegex(done.stdout, r"^300 tokens \(\d+ characters and \d+ merges\) saved to "
                                      r"my-tokenizer.json\n$")
        done = run_main(bpe.main, "encode", "mia has a red ball.")
        self.assertTrue(
            '$ python3 bpe.py encode "mia has a red ball."\n' + done.stdout + "```" in readme,
            f"README.md should show:\n{done.stdout}",
        )

    def test_the_readmes_own_sentence_is_cut_into_its_words(self):
        """The example of --sentence is one the lesson's tokenizer cuts into words: one it cut
        into fragments ("the big dog sees a blue kite.", 15 of them) showed a map of pieces."""
        sentences = re.findall(r'--sentence "([^"]+)"', read("README.md"))
        self.assertTrue(sentences)
        tokenizer = bpe.Tokenizer.load(os.path.join(HERE, "tokenizer.json"))
        for sentence in sentences:
            self.assertEqual([token.strip() for token in tokenizer.tokens(sentence)],
                             re.findall(r"\w+|\.", sentence), sentence)

    def test_first_screen_gives_the_two_commands(self):
        first_screen = "\n".join(read("README.md").splitlines()[:30])
        self.assertIn("```\npython3 trace_attention.py\n```", first_screen)
        self.assertIn("```\npython3 -m unittest -v\n```", first_screen)
        self.assertIn("Python 3.10", first_screen)
        for lab in ("lab06", "training"):      # a link to each lab, relative to the top folder
            self.assertIn(f"]({lab}/README.md)", first_screen)

    def test_the_top_readme_stays_short(self):
        self.assertLessEqual(len(read("README.md").splitlines()), 200)

    def test_lab06_asks_for_predictions_first_and_keeps_its_answers_behind_a_link(self):
        readme, lab = read("lab06/README.md"), json.loads(read("lab06/perturb-trace.json"))
        self.assertIn("Predict before you run", readme)
        self.assertIn("--grade tiny_attention.py", readme)
        self.assertIn("](answers.md)", readme)
        for figure in lab_figures(lab):
            self.assertFalse(flat(figure) in flat(readme), f"an answer in the README:\n{figure}")

    def test_readme_quotes_the_recorded_training_run(self):
        readme = flat(read("training/README.md"))
        recorded = json.loads(read("training/training-run.json"))
        for figure in training_figures(recorded).values():
            self.assertTrue(
                flat(figure) in readme,
                f"training/README.md should quote, from training-run.json:\n{figure}",
            )

    def test_limits_the_readme_quotes_are_the_codes(self):
        self.assertIn(f"sentence of up to {views.MAX_TOKENS} tokens", flat(read("README.md")))
        self.assertIn(f"(the limit is {views.MAX_TOKENS})", flat(read("common/README.md")))
        self.assertIn(f"keeps the {bpe.CHUNK_CACHE_SIZE:,} most recent",
                      flat(read("benchmarks/README.md")))
        self.assertIn(f"on {stories.TRAIN_STORIES} such stories",
                      flat(read("training/README.md")))
        self.assertIn(f"up to MAX_TOKENS = {stories.MAX_TOKENS} tokens",
                      flat(read("train_attention.py")))
        self.assertIn(f"A colour outside `COLOURS` ({', '.join(stories.COLOURS[:-1])} and "
                      f"{stories.COLOURS[-1]}) cannot be answered",
                      flat(read("training/README.md")))

    def test_where_each_idea_lives_names_functions_that_exist(self):
        readme = read("README.md")
        table = readme[readme.index("### Where each idea lives") : readme.index("### How this")]
        rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| ")][1:]
        self.assertGreaterEqual(len(rows), 10)
        for idea, where, file in rows:
            path = file.strip().strip("`").removesuffix(".py")     # core/masked -> core.masked
            module = importlib.import_module(path.replace("/", "."))
            for name in re.findall(r"`(\w+)`", where):
                self.assertTrue(
                    hasattr(module, name), f"{idea.strip()}: {file.strip()} has no {name}"
                )

    def test_ci_runs_the_readme_test_command(self):
        self.assertIn("python3 -m unittest -v", read(os.path.join(".ci", "run")))


def load_tests(loader, tests, ignore):
    """Every README's Python examples (the >>> lines) run as doctests and must print what it
    shows: each README of the tree that holds one."""
    for name in readme_names():
        if ">>> " in read(name):
            tests.addTests(doctest.DocFileSuite(os.path.join(HERE, name), module_relative=False))
    return tests


if __name__ == "__main__":
    unittest.main()

"""The cache of keys and values: attention_step equal to the full pass to the last bit, why only the
causal mask allows a cache, its multiply-adds counted, its door, its command line and its records.

Random cases come from a fixed seed and name their seed, case, shape and position when they fail.
"""

import json
import math
import os
import random
import re
import shutil
import tempfile
import threading
import unittest
from unittest import mock

import attention
from attention import MASK_MODES, attention_forward, init_attention
from common.golden import to_json
from common.views import positions_text
from kv_cache import step as kv_cache
from kv_cache import attention_step
from kv_cache.step import (cache_multiply_adds, kv_trace, recompute_multiply_adds, steps,
                           what_a_cache_gets_wrong)
from tests.helpers import MessageAssertions, run_script
import trace_attention as ta

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder
SEED = 20261130
CASES = 8    # T from 1 to 32 (1 and 32 always), d_model up to 6, d_head up to 4: ~0.05 s


def read(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def random_matrix(rng, rows, cols, scale=1.0):
    return [[rng.uniform(-scale, scale) for _ in range(cols)] for _ in range(rows)]


def random_cases():
    """(where, params, x), the same every run: random heads, inputs of scale up to 3 (so some rows
    of weights are nearly one-hot), T from 1 to 32."""
    rng = random.Random(SEED)
    for case in range(CASES):
        T = (1, 32)[case] if case < 2 else rng.randint(1, 32)
        d_model, d_head = rng.randint(1, 6), rng.randint(1, 4)
        params = {name: random_matrix(rng, d_model, d_head) for name in ("Wq", "Wk", "Wv")}
        params["Wo"] = random_matrix(rng, d_head, d_model)
        x = random_matrix(rng, T, d_model, scale=rng.choice((0.5, 1.0, 3.0)))
        yield f"seed {SEED}, case {case}: T={T}, d_model={d_model}, d_head={d_head}", params, x


def lesson():
    """(tokens, params, x) of the lesson's sentence, built as the trace builds them."""
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, ta.SENTENCE, embedding)
    return tokenizer.tokens(ta.SENTENCE), params, x


class StepEqualsTheFullPass(unittest.TestCase):

    def test_every_step_is_row_t_of_the_full_pass_on_every_prefix_bit_for_bit(self):
        names = ("q", "k", "v", "scores", "weights", "mixed", "out")
        for where, params, x in random_cases():
            given = steps(params, x)
            for n in range(1, len(x) + 1):
                full, t = attention_forward(params, x[:n]), n - 1
                differ = [name for name in names if given[t][name] != full[name][t]]
                if differ:
                    self.fail(f"{where}, prefix of {n}: step {t} differs in {differ}")

    def test_every_step_is_row_t_of_the_pass_on_the_whole_sequence_then_zeros(self):
        for where, params, x in random_cases():
            full = attention_forward(params, x)
            for t, step in enumerate(steps(params, x)):
                later = len(x) - t - 1
                self.assertEqual(step["out"], full["out"][t], f"{where}, t={t}")
                self.assertEqual(step["weights"] + [0.0] * later, full["weights"][t],
                                 f"{where}, t={t}")
                self.assertEqual(step["scores"] + [-math.inf] * later, full["scores"][t],
                                 f"{where}, t={t}")

    def test_matches_full_pass_says_no_when_one_bit_differs(self):
        params, x = next(random_cases())[1:]
        full = attention_forward(params, x)
        step = steps(params, x)[0]
        self.assertTrue(kv_cache.matches_full_pass(step, full, 0))
        step["out"][0] = math.nextafter(step["out"][0], math.inf)
        self.assertFalse(kv_cache.matches_full_pass(step, full, 0))

    def test_each_step_appends_one_key_and_one_value(self):
        tokens, params, x = lesson()
        kv = {"k": [], "v": []}
        for t, x_t in enumerate(x):
            step = attention_step(params, x_t, kv)
            self.assertEqual((len(kv["k"]), len(kv["v"])), (t + 1, t + 1))
            self.assertEqual((kv["k"][-1], kv["v"][-1]), (step["k"], step["v"]))
            self.assertEqual((len(step["scores"]), len(step["weights"])), (t + 1, t + 1))
            self.assertEqual((len(step["q"]), len(step["mixed"]), len(step["out"])),
                             (len(params["Wq"][0]), len(params["Wo"]), len(params["Wo"][0])))

    def test_the_lesson_sentence_step_by_step_gives_the_recorded_weights(self):
        trace = json.loads(read("attention-trace.json"))
        tokens, params, x = lesson()
        for t, step in enumerate(steps(params, x)):
            self.assertEqual([round(w, 4) for w in step["weights"]], trace["weights"][t][:t + 1])


class WhyOnlyCausal(unittest.TestCase):

    def test_without_the_causal_mask_a_later_token_changes_every_earlier_row(self):
        """Directly, with no cache at all: row t of the pass on x[:t + 1] (all that exists when
        token t arrives) against row t of the pass on the whole sentence."""
        _, params, x = lesson()
        earlier = list(range(len(x) - 1))   # every row but the last, which sees the whole x
        for mask, expected in (("causal", []), ("none", earlier), ("zero", earlier)):
            full = attention_forward(params, x, mask)["out"]
            changed = [t for t in range(len(x))
                       if attention_forward(params, x[:t + 1], mask)["out"][t] != full[t]]
            self.assertEqual(changed, expected, mask)

    def test_what_a_cache_gets_wrong_on_the_lesson_sentence(self):
        _, params, x = lesson()
        trace = json.loads(read("attention-trace.json"))
        for mask in MASK_MODES:
            wrong = what_a_cache_gets_wrong(params, x, mask)
            rows = [] if mask == "causal" else list(range(len(x) - 1))
            self.assertEqual(wrong["rows_a_cache_gets_wrong"], rows, mask)
            # row 0's weight on tokens not yet seen is the trace's weight on the future of row 0
            self.assertEqual(round(wrong["weight_on_unseen_tokens"][0], 4),
                             trace["masks"][mask]["weight_on_future_row_0"], mask)
            for t, difference in enumerate(wrong["largest_out_difference"]):
                self.assertEqual(difference > 0, t in rows, f"{mask}, row {t}")

    def test_the_last_row_is_right_in_every_mode(self):
        """The last token has no later one to miss: a cache gives its row right even without
        the mask; it is the earlier rows that go wrong."""
        for where, params, x in list(random_cases())[:6]:
            for mask in MASK_MODES:
                wrong = what_a_cache_gets_wrong(params, x, mask)
                self.assertNotIn(len(x) - 1, wrong["rows_a_cache_gets_wrong"], f"{where}, {mask}")


def counted_products(run):
    """The products run() takes inside attention.matmul, counted one by one: those of this thread
    only (test_grader's gradings may be running beside it on threads of their own)."""
    count, mine = 0, threading.get_ident()

    def counting_mul(a, b):
        nonlocal count
        count += threading.get_ident() == mine
        return a * b

    with mock.patch.object(attention, "mul", counting_mul):
        run()
    return count


class MultiplyAdds(unittest.TestCase):

    def test_the_formulas_count_every_product_of_both_ways(self):
        rng = random.Random(SEED)
        for T in range(1, 9):
            d_model, d_head = rng.randint(1, 5), rng.randint(1, 3)
            params = init_attention(d_model, d_head, seed=T)
            x = random_matrix(rng, T, d_model)
            where = f"T={T}, d_model={d_model}, d_head={d_head}"
            self.assertEqual(counted_products(lambda: steps(params, x)),
                             cache_multiply_adds(T, d_model, d_head), where)
            self.assertEqual(counted_products(lambda: [attention_forward(params, x[:n])
                                                       for n in range(1, T + 1)]),
                             recompute_multiply_adds(T, d_model, d_head), where)

    def test_the_cache_saves_more_the_longer_the_sequence(self):
        ratios = [recompute_multiply_adds(T, 64, 16) / cache_multiply_adds(T, 64, 16)
                  for T in (64, 128, 256, 512)]
        self.assertEqual(ratios, sorted(ratios))
        self.assertGreater(ratios[-1] / ratios[-2], 1.9)    # towards 2T/3: linear in T


class TheDoor(unittest.TestCase, MessageAssertions):

    def setUp(self):
        _, self.params, self.x = lesson()
        self.kv = {"k": [], "v": []}
        attention_step(self.params, self.x[0], self.kv)

    def step(self, x_t=None, kv=None, params=None):
        return attention_step(params or self.params, self.x[1] if x_t is None else x_t,
                              self.kv if kv is None else kv)

    def test_a_row_of_the_wrong_width_names_the_width(self):
        self.assertMessage(ValueError, "x_t must have 4 numbers (one input row), got 3",
                           self.step, [0.1, 0.2, 0.3])

    def test_the_whole_x_instead_of_one_row_is_a_type_error(self):
        self.assertMessage(TypeError, "got a (6, 4) matrix: pass x[t], not x", self.step, self.x)

    def test_a_row_that_is_not_a_list_is_a_type_error(self):
        self.assertMessage(TypeError, "x_t must be one input row, a list of 4 numbers, got tuple",
                           self.step, (0.1, 0.2, 0.3, 0.4))

    def test_a_non_finite_number_is_named(self):
        self.assertMessage(ValueError, "x_t[2] must be a finite number, got nan",
                           self.step, [0.1, 0.2, math.nan, 0.4])
        self.assertMessage(TypeError, "x_t[1] must be a number, got str '0.2'",
                           self.step, [0.1, "0.2", 0.3, 0.4])

    def test_a_kv_that_is_not_a_dict_is_a_type_error(self):
        self.assertMessage(TypeError, "kv must be a dict of keys and values, {'k': [], 'v': []} "
                           "at the start, got list", self.step, None, [[], []])

    def test_a_kv_without_values_names_what_it_lacks(self):
        self.assertMessage(ValueError, "it has no v", self.step, None, {"k": []})

    def test_a_kv_made_by_hand_is_refused(self):
        kv = {"k": [list(row) for row in self.kv["k"]], "v": [list(row) for row in self.kv["v"]]}
        self.assertMessage(ValueError, "kv holds keys or values but no seal: attention_step did "
                           "not build it", self.step, None, kv)

    def test_an_edited_key_is_refused(self):
        self.kv["k"][0][0] += 1.0
        self.assertMessage(ValueError, "kv is not as attention_step left it", self.step)

    def test_a_row_edited_through_the_steps_result_is_refused(self):
        result = attention_step(self.params, self.x[1], self.kv)
        result["v"][1] += 1.0           # the row kv holds: the seal's own copy keeps what it was
        self.assertMessage(ValueError, "kv is not as attention_step left it", self.step,
                           self.x[2])

    def test_params_edited_in_place_after_the_first_step_are_other_params(self):
        self.params["Wk"][2][1] += 1.0
        self.assertMessage(ValueError, "kv was built by attention_step for other params",
                           self.step)

    def test_a_copy_of_kv_taken_between_steps_goes_on_from_where_it_was_taken(self):
        branch = {"k": list(self.kv["k"]), "v": list(self.kv["v"]), "seal": self.kv["seal"]}
        self.step()                     # the original goes on with x[1]
        out = attention_step(self.params, self.x[2], branch)["out"]   # the copy with x[2]
        self.assertEqual(out, attention_forward(self.params, [self.x[0], self.x[2]])["out"][1])
        self.assertEqual(self.step(self.x[2])["out"],
                         attention_forward(self.params, self.x[:3])["out"][2])

    def test_a_value_appended_by_hand_is_refused(self):
        self.kv["v"].append([0.0, 0.0])
        self.assertMessage(ValueError, "kv is not as attention_step left it", self.step)

    def test_a_cache_built_for_other_params_is_refused(self):
        other = init_attention(4, 2, seed=12)
        self.assertMessage(ValueError, "kv was built by attention_step for other params",
                           self.step, None, None, other)

    def test_params_broken_after_the_first_step_are_named(self):
        self.params["Wq"][1][0] = math.nan
        self.assertMessage(ValueError, "Wq[1][0] must be a finite number, got nan", self.step)

    def test_params_that_do_not_fit_are_refused_at_the_first_step(self):
        params = {**self.params, "Wo": [[0.1] * 4]}
        self.assertMessage(ValueError, "Wo must be (d_head, d_model) = (2, 4), got (1, 4)",
                           attention_step, params, self.x[0], {"k": [], "v": []})

    def test_a_step_that_overflows_leaves_kv_as_it_was(self):
        params = {"Wq": [[1e160]], "Wk": [[1e160]], "Wv": [[1.0]], "Wo": [[1.0]]}
        kv = {"k": [], "v": []}
        attention_step(params, [1e-150], kv)
        self.assertMessage(ValueError, "could overflow", attention_step, params, [2.0], kv)
        self.assertEqual((len(kv["k"]), len(kv["v"])), (1, 1))
        self.assertEqual(attention_step(params, [1e-300], kv)["weights"], [0.5, 0.5])

    def test_a_refused_step_changes_nothing(self):
        before = ([list(row) for row in self.kv["k"]], [list(row) for row in self.kv["v"]])
        with self.assertRaises(ValueError):
            self.step([0.1, 0.2, 0.3])
        self.assertEqual((self.kv["k"], self.kv["v"]), before)
        self.assertEqual(self.step()["out"], attention_forward(self.params, self.x[:2])["out"][1])


class CommandLine(unittest.TestCase, MessageAssertions):

    def test_each_row_arrives_equal_to_the_full_pass(self):
        done = run_script("step_attention.py")
        self.assertEqual(done.returncode, 0, done.stderr)
        trace = json.loads(read("attention-trace.json"))
        rows = [line for line in done.stdout.splitlines() if "full pass row" in line]
        self.assertEqual(len(rows), len(trace["tokens"]))
        for t, line in enumerate(rows):
            self.assertTrue(line.endswith(f"== full pass row {t + 1}"), line)
            numbers = [float(n) for n in re.findall(r"\d\.\d{4}", line)]
            self.assertEqual(numbers, trace["weights"][t][:t + 1])
        self.assertIn(f"All {len(trace['tokens'])} rows equal the full pass's bit for bit",
                      done.stdout)

    def test_a_row_one_bit_off_the_full_pass_fails_the_command(self):
        real_step = kv_cache.attention_step

        def one_bit_off(params, x_t, kv):
            step = real_step(params, x_t, kv)
            step["out"][0] = math.nextafter(step["out"][0], math.inf)
            return step

        with mock.patch.object(kv_cache, "attention_step", one_bit_off):
            done = run_script("step_attention.py")
        self.assertOneLineError(done, "the rows of positions 1, 2, 3, 4, 5 and 6 are not the full "
                                      "pass's")

    def test_with_no_mask_it_marks_the_rows_a_cache_gets_wrong(self):
        done = run_script("step_attention.py", "--mask", "none")
        self.assertEqual(done.returncode, 0, done.stderr)
        marks = [line.split("  ")[-1] for line in done.stdout.splitlines()
                 if "full pass row" in line]
        self.assertTrue(all(mark.startswith("≠") for mark in marks[:-1]), marks)
        self.assertEqual(marks[-1], "== full pass row 6")
        recorded = json.loads(read("kv_cache/kv-cache-trace.json"))["why_only_causal"]["none"]
        self.assertIn(f"weight {recorded['weight_on_unseen_tokens'][0]} on unseen tokens", marks[0])
        self.assertIn(f"A cache gets {positions_text(recorded['rows_a_cache_gets_wrong'])} wrong",
                      done.stdout)

    def test_check_fails_on_a_stale_record_and_passes_on_a_fresh_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(os.path.join(HERE, "attention-trace.json"),
                            os.path.join(tmp, "attention-trace.json"))
            os.mkdir(os.path.join(tmp, "kv_cache"))
            with open(os.path.join(tmp, "kv_cache", "kv-cache-trace.json"), "w",
                      encoding="utf-8") as f:
                f.write(read("kv_cache/kv-cache-trace.json").replace("0.8379", "0.8378"))
            done = run_script("step_attention.py", "--check", folder=tmp)
            self.assertOneLineError(done, "kv-cache-trace.json differs from a fresh run")
            self.assertEqual(run_script("step_attention.py", "--write", folder=tmp).returncode, 0)
            self.assertEqual(run_script("step_attention.py", "--check", folder=tmp).returncode, 0)
            with open(os.path.join(tmp, "kv_cache", "kv-cache-trace.json"), encoding="utf-8") as f:
                self.assertEqual(f.read(), read("kv_cache/kv-cache-trace.json"))

    def test_a_missing_lesson_trace_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            done = run_script("step_attention.py", folder=tmp)
        self.assertOneLineError(done, "attention-trace.json: No such file or directory")

    def test_a_lesson_trace_that_is_not_a_trace_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "attention-trace.json"), "w", encoding="utf-8") as f:
                f.write('{"sentence": "mia"}')
            done = run_script("step_attention.py", folder=tmp)
        self.assertOneLineError(done, "attention-trace.json is not the lesson's recorded trace")

    def test_write_beside_a_mask_is_refused(self):
        done = run_script("step_attention.py", "--write", "--mask", "none")
        self.assertOneLineError(done, "drop --mask")
        self.assertOneLineError(run_script("step_attention.py", "--mask", "causall"), "causall")


class Records(unittest.TestCase):

    def test_the_recorded_kv_trace_is_a_fresh_run_from_the_lesson(self):
        tokens, params, x = lesson()
        self.assertEqual(read("kv_cache/kv-cache-trace.json"),
                         to_json(kv_trace(ta.SENTENCE, tokens, params, x)),
                         "kv-cache-trace.json is stale: run step_attention.py --write")

    def test_the_lesson_trace_records_x_and_params_exactly(self):
        """step_attention.py reads them from attention-trace.json: two decimals survive four."""
        trace = json.loads(read("attention-trace.json"))
        tokens, params, x = lesson()
        self.assertEqual((trace["tokens"], trace["params"], trace["x"]), (tokens, params, x))

    def test_the_readme_shows_what_the_command_line_prints(self):
        done = run_script("step_attention.py")
        shown = "```\n$ python3 step_attention.py\n" + done.stdout + "```"
        self.assertTrue(shown in read("kv_cache/README.md"),
                        f"kv_cache/README.md should show:\n{shown}")

    def test_the_readme_says_what_a_cache_gets_wrong(self):
        readme = re.sub(r"\s+", " ", read("kv_cache/README.md"))
        wrong = json.loads(read("kv_cache/kv-cache-trace.json"))["why_only_causal"]
        for mask in ("none", "zero"):
            record = wrong[mask]
            for figure in (f"a cache gets {positions_text(record['rows_a_cache_gets_wrong'])} "
                           f"wrong",
                           f"{record['weight_on_unseen_tokens'][0]} of its weight",
                           f"by up to {record['largest_out_difference'][0]}"):
                self.assertTrue(figure in readme,
                                f"kv_cache/README.md should say, for {mask}: {figure}")

    def test_the_recorded_cache_benchmark_adds_up(self):
        """Its speedups follow from its times, its counts from the formulas, the cache is at least
        100× faster at T=256 (the bar it was built to), and both advantages grow with T."""
        text = read("benchmarks/bench-attention.txt")
        table = text[text.index("| T | cache s"):]
        rows = [line.split("|")[1:-1] for line in table.splitlines() if re.match(r"\| \d", line)]
        self.assertEqual([int(row[0]) for row in rows], [64, 128, 256, 512])
        speedups = {}
        for T, cache_s, recompute_s, speedup, cache_count, recompute_count, ratio in rows:
            T, cache_s, recompute_s = int(T), float(cache_s), float(recompute_s)
            # printed to 4 decimals: the speedup lies between the ratios of the rounding's extremes
            half = 0.5e-4
            low = (recompute_s - half) / (cache_s + half)
            high = (recompute_s + half) / (cache_s - half)
            speedups[T] = float(speedup.strip().rstrip("×"))
            self.assertTrue(low - 0.05 <= speedups[T] <= high + 0.05, f"T={T}")
            counts = (cache_multiply_adds(T, 64, 16), recompute_multiply_adds(T, 64, 16))
            printed = (int(cache_count.replace(",", "")), int(recompute_count.replace(",", "")))
            self.assertEqual(printed, counts, f"T={T}")
            self.assertEqual(ratio.strip(), f"{counts[1] / counts[0]:.1f}×", f"T={T}")
        self.assertGreaterEqual(speedups[256], 100)
        self.assertEqual(list(speedups.values()), sorted(speedups.values()))
        said = (f"At T=256 the cache is {rows[2][3].strip()} faster (the counts say "
                f"{rows[2][6].strip()}), at T=512 {rows[3][3].strip()} ({rows[3][6].strip()})")
        readme = re.sub(r"\s+", " ", read("benchmarks/README.md"))    # where the benchmark is
        self.assertTrue(said in readme, f"benchmarks/README.md should say {said}")


if __name__ == "__main__":
    unittest.main()

"""The lesson's checks of attention.py and trace_attention.py, one test for each bad input, and
the docstring examples of every module a learner reads."""

import math
import os
import shutil
import tempfile
import unittest
from math import fsum
from unittest import mock

import attention
from attention import (MASK_MODES, attention_backward, attention_forward, init_attention, matmul,
                       shape, transpose)
import bpe
from common import checks, golden, gradcheck, safe_io, views
from common.golden import to_json
from common.safe_io import write_atomic
from tests.helpers import MessageAssertions, run_main, run_script
import trace_attention as ta

HERE = os.path.dirname(os.path.abspath(__file__))

# Central differences with EPS = 1e-6 on a loss of size ~1: the truncation error is O(EPS²) ≈ 1e-12
# and the rounding error about 1e-16 / EPS ≈ 1e-10, so a correct gradient agrees to well within 1e-8
# and a wrong one (a dropped path, a missing 1/√d) misses by far more.
GRAD_TOLERANCE = 1e-8


def lesson_run(mask="causal", sentence=ta.SENTENCE):
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, sentence, embedding)
    return params, x, attention_forward(params, x, mask)


class LessonChecks(unittest.TestCase):

    def test_recorded_trace(self):
        with open(os.path.join(HERE, "attention-trace.json"), encoding="utf-8") as f:
            self.assertEqual(
                f.read(), to_json(ta.trace()), "attention-trace.json is stale: run --write"
            )

    def test_lesson_figures(self):
        """The numbers the lesson prints, as it prints them."""
        t = ta.trace()
        self.assertEqual(t["tokens"], ["mia", " has", " a", " red", " ball", "."])
        self.assertEqual(t["ids"], [58, 36, 33, 89, 85, 4])
        self.assertEqual(t["changed_tokens"], ["mia", " has", " a", " red", " hat", "."])
        self.assertEqual(t["x"][0], [-0.75, 0.28, 0.69, 0.22])
        self.assertEqual(t["params"]["Wq"][0], [-0.05, 0.06])
        self.assertEqual(t["scores"][0], [-0.0306, None, None, None, None, None])
        self.assertEqual(t["scores"][5], [-0.0431, 0.1031, -0.0155, 0.0036, -0.0151, 0.0892])
        self.assertEqual(t["weights"][1], [0.5164, 0.4836, 0.0, 0.0, 0.0, 0.0])
        self.assertEqual(t["weights"][5], [0.1562, 0.1808, 0.1606, 0.1636, 0.1606, 0.1783])
        self.assertEqual(t["row_sums"], [1.0] * 6)
        self.assertEqual(t["gradient_check"], {"epsilon": 1e-06, "max_error_rounded": 0.0})
        self.assertEqual(
            t["masks"]["causal"],
            {"rows_changed_by_the_edit": [4, 5], "weight_on_future_row_0": 0.0},
        )
        self.assertEqual(t["masks"]["none"]["rows_changed_by_the_edit"], [0, 1, 2, 3, 4, 5])
        self.assertEqual(t["masks"]["none"]["weight_on_future_row_0"], 0.8379)
        self.assertEqual(t["masks"]["zero"]["rows_changed_by_the_edit"], [0, 1, 2, 3, 4, 5])
        self.assertEqual(t["masks"]["zero"]["weight_on_future_row_0"], 0.8375)

    def test_shapes(self):
        params, x, cache = lesson_run()
        T = len(x)
        expected = {
            "q": (T, 2),
            "k": (T, 2),
            "v": (T, 2),
            "scores": (T, T),
            "weights": (T, T),
            "mixed": (T, 2),
            "out": (T, 4),
        }
        for name, want in expected.items():
            self.assertEqual(shape(cache[name]), want, name)
        self.assertEqual(
            {name: shape(m) for name, m in params.items()},
            {"Wq": (4, 2), "Wk": (4, 2), "Wv": (4, 2), "Wo": (2, 4)},
        )

    def test_rows_sum_to_one_and_future_weights_are_zero(self):
        _, _, cache = lesson_run()
        for i, row in enumerate(cache["weights"]):
            self.assertAlmostEqual(fsum(row), 1.0, places=15, msg=f"row {i}")
            self.assertEqual(
                row[i + 1 :], [0.0] * (len(row) - i - 1), f"row {i} puts weight on the future"
            )
            self.assertEqual(cache["scores"][i][i + 1 :], [-math.inf] * (len(row) - i - 1))

    def check_gradients(self, mask):
        params, x, cache = lesson_run(mask)
        r = ta.readout(len(x))
        grads, d_x = attention_backward(params, x, cache, r)
        numeric = ta.numeric_grad(params, x, r, mask)
        numeric["x"] = ta.central_differences(lambda: ta.loss(params, x, r, mask), x)
        grads["x"] = d_x
        for name in ("Wq", "Wk", "Wv", "Wo", "x"):
            for i, (row_a, row_n) in enumerate(zip(grads[name], numeric[name])):
                for j, (a, n) in enumerate(zip(row_a, row_n)):
                    self.assertLess(
                        abs(a - n), GRAD_TOLERANCE, f"{mask}: d{name}[{i}][{j}] {a} vs numeric {n}"
                    )

    def test_gradients_match_finite_differences(self):
        """Every weight and every input value, causal mask."""
        self.check_gradients("causal")

    def test_gradients_match_finite_differences_in_every_mask_mode(self):
        """In "zero" mode the future scores are constants: a backward that sent them to q and k
        would fail."""
        for mode in MASK_MODES:
            with self.subTest(mode=mode):
                self.check_gradients(mode)

    def test_each_position_attends_to_itself(self):
        _, _, cache = lesson_run()
        for i, row in enumerate(cache["weights"]):
            self.assertGreater(row[i], 0.0, f"position {i} gives itself no weight")
        self.assertEqual(cache["weights"][0][0], 1.0)

    def test_scores_are_scaled_by_the_square_root_of_the_head_size(self):
        _, _, cache = lesson_run()
        q, k = cache["q"], cache["k"]
        for i in range(len(q)):
            for j in range(i + 1):
                unscaled = fsum(a * b for a, b in zip(q[i], k[j]))
                self.assertEqual(
                    cache["scores"][i][j], unscaled * (1 / math.sqrt(2)), f"scores[{i}][{j}]"
                )

    def test_future_token_does_not_change_earlier_rows(self):
        params, x, cache = lesson_run()
        for position in range(len(x)):
            edited = [list(row) for row in x]
            edited[position] = [value + 0.5 for value in edited[position]]
            out = attention_forward(params, edited)["out"]
            self.assertEqual(
                out[:position], cache["out"][:position], f"editing {position} moved an earlier row"
            )
            self.assertNotEqual(out[position], cache["out"][position])

    def test_no_mask_leaks_the_future(self):
        params, x, cache = lesson_run("none")
        edited = x[:-1] + [[value + 0.5 for value in x[-1]]]
        self.assertNotEqual(attention_forward(params, edited, "none")["out"][0], cache["out"][0])
        self.assertGreater(fsum(cache["weights"][0][1:]), 0.5)

    def test_zeroed_scores_still_leak(self):
        """Setting future scores to 0.0 is not masking: exp(0) = 1 still gives them weight."""
        params, x, cache = lesson_run("zero")
        self.assertEqual(cache["scores"][0][1:], [0.0] * 5)
        self.assertTrue(all(w > 0 for w in cache["weights"][0][1:]))
        edited = x[:-1] + [[value + 0.5 for value in x[-1]]]
        self.assertNotEqual(attention_forward(params, edited, "zero")["out"][0], cache["out"][0])

    def test_changed_sentence_moves_only_the_edited_row_and_later(self):
        params, x, cache = lesson_run()
        _, _, changed = lesson_run(sentence=ta.CHANGED)
        self.assertEqual(ta.changed_rows(cache["out"], changed["out"]), [4, 5])

    def test_init_attention_draws_in_the_lesson_order(self):
        import random

        rng = random.Random(3)
        draws = [round(rng.uniform(-0.5, 0.5), 2) for _ in range(3 * 2 * 1 + 1 * 2)]
        params = init_attention(2, 1, 3)
        flat = [v for name in ("Wq", "Wk", "Wv", "Wo") for row in params[name] for v in row]
        self.assertEqual(flat, draws)

    def test_matmul_and_transpose(self):
        self.assertEqual(matmul([[1, 2], [3, 4]], [[5], [6]]), [[17], [39]])
        self.assertEqual(transpose([[1, 2, 3]]), [[1], [2], [3]])
        self.assertEqual(shape([[1, 2, 3], [4, 5, 6]]), (2, 3))


class BadInput(MessageAssertions, unittest.TestCase):
    """Each mistake gets a ValueError or TypeError that names what was expected and what came."""

    def setUp(self):
        self.params, self.x, self.cache = lesson_run()

    def test_unknown_mask_mode(self):
        with self.assertRaises(ValueError) as caught:
            attention_forward(self.params, self.x, "causall")
        self.assertTrue(str(caught.exception).startswith("mask must be one of"), caught.exception)
        self.assertIn("'causall'", str(caught.exception))

    def test_empty_sequence(self):
        self.assertMessage(ValueError, "empty sequence", attention_forward, self.params, [])

    def test_wrong_input_width(self):
        self.assertMessage(
            ValueError,
            "must have 4 numbers, got 3",
            attention_forward,
            self.params,
            [[1.0, 2.0, 3.0]],
        )

    def test_ragged_rows(self):
        ragged = [[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3]]
        self.assertMessage(
            ValueError,
            "each input row must have 4 numbers, got 3 in row 2",
            attention_forward,
            self.params,
            ragged,
        )

    def test_nan_in_x(self):
        self.assertMessage(
            ValueError,
            "x[0][2] must be a finite number, got nan",
            attention_forward,
            self.params,
            [[0.1, 0.2, math.nan, 0.4]],
        )

    def test_infinity_in_x(self):
        self.assertMessage(
            ValueError,
            "x[0][0] must be a finite number, got inf",
            attention_forward,
            self.params,
            [[math.inf, 0.2, 0.3, 0.4]],
        )

    def test_non_number_in_x(self):
        self.assertMessage(
            TypeError,
            "x[0][1] must be a number, got str '0.2'",
            attention_forward,
            self.params,
            [[0.1, "0.2", 0.3, 0.4]],
        )

    def test_x_not_a_list_of_rows(self):
        self.assertMessage(
            TypeError,
            "x[0] must be a list of numbers, got float",
            attention_forward,
            self.params,
            [0.1, 0.2, 0.3, 0.4],
        )

    def test_params_missing_a_matrix(self):
        params = dict(self.params)
        del params["Wv"]
        self.assertMessage(
            ValueError,
            "params must have Wq, Wk, Wv and Wo, missing Wv",
            attention_forward,
            params,
            self.x,
        )

    def test_params_whose_shapes_do_not_fit(self):
        params = dict(self.params, Wo=[[0.1, 0.2, 0.3, 0.4]])
        self.assertMessage(
            ValueError,
            "Wo must be (d_head, d_model) = (2, 4), got (1, 4)",
            attention_forward,
            params,
            self.x,
        )
        params = dict(self.params, Wk=[[0.1, 0.2, 0.3]] * 4)
        self.assertMessage(
            ValueError,
            "Wk must be (d_model, d_head) = (4, 2) like Wq, got (4, 3)",
            attention_forward,
            params,
            self.x,
        )

    def test_non_finite_weight(self):
        params = dict(self.params, Wq=[list(row) for row in self.params["Wq"]])
        params["Wq"][1][0] = math.nan
        self.assertMessage(
            ValueError,
            "Wq[1][0] must be a finite number, got nan",
            attention_forward,
            params,
            self.x,
        )

    def test_d_out_of_the_wrong_shape(self):
        self.assertMessage(
            ValueError,
            "each d_out row must have 4 numbers, got 2 in row 1",
            attention_backward,
            self.params,
            self.x,
            self.cache,
            [[1.0, 2.0]] * 6,
        )
        self.assertMessage(
            ValueError,
            "d_out must have one row per position (6, 4), got 5 rows",
            attention_backward,
            self.params,
            self.x,
            self.cache,
            [[1.0] * 4] * 5,
        )

    def test_d_out_not_finite(self):
        d_out = [[1.0] * 4 for _ in range(6)]
        d_out[3][3] = -math.inf
        self.assertMessage(
            ValueError,
            "d_out[3][3] must be a finite number, got -inf",
            attention_backward,
            self.params,
            self.x,
            self.cache,
            d_out,
        )

    def test_cache_from_another_call(self):
        self.assertMessage(
            ValueError,
            "cache must be the dict attention_forward returned",
            attention_backward,
            self.params,
            self.x,
            {"out": []},
            ta.readout(6),
        )

    def test_matmul_names_both_shapes(self):
        self.assertMessage(
            ValueError, "(2, 3)·(2, 2)", matmul, [[1, 2, 3], [4, 5, 6]], [[1, 2], [3, 4]]
        )

    def test_init_attention_rejects_a_bad_size(self):
        self.assertMessage(ValueError, "d_head must be at least 1, got 0", init_attention, 4, 0, 1)
        self.assertMessage(
            TypeError, "d_model must be an int, got float 4.0", init_attention, 4.0, 2, 1
        )


class CommandLine(MessageAssertions, unittest.TestCase):
    """trace_attention.py run as a learner runs it, in a temporary copy of the folder."""

    def run_with_files(self, *args, prepare=None):
        """trace_attention.main with its recorded file and tokenizer in a temporary folder."""
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("attention-trace.json", "tokenizer.json"):
                shutil.copy(os.path.join(HERE, name), tmp)
            if prepare:
                prepare(tmp)
            with mock.patch.object(
                ta, "TRACE_PATH", os.path.join(tmp, "attention-trace.json")
            ), mock.patch.object(ta, "TOKENIZER_PATH", os.path.join(tmp, "tokenizer.json")):
                return run_main(ta.main, *args)

    def test_check_passes_on_the_recorded_file_as_a_script(self):
        done = run_script("trace_attention.py", "--check")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_missing_tokenizer_is_one_line_from_the_script(self):
        with tempfile.TemporaryDirectory() as tmp:       # a folder without tokenizer.json
            done = run_script("trace_attention.py", folder=tmp)
        self.assertOneLineError(done, "tokenizer.json")

    def test_check_fails_on_a_changed_file(self):
        def tamper(tmp):
            path = os.path.join(tmp, "attention-trace.json")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace("0.5164", "0.5165"))

        self.assertOneLineError(
            self.run_with_files("--check", prepare=tamper), "differs from a fresh run"
        )

    def test_check_fails_on_a_missing_file(self):
        done = self.run_with_files(
            "--check", prepare=lambda tmp: os.remove(os.path.join(tmp, "attention-trace.json"))
        )
        self.assertOneLineError(done, "attention-trace.json")

    def test_corrupt_tokenizer_is_one_line(self):
        def corrupt(tmp):
            with open(os.path.join(tmp, "tokenizer.json"), "w", encoding="utf-8") as f:
                f.write('{"version": 1, "alphabet": ["a"')

        self.assertOneLineError(
            self.run_with_files(prepare=corrupt), "tokenizer.json is not valid JSON"
        )

    def test_write_then_check(self):
        done = self.run_with_files(
            "--check", prepare=lambda tmp: os.remove(os.path.join(tmp, "attention-trace.json"))
        )
        self.assertNotEqual(done.returncode, 0)
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(os.path.join(HERE, "tokenizer.json"), tmp)
            with mock.patch.object(ta, "TRACE_PATH", os.path.join(tmp, "attention-trace.json")):
                self.assertEqual(run_main(ta.main, "--write").returncode, 0)
                done = run_main(ta.main, "--check")
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_a_bad_argument_is_one_line(self):
        self.assertOneLineError(run_main(ta.main, "--wirte"), "unrecognized arguments: --wirte")

    def test_writing_into_a_missing_folder_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "no-such-folder", "weights.svg")
            self.assertOneLineError(run_main(ta.main, "--svg", target), "the folder")

    def test_interrupted_write_keeps_the_old_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            write_atomic(path, "old\n")
            with self.assertRaises(UnicodeEncodeError):
                write_atomic(path, "new \udc80 text that cannot be encoded\n")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "old\n")
            self.assertEqual(os.listdir(tmp), ["trace.json"])

    def test_a_written_file_is_readable_by_others_like_any_new_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "weights.svg")
            umask = os.umask(0o022)
            try:
                write_atomic(path, "<svg/>\n")
            finally:
                os.umask(umask)
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o644)


if __name__ == "__main__":
    unittest.main()

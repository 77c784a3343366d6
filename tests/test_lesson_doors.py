"""The lesson's layer at its doors, beyond the lesson's own twelve checks (../test_attention.py):
the order init_attention draws in, one test for each bad input, and trace_attention.py's command
line run as a learner runs it."""

import math
import os
import shutil
import tempfile
import unittest
from unittest import mock

from attention import attention_backward, attention_forward, init_attention, matmul
from common.safe_io import write_atomic
from tests.helpers import HERE, MessageAssertions, run_main, run_script
import trace_attention as ta


def lesson_run(mask="causal", sentence=ta.SENTENCE):
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, sentence, embedding)
    return params, x, attention_forward(params, x, mask)


class Drawing(unittest.TestCase):

    def test_init_attention_draws_in_the_lesson_order(self):
        import random

        rng = random.Random(3)
        draws = [round(rng.uniform(-0.5, 0.5), 2) for _ in range(3 * 2 * 1 + 1 * 2)]
        params = init_attention(2, 1, 3)
        flat = [v for name in ("Wq", "Wk", "Wv", "Wo") for row in params[name] for v in row]
        self.assertEqual(flat, draws)


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
                shutil.copyfile(os.path.join(HERE, name), os.path.join(tmp, name))
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
            shutil.copyfile(os.path.join(HERE, "tokenizer.json"),
                            os.path.join(tmp, "tokenizer.json"))
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

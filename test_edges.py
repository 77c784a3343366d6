"""The edges a careless or hostile user finds: overflow, stale caches, strict masks, special write
targets, unsafe view text and broken command lines. Each gets a clear error or the right
behaviour."""

import math
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import unittest
import xml.etree.ElementTree as ET
from unittest import mock

import bpe
import lab06 as lab
import trace_attention as ta
from attention import (attend, attend_backward, attention_backward, attention_forward,
                       init_attention, masked_softmax, matmul, transpose)
from helpers_for_tests import HERE, MessageAssertions, run_main, run_script
from safe_io import write_atomic
from views import heatmaps_svg, panel

HUGE_INT = 10 ** 400    # an int no float can hold


def lesson():
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, ta.SENTENCE, embedding)
    return params, x


class NoSilentInfinity(MessageAssertions, unittest.TestCase):

    def test_matmul_that_overflows_raises_naming_both_shapes(self):
        self.assertMessage(ValueError, "matmul (1, 1)·(1, 1) overflowed (entry [0][0] is inf): "
                           "the numbers are too large for floats", matmul, [[1e308]], [[10.0]])
        self.assertMessage(ValueError, "matmul (1, 2)·(2, 1) overflowed (a sum)", matmul,
                           [[1e308, 1e308]], [[10.0], [-10.0]])      # inf − inf inside fsum
        self.assertMessage(ValueError, "matmul (1, 2)·(2, 1) overflowed (a sum)", matmul,
                           [[1e308, 1e308]], [[1.5], [1.5]])         # fsum's own overflow

    def test_forward_whose_output_overflows_raises_naming_the_product(self):
        params, x = lesson()
        params = dict(params, Wo=[[10.0] * 4, [10.0] * 4])
        x[0][0] = 1e308     # q·kᵀ, the raw scores, (6, 2)·(2, 6), is the product that overflows
        self.assertMessage(ValueError, "matmul (6, 2)·(2, 6) overflowed", attention_forward,
                           params, x)
        x[0][0] = 1e150     # the scores stay finite; out = mixed·Wo does not
        self.assertMessage(ValueError, "matmul (6, 2)·(2, 4) overflowed (entry [0][0] is inf)",
                           attention_forward, dict(params, Wo=[[1e160] * 4, [1e160] * 4]), x)

    def test_backward_whose_gradients_overflow_raises(self):
        params, x = lesson()
        cache = attention_forward(params, x)
        self.assertMessage(ValueError, "overflowed", attention_backward, params, x, cache,
                           [[1e308] * 4 for _ in x])

    def test_an_int_too_large_for_a_float_is_a_value_error_naming_where(self):
        params, x = lesson()
        x[0][0] = HUGE_INT
        self.assertMessage(ValueError, "x[0][0] must be a number a float can hold",
                           attention_forward, params, x)
        _, x = lesson()
        wq = [list(row) for row in params["Wq"]]
        wq[1][1] = HUGE_INT
        self.assertMessage(ValueError, "Wq[1][1] must be a number a float can hold",
                           attention_forward, dict(params, Wq=wq), x)
        cache = attention_forward(params, x)
        d_out = [[0.0] * 4 for _ in x]
        d_out[2][3] = -HUGE_INT
        self.assertMessage(ValueError, "d_out[2][3] must be a number a float can hold",
                           attention_backward, params, x, cache, d_out)
        q, k, v, allowed = lab.projected()
        q[0][0] = HUGE_INT
        self.assertMessage(ValueError, "q[0][0] must be a number a float can hold",
                           attend, q, k, v, allowed)
        self.assertMessage(ValueError, "score 0 must be a number a float can hold",
                           masked_softmax, [HUGE_INT, 1.0], [True, True])
        q, k, v, allowed = lab.projected()
        self.assertMessage(ValueError, "blocked_score must be a number a float can hold",
                           attend, q, k, v, allowed, HUGE_INT)


class CacheBelongsToTheCall(MessageAssertions, unittest.TestCase):

    def setUp(self):
        self.params, self.x = lesson()
        self.cache = attention_forward(self.params, self.x)
        self.d_out = ta.readout(len(self.x))

    def test_cache_from_another_x_of_the_same_size_is_refused(self):
        other = [[value + 0.1 for value in row] for row in self.x]
        self.assertMessage(ValueError, "for another x", attention_backward, self.params, other,
                           self.cache, self.d_out)

    def test_cache_from_other_params_of_the_same_size_is_refused(self):
        other = init_attention(4, 2, seed=12)
        self.assertMessage(ValueError, "for another params", attention_backward, other, self.x,
                           self.cache, self.d_out)

    def test_x_edited_in_place_after_the_forward_is_refused(self):
        self.x[2][1] += 1.0
        self.assertMessage(ValueError, "or x was changed since", attention_backward, self.params,
                           self.x, self.cache, self.d_out)

    def test_cache_missing_an_entry_is_a_value_error_naming_it(self):
        for name in ("k", "v", "blocked_score"):
            cache = dict(self.cache)
            del cache[name]
            with self.subTest(name=name):
                self.assertMessage(ValueError, f"it has no {name}", attention_backward,
                                   self.params, self.x, cache, self.d_out)


class AttendBackwardChecks(MessageAssertions, unittest.TestCase):

    def setUp(self):
        self.cache = attend(*lab.projected())

    def test_d_mixed_of_the_wrong_width_is_refused(self):
        self.assertMessage(ValueError, "each d_mixed row must have 2 numbers, got 1 in row 0",
                           attend_backward, self.cache, [[0.1]] * 3)

    def test_d_mixed_with_the_wrong_number_of_rows_is_refused(self):
        self.assertMessage(ValueError, "d_mixed must have one row per query (3, 2), got 2 rows",
                           attend_backward, self.cache, [[0.1, 0.1]] * 2)

    def test_non_finite_d_mixed_is_refused(self):
        self.assertMessage(ValueError, "d_mixed[1][0] must be a finite number, got nan",
                           attend_backward, self.cache, [[0.1, 0.1], [math.nan, 0.1], [0.1, 0.1]])

    def test_a_head_that_attend_did_not_return_is_refused(self):
        self.assertMessage(ValueError, "cache must be the dict attend returned", attend_backward,
                           {}, [[0.1, 0.1]] * 3)


class StrictMasksAndShapes(MessageAssertions, unittest.TestCase):

    def test_masked_softmax_takes_bools_only(self):
        self.assertMessage(ValueError, "allowed[0] must be True or False, got int 1",
                           masked_softmax, [1.0, 2.0, 3.0], [1, 0, 1])
        self.assertMessage(ValueError, "allowed[0] must be True or False, got str '1'",
                           masked_softmax, [1.0, 2.0], ["1", "0"])

    def test_masked_softmax_takes_lists_only(self):
        self.assertMessage(TypeError, "masked_softmax needs allowed as a list, got str",
                           masked_softmax, [1.0, 2.0], "TF")
        self.assertMessage(TypeError, "masked_softmax needs scores as a list, got generator",
                           masked_softmax, (s for s in [1.0, 2.0]), [True, True])

    def test_masked_softmax_needs_scores_and_mask_of_one_length(self):
        self.assertMessage(ValueError, "got 3 scores and 1 mask entries", masked_softmax,
                           [1.0, 2.0, 3.0], [True])
        self.assertMessage(ValueError, "got 0 scores and 0 mask entries", masked_softmax, [], [])

    def test_a_bool_is_not_a_blocked_score(self):
        self.assertMessage(TypeError, "blocked_score must be -inf or a finite number, got bool",
                           attend, *lab.projected(), True)

    def test_transpose_of_ragged_rows_raises_instead_of_dropping_entries(self):
        self.assertMessage(ValueError, "transpose needs rows of one length, got (2, 1/2)",
                           transpose, [[1.0, 2.0], [3.0]])


class WritesGoWhereMeant(MessageAssertions, unittest.TestCase):

    def test_a_symlink_keeps_being_a_link_and_its_target_is_replaced(self):
        with tempfile.TemporaryDirectory() as tmp:
            target, link = os.path.join(tmp, "real.svg"), os.path.join(tmp, "link.svg")
            write_atomic(target, "old\n")
            os.symlink(target, link)
            write_atomic(link, "new\n")
            self.assertTrue(os.path.islink(link))
            with open(target, encoding="utf-8") as f:
                self.assertEqual(f.read(), "new\n")
            self.assertEqual(sorted(os.listdir(tmp)), ["link.svg", "real.svg"])

    def test_a_fifo_is_written_to_and_stays_a_fifo(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "pipe")
            os.mkfifo(fifo)
            received = []
            def read():
                with open(fifo, encoding="utf-8") as f:
                    received.append(f.read())
            reader = threading.Thread(target=read)
            reader.start()
            write_atomic(fifo, "through the pipe\n")
            reader.join(timeout=30)
            self.assertEqual(received, ["through the pipe\n"])
            self.assertTrue(stat.S_ISFIFO(os.stat(fifo).st_mode))

    def test_a_device_is_written_to_and_stays_a_device(self):
        write_atomic(os.devnull, "nothing\n")
        self.assertTrue(stat.S_ISCHR(os.stat(os.devnull).st_mode))

    def test_a_long_valid_name_can_be_written(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "w" * 246 + ".svg")
            write_atomic(path, "<svg/>\n")
            self.assertEqual(os.listdir(tmp), [os.path.basename(path)])

    def test_sigterm_during_a_write_leaves_the_old_file_and_no_temporary_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            write_atomic(path, "old\n")
            script = ("import os, signal, safe_io\n"
                      "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGTERM)\n"
                      f"safe_io.write_atomic({path!r}, 'new\\n')\n")
            done = subprocess.run([sys.executable, "-c", script], cwd=HERE, capture_output=True,
                                  text=True)
            self.assertEqual(done.returncode, 128 + signal.SIGTERM, done.stderr)
            self.assertEqual(os.listdir(tmp), ["trace.json"])
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "old\n")

    def test_gitignore_covers_the_temporary_files(self):
        with open(os.path.join(HERE, ".gitignore"), encoding="utf-8") as f:
            self.assertIn(".tmp-*", f.read().split())

    def test_an_error_names_the_target_not_the_temporary_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(OSError) as caught:
                write_atomic(tmp, "a folder is not a file\n")
        self.assertIn(tmp, str(caught.exception))
        self.assertNotIn(".tmp-", str(caught.exception))

    def test_an_empty_svg_path_is_refused(self):
        self.assertOneLineError(run_main(ta.main, "--svg", ""), "the output path is empty")
        self.assertOneLineError(run_script("perturb_attention.py", "--svg", ""), "the output path is empty")

    def test_a_recorded_file_is_not_a_view_target(self):
        for name in ("attention-trace.json", "perturb-trace.json", "tokenizer.json",
                     "attention.py"):
            path = os.path.join(HERE, name)
            with open(path, encoding="utf-8") as f:
                before = f.read()
            with self.subTest(name=name):
                self.assertOneLineError(run_main(ta.main, "--svg", path),
                                        "recorded or source files")
                self.assertOneLineError(run_main(bpe.main, "train", path, "--vocab-size", "40",
                                                 "--out", path), "recorded or source files")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), before, f"{name} was overwritten")


class SafeViews(MessageAssertions, unittest.TestCase):

    def svg_titled(self, title):
        return heatmaps_svg([panel(title, ["a"], ["a"], [[1.0]], [[False]])], note=title)

    def test_a_quote_in_a_title_stays_text(self):
        title = 'x" onload="alert(1)'
        root = ET.fromstring(self.svg_titled(title))
        group = next(g for g in root.iter("{http://www.w3.org/2000/svg}g")
                     if g.get("class") == "panel")
        self.assertEqual(group.get("data-title"), title)
        self.assertIsNone(group.get("onload"))

    def test_a_control_character_gives_well_formed_xml(self):
        ET.fromstring(self.svg_titled("bell\x07 and null\x00"))

    def test_labels_that_do_not_fit_the_weights_are_refused(self):
        self.assertMessage(ValueError, "weights must be 2 × 2 to fit the labels", panel, "t",
                           ["a", "b"], ["a", "b"], [[1.0, 0.0]], [[False, False]])
        self.assertMessage(ValueError, "hatched must be 1 × 1", panel, "t", ["a"], ["a"], [[1.0]],
                           [[False, True]])

    def test_no_panels_is_refused(self):
        self.assertMessage(ValueError, "needs at least one panel", heatmaps_svg, [])

    def test_a_sentence_beyond_the_limit_is_one_line(self):
        done = run_main(ta.main, "--sentence", "a " * 1200, "--table")
        self.assertOneLineError(done, "has 1201 tokens: the trace and its views take at most 64")


class NoTraceback(MessageAssertions, unittest.TestCase):

    def run_script(self, *args, **options):
        return subprocess.run([sys.executable, *args], cwd=HERE, capture_output=True, text=True,
                              **options)

    def test_closed_stdout_is_one_line(self):
        done = subprocess.run([sys.executable, "trace_attention.py"], cwd=HERE, text=True,
                              stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1))
        self.assertOneLineError(done, "standard output is closed")

    def test_deeply_nested_json_as_the_tokenizer_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "nested.json")
            with open(path, "w", encoding="utf-8") as f:
                f.write("[" * 100000)
            done = run_main(bpe.main, "encode", "mia", "--tokenizer", path)
            self.assertOneLineError(done, "nested.json is nested too deeply")
            with mock.patch.object(ta, "TOKENIZER_PATH", path):
                self.assertOneLineError(run_main(ta.main), "nested.json is nested too deeply")

    def test_a_file_that_never_ends_is_refused_after_a_cap(self):
        self.assertOneLineError(run_main(bpe.main, "encode", "mia", "--tokenizer", "/dev/zero"),
                                "zero is larger than 8 MB")
        with mock.patch.object(ta, "TRACE_PATH", "/dev/zero"):
            self.assertOneLineError(run_main(ta.main, "--check"), "zero is larger than 8 MB")

    def test_bad_utf8_names_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "latin1.json")
            with open(path, "wb") as f:
                f.write(b'{"version": 1, "alphabet": ["\xe9"]}')
            done = run_main(bpe.main, "encode", "mia", "--tokenizer", path)
        self.assertOneLineError(done, "latin1.json is not UTF-8 text")


if __name__ == "__main__":
    unittest.main()

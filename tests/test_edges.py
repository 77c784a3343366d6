"""The edges a careless or hostile user finds: overflow, stale or edited caches, strict masks and
shapes, unsafe view text and broken command lines (where writes go: test_writes.py). Each gets a
clear error or the right behaviour, and each test names the case it reproduces."""

import json
import math
import os
import shutil
import random
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from unittest import mock

from attention import (add, attention_backward, attention_forward, causal_mask, init_attention,
                       matmul, softmax_row, transpose)
import bpe
from common import cli, golden, gradcheck, views
from common.views import heatmaps_svg, panel, text_table
from lab06.scaffold import scaffold
from lab06 import lab
from lab06 import attend, attend_backward, masked_softmax
from tests.helpers import (HERE, MessageAssertions, folder_copy, run_main, run_script,
                           shipped)
import trace_attention as ta

READMES = [name for name in shipped("README.md") if name.count(os.sep) <= 1]  # top and folders'


HUGE_INT = 10 ** 400    # an int no float can hold


def lesson():
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, ta.SENTENCE, embedding)
    return params, x


class NoSilentInfinity(MessageAssertions, unittest.TestCase):

    def test_matmul_that_could_overflow_raises_naming_both_shapes(self):
        self.assertMessage(ValueError, "matmul (1, 1)·(1, 1) could overflow: a sum of 1 product "
                           "of entries up to 1e+308 and 10 can pass 1.8e+308; the numbers are too "
                           "large for floats", matmul, [[1e308]], [[10.0]])
        self.assertMessage(ValueError, "matmul (1, 2)·(2, 1) could overflow: a sum of 2 products",
                           matmul, [[1e308, 1e308]], [[10.0], [-10.0]])   # inf − inf in fsum
        self.assertMessage(ValueError, "matmul (1, 2)·(2, 1) could overflow", matmul,
                           [[1e308, 1e308]], [[1.5], [1.5]])              # fsum's own overflow
        self.assertEqual(matmul([[1e153]], [[1e153]]), [[1e306]])           # close, and fine

    def test_forward_whose_output_overflows_raises_naming_the_product(self):
        params, x = lesson()
        params = dict(params, Wo=[[10.0] * 4, [10.0] * 4])
        x[0][0] = 1e308     # q = x·Wq, (6, 4)·(4, 2), is the first product that could overflow
        self.assertMessage(ValueError, "matmul (6, 4)·(4, 2) could overflow", attention_forward,
                           params, x)
        x[0][0] = 1e100     # the scores stay finite; out = mixed·Wo does not
        self.assertMessage(ValueError, "matmul (6, 2)·(2, 4) could overflow", attention_forward,
                           dict(params, Wo=[[1e250] * 4, [1e250] * 4]), x)

    def test_backward_whose_gradients_overflow_raises(self):
        params, x = lesson()
        cache = attention_forward(params, x)
        self.assertMessage(ValueError, "could overflow", attention_backward, params, x, cache,
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
        self.assertMessage(ValueError, "score 1 must be a number a float can hold",
                           masked_softmax, [HUGE_INT, 1.0], [True, True])
        q, k, v, allowed = lab.projected()
        self.assertMessage(ValueError, "blocked_score must be a number a float can hold",
                           attend, q, k, v, allowed, HUGE_INT)


class CacheBelongsToTheCall(MessageAssertions, unittest.TestCase):
    """A backward pass takes only the cache its forward returned, unchanged: the seal."""

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
        for name in ("k", "v", "scale"):
            cache = dict(self.cache)
            del cache[name]
            with self.subTest(name=name):
                self.assertMessage(ValueError, f"it has no {name}", attention_backward,
                                   self.params, self.x, cache, self.d_out)


    def test_rounded_weights_are_refused_and_the_experiment_is_pointed_to(self):
        self.cache["weights"] = [[round(w, 2) for w in row] for row in self.cache["weights"]]
        self.assertMessage(ValueError, "cache is not what attention_forward returned: an entry "
                           "was changed or replaced since", attention_backward, self.params,
                           self.x, self.cache, self.d_out)
        self.assertMessage(ValueError, "hand the edited matrices to lab06's attend(q, k, v, "
                           "allowed)", attention_backward, self.params, self.x, self.cache,
                           self.d_out)

    def test_a_replaced_seal_or_entry_is_a_value_error_naming_the_cache(self):
        for what, cache in (("seal", {**self.cache, "seal": []}),
                            ("mixed", {**self.cache, "mixed": []}),
                            ("q", {**self.cache, "q": None})):
            with self.subTest(replaced=what):
                self.assertMessage(ValueError, "cache is not what attention_forward returned",
                                   attention_backward, self.params, self.x, cache, self.d_out)

    def test_an_edit_of_the_callers_mask_after_attend_changes_no_gradient(self):
        q, k, v, allowed = lab.projected()
        d_mixed = [[0.5, -1.0], [0.25, 2.0], [1.0, 1.0]]
        cache = attend(q, k, v, allowed)
        before = attend_backward(cache, d_mixed)
        allowed[2][1] = False          # the cache owns its copy: this changes nothing
        q[0][0] = 9.0
        self.assertEqual(attend_backward(cache, d_mixed), before)

    def test_an_edit_of_attends_cache_is_refused(self):
        q, k, v, allowed = lab.projected()
        d_mixed = [[0.5, -1.0]] * 3
        for what, edit in (("allowed", lambda c: c["allowed"][2].__setitem__(1, False)),
                           ("mixed", lambda c: c.__setitem__("mixed", [])),
                           ("q", lambda c: c.__setitem__("q", None))):
            cache = attend(q, k, v, allowed)
            edit(cache)
            with self.subTest(edited=what):
                self.assertMessage(ValueError, "cache is not what attend returned",
                                   attend_backward, cache, d_mixed)


class HelpersAtTheDoor(MessageAssertions, unittest.TestCase):
    """The list helpers name what is wrong instead of passing Python's own message along."""

    def test_softmax_row_names_what_it_cannot_take(self):
        for row, error, fragment in (
                ([], ValueError, "softmax_row needs at least one score, got an empty row"),
                ((s for s in [1.0, 2.0]), TypeError, "softmax_row needs a list of scores, got "
                                                     "generator"),
                ([HUGE_INT, 0.0], ValueError, "softmax_row's score 1 must be a number a float can "
                                              "hold, got an int of 1329 bits"),
                ([0.0, math.nan], ValueError, "softmax_row's score 2 must be finite or −∞, got "
                                              "nan"),
                (["a", 0.0], TypeError, "softmax_row's score 1 must be a number, got str 'a'"),
                ([-math.inf] * 2, ValueError, "at least one score that is not −∞, got a row of 2")):
            with self.subTest(row=row):
                self.assertMessage(error, fragment, softmax_row, row)

    def test_matmul_and_add_name_an_entry_that_is_not_a_number(self):
        self.assertMessage(TypeError, "matmul's left side [0][0] must be a number, got str 'a'",
                           matmul, [["a"]], [["b"]])
        self.assertMessage(ValueError, "add's matrix 2 [0][0] must be a finite number, got nan",
                           add, [[1.0]], [[math.nan]])

    def test_a_bool_is_refused_wherever_a_number_or_a_size_is_expected(self):
        params, x = lesson()
        for call, args in ((matmul, ([[True]], [[1.0]])), (add, ([[1.0]], [[False]])),
                           (softmax_row, ([True, 0.0],)), (causal_mask, (True,)),
                           (attention_forward, (params, [[True, 0.0, 0.0, 0.0]])),
                           (attend, ([[True]], [[1.0]], [[1.0]], [[True]]))):
            with self.subTest(call=call.__name__):
                self.assertMessage(TypeError, "got bool", call, *args)

    def test_a_nan_is_called_a_nan_not_an_overflow(self):
        self.assertMessage(ValueError, "matmul's right side [0][0] must be a finite number, got "
                           "nan", matmul, [[1.0]], [[math.nan]])
        params, x = lesson()
        x[1][2] = math.nan
        self.assertMessage(ValueError, "x[1][2] must be a finite number, got nan",
                           attention_forward, params, x)

    def test_the_layer_on_huge_inputs_names_the_product_that_could_overflow(self):
        params, _ = lesson()
        self.assertMessage(ValueError, "matmul (1, 4)·(4, 2) could overflow", attention_forward,
                           params, [[1e308] * 4])

    def test_causal_mask_takes_a_size_of_at_least_1(self):
        self.assertMessage(ValueError, "T must be at least 1, got -1", causal_mask, -1)
        self.assertMessage(TypeError, "T must be an int, got bool True", causal_mask, True)

    def test_a_list_whose_len_lies_is_refused(self):
        class Lying(list):
            def __len__(self):
                return 5

        params, x = lesson()
        self.assertMessage(TypeError, "x must be a list of rows, got Lying", attention_forward,
                           params, Lying(x))
        self.assertMessage(TypeError, "x[0] must be a list of numbers, got Lying",
                           attention_forward, params, [Lying(x[0])] + x[1:])

    def test_max_err_and_loss_refuse_shapes_that_do_not_fit(self):
        self.assertMessage(ValueError, "max_err needs W of one shape on both sides",
                           gradcheck.max_err, {"W": [[1.0, 2.0]]}, {"W": [[1.0]]})
        self.assertMessage(ValueError, "max_err needs the same gradients on both sides",
                           gradcheck.max_err, {"W": [[1.0]]}, {"V": [[1.0]]})
        params, x = lesson()
        self.assertMessage(ValueError, "loss needs r of out's shape (6, 4), got 5 rows",
                           ta.loss, params, x, ta.readout(5))

    def test_text_table_refuses_rows_that_do_not_fit_the_labels(self):
        self.assertMessage(ValueError, "text_table needs 2 rows of 2 entries to fit the labels, "
                           "got rows of [2, 1] entries", text_table, ["a", "b"], ["x", "y"],
                           [[1.0, 2.0], [1.0]])


class Tokenizers(MessageAssertions, unittest.TestCase):

    def test_a_tokenizer_of_none_is_a_type_error(self):
        self.assertMessage(TypeError, "alphabet must be a list, got NoneType", bpe.Tokenizer,
                           None, [])

    def test_a_lone_surrogate_is_refused_at_train_not_at_save(self):
        for trainer in (bpe.train, bpe.train_plain):
            with self.subTest(trainer=trainer.__name__):
                self.assertMessage(ValueError, "text holds '\\udc80' at position 3, half of a "
                                   "surrogate pair", trainer, "ab\udc80c", 10)

    def test_training_on_one_long_word_takes_a_linear_number_of_steps(self):
        """The lines learn_merges runs, for a word of n and of 2n letters: twice as many, give or
        take. Before, each merge visited the word once for every time it was listed, and deleted
        in place (its tail moved at every merge): 0.7, 3.1 and 10.5 million lines for 1000, 2000
        and 4000 letters, against 32, 62 and 123 thousand now."""
        def steps(text):
            count = 0
            code = bpe.learn_merges.__code__

            def local(frame, event, arg):
                nonlocal count
                count += event == "line"
                return local

            sys.settrace(lambda frame, event, arg: local if frame.f_code is code else None)
            try:
                bpe.train(text, 40)
            finally:
                sys.settrace(None)
            return count

        rng = random.Random(20)
        word = "".join(rng.choice("ab") for _ in range(2000))
        short, long = steps(word[:1000]), steps(word)
        self.assertLess(long, 2.3 * short, f"{short} steps for 1000 letters, {long} for 2000")
        self.assertLess(long, 50 * len(word))


class AttendBackwardChecks(MessageAssertions, unittest.TestCase):

    def setUp(self):
        self.cache = attend(*lab.projected())

    def test_d_mixed_of_the_wrong_width_is_refused(self):
        self.assertMessage(ValueError, "each d_mixed row must have 2 numbers, got 1 in row 1",
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


class LabHeadsAndFlags(MessageAssertions, unittest.TestCase):
    """The lab's command line with heads and files of every kind."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def head_file(self, name, **head):
        path = os.path.join(self.tmp, name)
        eye = [[1.0, 0.0], [0.0, 1.0]]
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"X": [[1.0, 0.0]] * 3, "WQ": eye, "WK": eye, "WV": eye, **head}, f)
        return path

    def test_a_head_of_3000_positions_is_refused_at_once_with_the_limit(self):
        done = run_script("perturb_attention.py", "--head",
                          self.head_file("big.json", X=[[1.0, 0.0]] * 3000))
        self.assertOneLineError(done, "big.json: X is (3000, 2): the lab takes heads of at most "
                                      "128 positions and widths of at most 64")

    def test_a_null_mask_in_a_head_file_is_named(self):
        done = run_script("perturb_attention.py", "--head", self.head_file("null.json",
                                                                            allowed=None))
        self.assertOneLineError(done, "null.json: allowed must be a (3, 3) matrix of bools")

    def test_a_file_name_is_said_once(self):
        done = run_script("perturb_attention.py", "--head", "/dev/zero")
        self.assertOneLineError(done, "error: zero is larger than 8 MB")
        self.assertEqual(done.stderr.count("zero"), 1, done.stderr)

    def test_a_head_without_its_weights_is_a_value_error_naming_them(self):
        self.assertMessage(ValueError, "missing WQ, WK, WV, allowed", lab.baseline,
                           {"X": [[1.0]]})

    def test_flags_that_cannot_go_together_are_refused_with_exit_2(self):
        for args, fragment in ((("--grade", "t.py", "--table"), "drop --table"),
                               (("--scaffold", "t.py", "--ablate-value", "2"),
                                "drop --ablate-value")):
            with self.subTest(args=args):
                done = run_script("perturb_attention.py", *args)
                self.assertOneLineError(done, fragment)
                self.assertEqual(done.returncode, 2)


class SecondHostilePass(MessageAssertions, unittest.TestCase):
    """What a second hostile pass over every public surface found, each kept fixed."""

    def test_a_cache_edit_that_a_hash_would_miss_is_refused(self):
        params, _ = lesson()
        x = [[-1.0, 0.28, 0.69, 0.22], [0.47, 0.13, -0.97, 0.42]]
        cache = attention_forward(params, x)
        x[0][0] = -2.0                  # hash(-1.0) == hash(-2.0)
        self.assertMessage(ValueError, "for another x", attention_backward, params, x, cache,
                           [[1.0] * 4] * 2)
        x[0][0] = -1.0
        cache["weights"][0][0] = 2.0 ** 61   # hash(1.0) == hash(2.0 ** 61)
        self.assertMessage(ValueError, "an entry was changed", attention_backward, params, x,
                           cache, [[1.0] * 4] * 2)
        reordered = dict(sorted(attention_forward(params, x).items()))
        attention_backward(params, x, reordered, [[1.0] * 4] * 2)     # the same entries: fine

    def test_the_gradient_check_cannot_pass_a_nan_or_leave_a_weight_changed(self):
        self.assertMessage(ValueError, "max_err needs finite gradients, got nan and 1.0 at W[0][0]",
                           gradcheck.max_err, {"W": [[math.nan, 1.0]]}, {"W": [[1.0, 1.0]]})
        self.assertMessage(TypeError, "max_err needs two dicts", gradcheck.max_err, [1], [1])
        for eps in (0, -1e-6, math.nan, math.inf, True):
            with self.subTest(eps=eps):
                self.assertMessage(ValueError, "eps must be a finite number above 0",
                                   gradcheck.central_differences, lambda: 0.0, [[1.0]], eps)
        row = [1.0, 2.0]
        self.assertMessage(ValueError, "rows that are separate lists",
                           gradcheck.central_differences, lambda: 0.0, [row, row])
        w = [[0.5]]

        def breaks():
            raise ValueError("a loss that fails")

        with self.assertRaises(ValueError):
            gradcheck.central_differences(breaks, w)
        self.assertEqual(w, [[0.5]], "the weight was left changed")
        self.assertMessage(ValueError, "f must give a finite number",
                           gradcheck.central_differences, lambda: math.nan, [[1.0]])

    def test_the_lesson_helpers_name_what_they_are_given(self):
        params, x = lesson()
        self.assertMessage(ValueError, "r[0][0] must be a finite number, got nan", ta.loss,
                           params, x, [[math.nan] * 4] * 6)
        self.assertMessage(TypeError, "r must be a list of rows, got NoneType", ta.loss, params,
                           x, None)
        self.assertMessage(ValueError, "rows must be at least 1, got -1", ta.embeddings, -1)
        self.assertMessage(TypeError, "tokenizer must be a bpe.Tokenizer", ta.lesson_setup,
                           "tokenizer.json")
        self.assertMessage(ValueError, "the sentence '' has no token", ta.inputs,
                           ta.lesson_setup()[0], "", ta.lesson_setup()[2])

    def test_the_labs_builders_and_entry_points_refuse_what_does_not_fit(self):
        self.assertMessage(TypeError, "an int, got bool True", lab.ablate_value, True)
        self.assertMessage(ValueError, "got an int of 1329 bits", lab.scale_key, 3, HUGE_INT)
        self.assertMessage(ValueError, "bugs must be a list of names", lab.experiment, lab.HEAD,
                           (), "post-softmax")
        self.assertMessage(TypeError, "must be made by a change builder of lab06",
                           lab.experiment, lab.HEAD, [lambda q, k, v, allowed: None])
        weights = lab.run(lab.HEAD, iter([lab.set_weights(3, [1.0, 0.0, 0.0])]))["weights"]
        self.assertEqual(weights[2], [1.0, 0.0, 0.0])        # an iterator of changes is whole
        q, k, v, _ = lab.projected()
        self.assertMessage(ValueError, "allowed must be a (3, 3) matrix", lab.buggy_post_softmax,
                           q, k, v, [[True] * 4] * 3)
        self.assertIsNone(lab.exact_fraction(HUGE_INT))

    def test_number_flags_beyond_float_range_are_one_line_at_once_naming_why(self):
        for flag, value, why in (("--scale-key", "3=1e400", "1e400 is beyond float range"),
                                 ("--scale-key", "3=1/0", "1/0 divides by zero"),
                                 ("--values", "2,0/2,0/4,nan", "nan is not a number"),
                                 ("--shift-values", "inf,0", "inf is not finite")):
            with self.subTest(value=value):
                done = run_script("perturb_attention.py", flag, value)
                self.assertOneLineError(done, f"{flag} takes")
                self.assertIn(f"got '{value}': {why}", done.stderr)

    def test_a_pipe_as_a_file_is_refused_instead_of_waiting_forever(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "pipe.json")
            os.mkfifo(fifo)
            self.assertOneLineError(run_main(bpe.main, "encode", "mia", "--tokenizer", fifo),
                                    "pipe.json is a pipe: expected a file")

    def test_ctrl_c_is_one_line(self):
        def interrupted():
            raise KeyboardInterrupt

        done = run_main(lambda argv: cli.guarded(interrupted))
        self.assertEqual((done.returncode, done.stderr), (130, "error: interrupted\n"))

    def test_no_python_api_write_reaches_a_shipped_file_or_git(self):
        tokenizer = ta.lesson_setup()[0]
        with folder_copy(*READMES) as copy:
            for name in READMES:
                self.assertMessage(ValueError, "one of this folder's own files", tokenizer.save,
                                   os.path.join(copy, name))
            os.makedirs(os.path.join(copy, ".git"))
            self.assertMessage(ValueError, "one of this folder's own files",
                               scaffold,
                               os.path.join(copy, ".git", "tiny.py"))
        self.assertMessage(ValueError, "alphabet entry 0 is '\\udc80', half of a surrogate pair",
                           bpe.Tokenizer, ["\udc80"], [])

    def test_a_quick_benchmark_is_not_recorded(self):
        for script in ("benchmarks/bench_attention.py", "benchmarks/bench_bpe.py"):
            with self.subTest(script=script):
                done = run_script(script, "--quick", "--record")
                self.assertOneLineError(done, "--record keeps the full run the README quotes")

    def test_views_refuse_what_they_cannot_draw(self):
        self.assertMessage(TypeError, "token_labels needs a list of token strings",
                           views.token_labels, "abc")
        self.assertMessage(ValueError, "weights must be finite numbers", panel, "t", ["a"],
                           ["a"], [[math.inf]], [[False]])
        self.assertMessage(ValueError, "side-highlighted rows must be ints 0 to 0",
                           lambda: panel("t", ["a"], ["a"], [[1.0]], [[False]],
                                         side=("Z", [[1.0]]), side_highlight=[99]))
        self.assertMessage(ValueError, "Out of range float values", golden.to_json,
                           [math.nan])


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
        done = run_script("trace_attention.py", stdout_closed=True)
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

"""Each door's own bad arguments: the flags of the command lines, the explorer page's doors and
the screenshot's width, each refused in one line that says what was expected and what came."""

import os
import tempfile
import unittest

from attention import init_attention
import bpe
from explorer import page as explorer
from kv_cache import step as kv
from lab06 import lab
from tests.helpers import MessageAssertions, run_main, run_script
import trace_attention as ta


class EachDoorRefusesItsOwnBadArguments(MessageAssertions, unittest.TestCase):
    """The explorer's doors check what they take, and it shares only its writer; a bad
    argument of a command line exits 2 (the parser's), a bad file or value 1, one line each."""

    def test_a_mistyped_option_is_named_with_the_nearest_one_before_a_missing_one(self):
        for script, args, message in [
                ("bpe.py", ["train", "README.md", "--vocab-sise", "300", "--out", "x.json"],
                 "unrecognized arguments: --vocab-sise (did you mean --vocab-size?)"),
                ("bpe.py", ["train", "README.md", "-vocab-size", "300", "--out", "x.json"],
                 "unrecognized arguments: -vocab-size (did you mean --vocab-size?)"),
                ("bpe.py", ["encode", "hi", "--tokenizer", "t.json", "--tokeniser", "x"],
                 "unrecognized arguments: --tokeniser x (did you mean --tokenizer?)"),
                ("train_attention.py", ["--stepz", "3"],
                 "unrecognized arguments: --stepz 3 (did you mean --steps?)"),
                ("trace_attention.py", ["--zzz"], "unrecognized arguments: --zzz (see --help)"),
                # a subcommand's own options are known, and what follows "--" is no option
                ("bpe.py", ["train", "README.md", "--vocab-size", "300", "--out", "x.json",
                            "extra"], "error: unrecognized arguments: extra (see --help)"),
                ("bpe.py", ["encode", "a", "b", "--tokenizer", "t.json"],
                 "error: unrecognized arguments: b (see --help)"),
                ("bpe.py", ["train", "--out", "x.json", "--", "--notes.md"],
                 "the following arguments are required: --vocab-size"),
                ("bpe.py", ["train", "README.md", "--out", "x.json"],
                 "the following arguments are required: --vocab-size")]:
            with self.subTest(args=args):
                done = run_script(script, *args)
                self.assertOneLineError(done, message)
                self.assertEqual(done.returncode, 2)

    def test_the_explorer_page_checks_its_doors_and_shares_only_its_writer_with_lab_06(self):
        public = {name for name, value in vars(explorer).items() if callable(value) and
                  getattr(value, "__module__", "") == explorer.__name__ and
                  not name.startswith("_")}
        # explored and page_html are lab06/page.py's, handed only what lab_page checked;
        # lesson_maps runs attention_forward, whose door checks; softmax_terms and score_terms,
        # the page's arithmetic, are what tests compare with the core's numbers
        self.assertEqual(public, {"fraction", "ln2_multiple", "lesson_page", "explored",
                                  "page_html", "lesson_maps", "softmax_terms", "score_terms"})
        self.assertMessage(ValueError, "each input row must have 4 numbers, got 2",
                           explorer.lesson_maps, init_attention(4, 2, 11), [[0.5, 0.1]])
        params, x = init_attention(4, 2, 11), [[0.5, 0.1, 0.2, 0.3]] * 2
        self.assertMessage(TypeError, "token_labels needs a list of token strings, got None",
                           explorer.lesson_page, params, x, None, "s")
        self.assertMessage(TypeError, "sentence must be a str, got NoneType None",
                           explorer.lesson_page, params, x, ["a", "b"], None)

    def test_the_screenshots_width_is_an_argument_and_its_page_a_file(self):
        from tests import browser
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "shot.png")
            for width in ("0", "-5", "1000000000"):
                with self.subTest(width=width):
                    done = run_main(browser.main, "page.html", out, "--width", width)
                    self.assertOneLineError(done, "--width must be 200 to 4000 CSS pixels")
                    self.assertEqual(done.returncode, 2)
            self.assertOneLineError(run_main(browser.main, tmp, out), "is a folder: expected a "
                                                                      "file")
            if os.path.exists("/dev/zero"):
                self.assertOneLineError(run_main(browser.main, "/dev/zero", out),
                                        "/dev/zero is not a file")

    def test_an_empty_path_to_read_is_refused_as_an_empty_output_is(self):
        self.assertMessage(ValueError, "the path is empty: expected a file name",
                           bpe.Tokenizer.load, "")
        for run, args in ((ta.main, ("--tokenizer", "")),
                          (bpe.main, ("encode", "mia", "--tokenizer", ""))):
            with self.subTest(args=args):
                self.assertOneLineError(run_main(run, *args), "the path is empty")

    def test_the_labs_values_offsets_and_weights_are_refused_saying_why(self):
        for args, fragment in (
                (("--values", "3/0,0/2,0/4,0"), "each V row must have 1 number, got 2 in row 2 "
                                                 "(rows a,b/c,d/...: '/' between rows"),
                (("--offset-scores", "3=1e308"), "the offset must be within ±1e+06"),
                (("--set-weights", "3=1,1,1"), "must be at least 0 and sum to 1 (within 1e-09)"),
                (("--set-weights", "3=-1,1,1"), "got sum 1 and least -1")):
            with self.subTest(args=args):
                self.assertOneLineError(run_script("perturb_attention.py", *args), fragment)
        lab.offset_scores(3, lab.MAX_OFFSET)       # the bound itself is taken

    def test_training_with_standard_output_closed_says_so_before_any_progress(self):
        done = run_script("train_attention.py", "--steps", "2", stdout_closed=True)
        self.assertEqual((done.returncode, done.stderr),
                         (1, "error: cannot print: standard output is closed\n"))

    def test_a_fresh_key_value_cache_with_a_seal_is_refused(self):
        params = init_attention(4, 2, 11)
        self.assertMessage(ValueError, "kv holds a seal but no keys or values",
                           kv.attention_step, params, [0.1] * 4, {"k": [], "v": [], "seal": None})


if __name__ == "__main__":
    unittest.main()

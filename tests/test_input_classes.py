"""One rule for each class of bad input, held at its root for every command and function it
touches: each test names its class and tries it on every surface it reaches, so a case of the class
that no test names is refused by the same line. The rules live in common/safe_io.py (files),
common/cli.py (command lines) and common/checks.py (numbers, sizes, indices)."""

import concurrent.futures
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from attention import (add, attention_forward, causal_mask, init_attention, matmul, shape,
                       softmax_row, transpose)
import bpe
from common import checks, cli, gradcheck, safe_io, views
from explorer import page as explorer
from kv_cache import step as kv
from lab06 import attend
from lab06 import lab
from tests.helpers import HERE, MessageAssertions, folder_copy, run_main, run_script
import trace_attention as ta
from training import model as training_model

EYE = [[1.0, 0.0], [0.0, 1.0]]


# sitecustomize.py for run_interrupted: it runs before the program, and turns the program's first
# import of a module that Python's start-up has not loaded, other than common's, into Ctrl-C
INTERRUPTING = """import builtins, sys
imported = builtins.__import__
def interrupted(name, *args, **kwargs):
    if name not in sys.modules and name.partition(".")[0] != "common":
        raise KeyboardInterrupt
    return imported(name, *args, **kwargs)
builtins.__import__ = interrupted
"""


def run_interrupted(script):
    """`python3 script --help` in a process of its own, Ctrl-C coming at its first import of a
    module that Python's start-up has not loaded, other than common: in a door, within its first
    import line, just after common/__init__.py has set its guard."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "sitecustomize.py"), "w", encoding="utf-8") as f:
            f.write(INTERRUPTING)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([tmp, HERE]), PYTHONNOUSERSITE="1")
        return subprocess.run([sys.executable, script, "--help"], cwd=HERE, env=env,
                              capture_output=True, text=True, timeout=60)


def doors():
    """Every file a learner runs (it ends in `if __name__ == "__main__":`), from the tree; Lab 06's
    grader and the runner it starts are tested with the grader, and common/shipped.py is run by
    the project's developers, not by a learner."""
    found = []
    for name in sorted(safe_io.project_files()):
        if name.endswith(".py") and not name.startswith(("tests", "lab06", "test_", "common")):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                if 'if __name__ == "__main__":' in f.read():
                    found.append(name)
    return found


def write(path, text, encoding="utf-8"):
    with open(path, "w", encoding=encoding) as f:
        f.write(text)
    return path


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class AnOutputIsNeverAnInput(MessageAssertions, unittest.TestCase):
    """An output is never an input, another output or a shipped file (check_output_path): every
    such command is refused before it computes, and the file is as it was."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_an_output_that_is_an_input_is_refused_and_the_input_kept(self):
        text = write(self.path("c.txt"), "mia has a red ball. " * 5)
        head = write(self.path("h.json"), json.dumps({"X": [[1.0, 0.0]] * 3, "WQ": EYE,
                                                      "WK": EYE, "WV": EYE}))
        tokenizer = self.path("t.json")
        ta.load_tokenizer().save(tokenizer)
        os.link(text, self.path("hard-link.txt"))
        os.symlink(head, self.path("soft-link.json"))
        for run, args, kept in (
                (bpe.main, ("train", text, "--vocab-size", "30", "--out", text), text),
                (bpe.main, ("train", text, "--vocab-size", "30", "--out",
                            self.path("hard-link.txt")), text),
                ("perturb_attention.py", ("--head", head, "--svg", head), head),
                ("perturb_attention.py", ("--head", head, "--html",
                                          self.path("soft-link.json")), head),
                (ta.main, ("--tokenizer", tokenizer, "--svg", tokenizer), tokenizer)):
            before = read(kept)
            with self.subTest(args=args):
                done = (run_script(run, *args) if isinstance(run, str) else run_main(run, *args))
                self.assertOneLineError(done, "an output must not replace an input or another "
                                              "output")
                self.assertEqual(read(kept), before)

    def test_two_outputs_that_are_one_file_are_refused_before_either_is_written(self):
        same = self.path("F")
        for run, args in ((ta.main, ("--svg", same, "--html", same)),
                          ("perturb_attention.py", ("--svg", same, "--html", same))):
            with self.subTest(args=args):
                done = (run_script(run, *args) if isinstance(run, str) else run_main(run, *args))
                self.assertOneLineError(done, "is also --html")
                self.assertFalse(os.path.exists(same))

    def test_a_screenshot_over_its_own_page_is_refused_before_a_browser_starts(self):
        from tests import browser
        page = write(self.path("page.html"), "<p>a page</p>")
        with mock.patch.object(browser, "page_screenshot") as shoot:
            done = run_main(browser.main, page, page)
        self.assertOneLineError(done, "is also the page")
        shoot.assert_not_called()
        shown_page, state, width = browser.SHOWN      # the README's picture's command
        self.assertIn(f"python3 -m tests.browser {shown_page} {browser.SCREENSHOT} --fragment "
                      f"'{state}'", read(os.path.join(HERE, "explorer", "README.md")))
        self.assertEqual(width, 880)
        lesson_page = os.path.join(HERE, shown_page)
        for args in ((page,), (lesson_page, "--fragment", "mode=none")):  # another page, state
            with self.subTest(args=args), mock.patch.object(browser, "page_screenshot") as shoot:
                done = run_main(browser.main, args[0], os.path.join(HERE, browser.SCREENSHOT),
                                *args[1:])
                self.assertOneLineError(done, "one of this folder's own files")
                shoot.assert_not_called()

    def test_a_shipped_view_is_rewritten_only_with_its_recorded_content(self):
        """trace_attention.py --svg attention-weights.svg of another sentence, Lab 06's page of
        another head: refused, the copy unchanged; the recording commands still write them."""
        figure, page = ta.FIGURE, os.path.join("lab06", "lab06-explorer.html")
        with folder_copy(figure, page) as copy:
            shipped = {name: read(os.path.join(copy, name)) for name in (figure, page)}
            for run, args in ((ta.main, ("--svg", os.path.join(copy, figure), "--sentence",
                                         "the dog sees the cat.")),
                              ("perturb_attention.py", ("--html", os.path.join(copy, page),
                                                        "--ablate-value", "2"))):
                with self.subTest(args=args):
                    done = (run_script(run, *args) if isinstance(run, str)
                            else run_main(run, *args))
                    self.assertOneLineError(done, "is the recorded view of this command's "
                                                  "default inputs")
            self.assertEqual({name: read(os.path.join(copy, name)) for name in shipped}, shipped)
            self.assertEqual(run_main(ta.main, "--svg", os.path.join(copy, figure)).returncode, 0)
            self.assertEqual(read(os.path.join(copy, figure)), shipped[figure])


class TextIsUtf8WithoutItsByteOrderMark(MessageAssertions, unittest.TestCase):
    """read_text, the one reader: a leading U+FEFF is no character of the text, whatever reads it
    (a training text, a tokenizer, a head, a recorded trace)."""

    def test_every_reader_drops_a_leading_byte_order_mark(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = write(os.path.join(tmp, "c.txt"), "\ufeffab ab ba", encoding="utf-8")
            out = os.path.join(tmp, "t.json")
            self.assertEqual(run_main(bpe.main, "train", text, "--vocab-size", "5", "--out",
                                      out).returncode, 0)
            self.assertEqual(bpe.Tokenizer.load(out).alphabet, [" ", "a", "b"])
            write(out, read(out), encoding="utf-8-sig")        # the tokenizer with a mark
            self.assertEqual(bpe.Tokenizer.load(out).alphabet, [" ", "a", "b"])
            head = write(os.path.join(tmp, "h.json"), json.dumps(
                {"X": [[1.0, 0.0]] * 3, "WQ": EYE, "WK": EYE, "WV": EYE}), encoding="utf-8-sig")
            self.assertEqual(run_script("perturb_attention.py", "--head", head, "--table",
                                        "--baseline").returncode, 0)
        self.assertNotIn("\ufeff", safe_io.read_text(os.path.join(HERE, "attention-trace.json")))


class WritesAndInterrupts(MessageAssertions, unittest.TestCase):
    """Every write error names its target; Ctrl-C at any moment is one line and exit 130; a killed
    write's temporary file goes with the next write to its target."""

    def test_a_full_device_is_named_in_the_error(self):
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full here")
        self.assertMessage(OSError, "cannot write /dev/full: No space left on device",
                           safe_io.write_atomic, "/dev/full", "x" * 100_000)
        self.assertOneLineError(run_main(ta.main, "--svg", "/dev/full"),
                                "cannot write /dev/full: No space left on device")
        err = io.StringIO()
        with open("/dev/full", "w", encoding="utf-8") as full, \
                contextlib.redirect_stdout(full), contextlib.redirect_stderr(err):
            status = bpe.main(["encode", "mia"])       # standard output on a full disk
        self.assertEqual((status, err.getvalue()), (1, "error: cannot write to standard "
                                                       "output: No space left on device\n"))

    def test_ctrl_c_while_a_door_imports_or_reads_its_arguments_is_one_line_and_130(self):
        def parse_interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        self.assertGreaterEqual(len(doors()), 9)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:     # each its own process
            interrupted = dict(zip(doors() + ["tests/browser.py"],
                                   pool.map(run_interrupted, doors() + ["tests/browser.py"])))
        for door, done in interrupted.items():
            with self.subTest(door=door, at="imports"):
                self.assertEqual((done.returncode, done.stderr), (130, "error: interrupted\n"))
            with self.subTest(door=door, at="arguments"):
                with mock.patch.object(cli.OneLineParser, "parse_args", parse_interrupted):
                    done = run_script(door, "--help")
                self.assertEqual((done.returncode, done.stderr), (130, "error: interrupted\n"))

    def test_ctrl_c_while_a_learners_script_imports_is_pythons_own(self):
        """A script that is none of the project's files gets Python's traceback and exit, though
        it imports common first."""
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "mine.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write("import common\nimport attention\n")
            done = run_interrupted(script)
        self.assertTrue(done.stderr.startswith("Traceback"), done.stderr)
        self.assertTrue(done.stderr.endswith("\nKeyboardInterrupt\n"), done.stderr)
        self.assertNotEqual(done.returncode, 130)

    def test_a_killed_writes_temporary_file_is_removed_by_the_next_write(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            safe_io.write_atomic(path, "old\n")
            killed = ("import os, signal, sys; from common import safe_io; "
                      "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL); "
                      "safe_io.write_atomic(sys.argv[1], 'new\\n')")
            subprocess.run([sys.executable, "-S", "-c", killed, path], cwd=HERE)
            left = [name for name in os.listdir(tmp) if name.startswith(".tmp-")]
            self.assertEqual(len(left), 1, "the killed write left no temporary file to remove")
            safe_io.write_atomic(os.path.join(tmp, "other.json"), "{}\n")   # another target's
            self.assertIn(left[0], os.listdir(tmp))
            safe_io.write_atomic(path, "newer\n")
            self.assertEqual(sorted(os.listdir(tmp)), ["other.json", "trace.json"])
            self.assertEqual(read(path), "newer\n")

    def test_with_stderr_closed_progress_and_errors_go_nowhere_not_to_stdout(self):
        with tempfile.TemporaryDirectory() as tmp:
            text = write(os.path.join(tmp, "c.txt"), "ab ba aab " * 12_000)   # over 100,000
            done = run_main(bpe.main, "train", text, "--vocab-size", "60", "--out",
                            os.path.join(tmp, "t.json"), stderr_closed=True)
        self.assertEqual(done.returncode, 0)
        self.assertNotIn("training:", done.stdout)
        done = run_main(bpe.main, "decode", "99999", stderr_closed=True)
        self.assertEqual((done.returncode, done.stdout), (1, ""))
        done = run_main(bpe.main, "--no-such-flag", stderr_closed=True)
        self.assertEqual((done.returncode, done.stdout), (2, ""))

    def test_nothing_prints_to_stderr_without_asking_whether_it_is_open(self):
        for name in sorted(safe_io.project_files()):
            if not name.endswith(".py") or name.startswith(("tests", "lab06")):
                continue
            lines = read(os.path.join(HERE, name)).splitlines()
            for n, line in enumerate(lines):
                if "file=sys.stderr" in line and not lines[n - 1].strip().startswith(
                        "if sys.stderr"):
                    self.fail(f"{name}:{n + 1} prints to sys.stderr, which may be None: use "
                              f"common.cli.note")


class SizesHaveStatedLimits(MessageAssertions, unittest.TestCase):
    """Every size is checked against MAX_POSITIONS or MAX_ENTRIES before anything is made."""

    def test_sizes_beyond_the_limits_are_refused_naming_the_limit(self):
        params = init_attention(4, 2, 11)
        positions = f"MAX_POSITIONS = {checks.MAX_POSITIONS}"
        entries = f"MAX_ENTRIES = {checks.MAX_ENTRIES}"
        for fragment, call, args in (
                (positions, causal_mask, (10 ** 6,)),
                (positions, attention_forward, (params, [[0.5] * 4] * 20_000)),
                (entries, init_attention, (10 ** 9, 2, 1)),
                (entries, init_attention, (2, 10 ** 9, 1)),
                (entries, matmul, ([[1.0]] * 5000, [[1.0] * 5000])),
                (positions, attend, ([[1.0]] * 5000, [[1.0]], [[1.0]], [[True]] * 5000)),
                (entries, ta.embeddings, (10 ** 9,))):
            with self.subTest(call=call.__name__):
                self.assertMessage(ValueError, fragment, call, *args)

    def test_what_one_call_makes_in_all_is_refused_just_over_the_limit(self):
        """init_attention's four matrices, add's sum, transpose's result and softmax_row's
        weights count against MAX_ENTRIES together, one entry over it refused before any is made
        (the operands share one row, so building them costs little)."""
        over = checks.MAX_ENTRIES + 1
        row = [0.0] * 2049                   # 2048 × 2049 is just over 2**22
        self.assertGreater(2048 * 2049, checks.MAX_ENTRIES)
        self.assertLess(2048 * 2048, checks.MAX_ENTRIES + 1)
        for call, args in ((init_attention, (checks.MAX_ENTRIES // 4 + 1, 1, 1)),
                           (init_attention, (2 ** 10, 2 ** 10 + 1, 1)),
                           (add, ([row] * 2048, [row] * 2048)),
                           (transpose, ([row] * 2048,)),
                           (softmax_row, ([0.0] * over,))):
            with self.subTest(call=call.__name__):
                self.assertMessage(ValueError, f"at most MAX_ENTRIES = {checks.MAX_ENTRIES}",
                                   call, *args)
        checks.check_made("Wq, Wk, Wv and Wo", 4, d_model=checks.MAX_ENTRIES // 4, d_head=1)
        self.assertEqual(checks.MAX_POSITIONS ** 2 * 4, checks.MAX_ENTRIES)   # the four maps

    def test_a_sequence_of_the_limit_is_taken(self):
        checks.check_length(checks.MAX_POSITIONS)        # no error
        checks.check_made("Wq", d_model=checks.MAX_ENTRIES, d_head=1)
        self.assertEqual(len(causal_mask(300)), 300)

    def test_a_list_that_holds_itself_is_refused_not_followed_forever(self):
        c = []
        c.append(c)
        self.assertMessage(ValueError, "shape needs nested lists, got a list that holds itself",
                           shape, c)
        self.assertMessage(TypeError, "transpose's [0][0] must be a number, got list", transpose,
                           c)
        self.assertEqual((shape([]), shape([[]]), shape([[1, 2]])), ((0,), (1, 0), (1, 2)))


class NumbersArePlainFloatsAndInts(MessageAssertions, unittest.TestCase):
    """type(v) in (float, int) at every door, bool refused; in flags, ASCII decimals."""

    def test_a_number_subclass_that_lies_is_refused_at_every_door(self):
        class Lying(float):
            def __mul__(self, other):
                return math.nan

            __rmul__ = __mul__

        class Size(int):
            pass

        liar = Lying(1.0)
        params = init_attention(4, 2, 11)
        q, k, v, allowed = lab.projected()
        cases = ((matmul, ([[liar]], [[1.0]])), (softmax_row, ([liar, 0.0],)),
                 (attention_forward, (params, [[liar, 0.0, 0.0, 0.0]])),
                 (attend, ([[liar, 0.0]] + q[1:], k, v, allowed)),
                 (attend, (q, k, v, allowed, Lying(-math.inf))),
                 (causal_mask, (Size(3),)), (init_attention, (Size(4), 2, 1)),
                 (kv.cache_multiply_adds, (Size(2), 4, 2)), (explorer.fraction, (liar,)),
                 (lab.scale_key, (3, liar)), (bpe.Tokenizer(["a"], []).decode, ([Size(0)],)))
        for call, args in cases:
            with self.subTest(call=call.__qualname__):
                with self.assertRaises(TypeError):
                    call(*args)
        self.assertMessage(TypeError, "must be a plain float or int, got Lying 1.0", matmul,
                           [[liar]], [[1.0]])

    def test_a_bool_is_no_number_and_a_seed_is_a_plain_int_of_at_least_0(self):
        """random.Random takes a float, a str or None as well; None would draw other weights each
        run, NaN too (its hash differs between runs), and the lesson's seeds are ints."""
        class Seed(float):
            pass

        self.assertMessage(TypeError, "transpose's [0][1] must be a number, got bool True",
                           transpose, [[1.0, True]])
        self.assertMessage(TypeError, "transpose's [0][1] must be True or False, as [0][0] is",
                           transpose, [[True, 1]])
        self.assertEqual(transpose([[True, False]]), [[True], [False]])     # a mask, whole
        for seed in (True, Seed(1.0), math.nan, None, "abc", 1.0):
            for call, args in ((init_attention, (4, 2, seed)), (ta.embeddings, (3, seed)),
                               (training_model.init_params, (5, seed))):
                with self.subTest(call=call.__name__, seed=seed):
                    self.assertMessage(TypeError, "seed must be an int, got", call, *args)
        for call, args in ((init_attention, (4, 2, -1)), (ta.embeddings, (3, -1)),
                           (training_model.init_params, (5, -1))):     # -1 draws what 1 draws
            self.assertMessage(ValueError, "seed must be at least 0, got -1: Python's random "
                               "draws the same for -1 as for 1", call, *args)
        self.assertEqual(transpose([[1.0, -math.inf]]), [[1.0], [-math.inf]])   # masked scores

    def test_an_int_too_long_to_print_is_shown_by_its_size(self):
        huge, said = 10 ** 5000, "an int of 16610 bits"
        self.assertEqual(checks.said(huge), said)
        self.assertEqual(checks.said(-huge), said)
        for error, call, args in (
                (ValueError, causal_mask, (huge,)), (ValueError, init_attention, (huge, 1, 1)),
                (ValueError, bpe.Tokenizer(["a"], []).decode, ([huge],)),
                (ValueError, gradcheck.central_differences, (lambda: 0.0, [[1.0]], huge)),
                (ValueError, checks.check_index, ("i", huge, 3)),
                (ValueError, kv.cache_multiply_adds, (-huge, 4, 2)),
                (ValueError, lab.ablate_value, (huge,)), (ValueError, lab.block, (1, -huge))):
            with self.subTest(call=call.__qualname__):
                self.assertMessage(error, said, call, *args)
        digits = "9" * 5000
        with tempfile.TemporaryDirectory() as tmp:
            head = write(os.path.join(tmp, "h.json"), '{"X": [[%s, 0]], "WQ": [[1]], "WK": [[1]], '
                                                      '"WV": [[1]]}' % digits)
            tokenizer = write(os.path.join(tmp, "t.json"), '{"version": %s}' % digits)
            for done in (run_script("perturb_attention.py", "--head", head),
                         run_main(bpe.main, "encode", "mia", "--tokenizer", tokenizer)):
                self.assertOneLineError(done, "999999999999… is an integer of 5000 digits, "
                                              "beyond float range")
                self.assertNotIn("set_int_max_str_digits", done.stderr)

    def test_a_dict_subclass_is_no_params(self):
        class Params(dict):
            pass

        self.assertMessage(TypeError, "params must be a dict", attention_forward,
                           Params(init_attention(4, 2, 11)), [[0.5] * 4])

    def test_number_flags_take_ascii_decimals_only(self):
        for run, args, fragment in (
                ("perturb_attention.py", ("--ablate-value", "\u0662"), "--ablate-value takes"),
                ("perturb_attention.py", ("--scale-key", "3=1_000"), "--scale-key takes"),
                ("perturb_attention.py", ("--scale-key", "3=\u0663"), "--scale-key takes"),
                ("perturb_attention.py", ("--scale-key", "3=1e-400"), "1e-400 is below float "
                                                                      "range"),
                ("perturb_attention.py", ("--set-weights", "3=1/\u0662,1/2,0"), "takes"),
                ("train_attention.py", ("--steps", "1_000"), "invalid integer value: '1_000'"),
                ("train_attention.py", ("--steps", "9" * 32),
                 "--steps: expected an integer of at most 30 digits, got one of 32"),
                ("train_attention.py", ("--seeds", "\u0661\u0660"), "invalid integer value"),
                ("train_attention.py", ("--seeds", "100000"), "--seeds must be at most 1000"),
                ("train_attention.py", ("--steps", "10000000"), "--steps must be at most"),
                ("bpe.py", ("decode", "\u0665\u0668"), "invalid integer value"),
                ("bpe.py", ("train", "c.txt", "--vocab-size", "1_0", "--out", "t.json"),
                 "invalid integer value")):
            with self.subTest(args=args):
                done = run_script(run, *args)
                self.assertOneLineError(done, fragment)
                self.assertEqual(done.returncode, 2)
        with tempfile.TemporaryDirectory() as tmp:         # a head's numbers keep the rule
            head = write(os.path.join(tmp, "h.json"), '{"X": [[1e-400, 0.0]], "WQ": [[1.0]], '
                                                      '"WK": [[1.0]], "WV": [[1.0]]}')
            self.assertOneLineError(run_script("perturb_attention.py", "--head", head),
                                    "h.json: 1e-400 is below float range")
        self.assertEqual(cli.decimal("2.5e-3"), 0.0025)
        self.assertEqual(cli.decimal("0e-999"), 0.0)         # a zero is a zero


class IndicesAndStepsInRange(MessageAssertions, unittest.TestCase):
    """Every index and epsilon is checked against its range, naming expected and received."""

    def test_an_epsilon_out_of_range_or_too_small_for_its_entry_is_refused(self):
        self.assertMessage(ValueError, "eps must be a finite number above 0, 1e-10 to 1.0",
                           gradcheck.central_differences, lambda: 0.0, [[1.0]], 1e-320)
        self.assertMessage(ValueError, "eps 1e-06 is too small for entry [0][0] = 10000000000.0",
                           gradcheck.central_differences, lambda: 0.0, [[1e10]])
        self.assertMessage(TypeError, "f must give a number, got bool True around entry "
                                      "[0][0]", gradcheck.central_differences, lambda: True,
                           [[1.0]])

    def test_a_function_argument_and_what_it_gives_are_checked_not_raised_raw(self):
        w = [[1.0]]
        for error, fragment, call, args in (
                (TypeError, "progress must be a function or None, got int 5", bpe.train,
                 ("abab", 10, 5)),
                (TypeError, "f must be a function, got int 5", gradcheck.central_differences,
                 (5, [[1.0]])),
                (ValueError, "f must give a finite number, got an int of 1329 bits and an int "
                             "of 1329 bits", gradcheck.central_differences,
                 (lambda: 10 ** 400, [[1.0]])),
                (ValueError, "over 2·eps is beyond float range", gradcheck.central_differences,
                 (lambda: 1.7e308 if w[0][0] > 1.0 else -1.7e308, w)),
                (ValueError, "max_err needs finite gradients, got an int of 1329 bits and 0.0",
                 gradcheck.max_err, ({"W": [[10 ** 400]]}, {"W": [[0.0]]})),
                (TypeError, "max_err's W needs a list of rows, got NoneType", gradcheck.max_err,
                 ({"W": None}, {"W": None})),
                (TypeError, "max_err's W[0][0] must be a number, got str 'a'", gradcheck.max_err,
                 ({"W": [["a"]]}, {"W": [[0.0]]}))):
            with self.subTest(call=call.__qualname__, fragment=fragment):
                self.assertMessage(error, fragment, call, *args)
        self.assertEqual(w, [[1.0]])

    def test_an_index_out_of_range_is_refused_not_read_from_the_end(self):
        params = training_model.init_params(5, 1)
        self.assertMessage(ValueError, "answer must be an index of COLOURS, 0 to 10, got -1",
                           training_model.loss_and_grads, params, [0, 1, 2], -1)
        self.assertMessage(TypeError,
                           "answer must be an index of COLOURS, an int 0 to 10, got bool",
                           training_model.loss_and_grads, params, [0, 1, 2], True)
        params, x = init_attention(4, 2, 11), [[0.5, 0.1, 0.2, 0.3]] * 3
        full, given = attention_forward(params, x), kv.steps(params, x)
        self.assertMessage(ValueError, "t must be a position of the full pass, 0 to 2, got -1",
                           kv.matches_full_pass, given[2], full, -1)
        self.assertMessage(ValueError, "t must be a position of the full pass, 0 to 2, got 3",
                           kv.row_errors, given[2], full, 3)
        self.assertMessage(ValueError, "a mark's row must be a row of the table, 0 to 0, got -1",
                           views.text_table, ["a"], ["b"], [[1.0]], {-1: "◀"})

    def test_sizes_and_arguments_of_the_wrong_kind_name_what_came(self):
        for error, fragment, call, args in (
                (ValueError, "T must be at least 1, got -1", kv.cache_multiply_adds, (-1, 4, 2)),
                (ValueError, "d_head must be at least 1, got 0", kv.recompute_multiply_adds,
                 (3, 4, 0)),
                (TypeError, "a file name must be a str, got NoneType", bpe.Tokenizer.load,
                 (None,)),
                (TypeError, "a file name must be a str, got int", safe_io.write_atomic,
                 (3, "x")),
                (ValueError, "a file name cannot hold a NUL", safe_io.read_text, ("a\0b",)),
                (ValueError, "fraction's value must be a finite number, got nan",
                 explorer.fraction, (math.nan,)),
                (ValueError, "ln2_multiple's score must be a finite number, got inf",
                 explorer.ln2_multiple, (math.inf,)),
                (ValueError, "matmul needs (n, m)·(m, p), got (0, 0)·(0, 0)", matmul, ([], [])),
                (ValueError, "matmul needs (n, m)·(m, p), got (1, 1)·(0, 0)", matmul,
                 ([[1.0]], [])),
                (TypeError, "transpose needs a list of rows", transpose, (None,))):
            with self.subTest(call=call.__qualname__, args=args):
                self.assertMessage(error, fragment, call, *args)


class AnErrorIsOneLineWhateverCame(MessageAssertions, unittest.TestCase):
    """What a message quotes (a path, a key, a flag's text) may hold a line break or be huge; the
    line stays one line, the break shown escaped, the line at most cli.MAX_MESSAGE long."""

    def test_a_line_break_in_a_path_or_a_key_is_shown_escaped(self):
        with tempfile.TemporaryDirectory() as tmp:
            head = os.path.join(tmp, "head.json")
            with open(head, "w", encoding="utf-8") as f:
                json.dump({"X\nPASS": [[1.0]], "WQ": [[1.0]], "WK": [[1.0]], "WV": [[1.0]]}, f)
            for script, args, shown in [
                    ("trace_attention.py", ["--svg", os.path.join(tmp, "no\u2028dir", "a.svg")],
                     "no\\u2028dir"),
                    ("perturb_attention.py", ["--svg", os.path.join(tmp, "no\ndir", "a.svg"),
                                              "--baseline"],
                     "no\\ndir"),
                    ("perturb_attention.py", ["--head", head], "X\\nPASS")]:
                with self.subTest(script=script, args=args):
                    self.assertOneLineError(run_script(script, *args), shown)

    def test_a_huge_input_is_cut_in_the_error_line(self):
        done = run_script("train_attention.py", "--story", "the ball is", "--block", "x" * 100_000)
        self.assertOneLineError(done, "--block")
        self.assertLessEqual(len(done.stderr.strip()),
                             len("error: ") + cli.MAX_MESSAGE + len(" (see --help)"))
        self.assertTrue(done.stderr.strip().endswith("… (see --help)"), done.stderr[-40:])


class RecordedFilesAreNamedWhenBroken(MessageAssertions, unittest.TestCase):

    def test_a_broken_lesson_trace_is_refused_naming_the_file(self):
        trace = json.loads(read(os.path.join(HERE, "attention-trace.json")))
        for what, broken in (("not an object", []),
                             ("no Wo", {**trace, "params": {**trace["params"], "Wo": None}}),
                             ("a short row", {**trace, "x": [[1.0]] + trace["x"][1:]}),
                             ("a row too many", {**trace, "x": trace["x"] + [trace["x"][0]]}),
                             ("a token that is no text", {**trace, "tokens": [1] * 6}),
                             ("numbers too large", {**trace, "x": [[1e308] * 4] * 6})):
            with self.subTest(what), tempfile.TemporaryDirectory() as tmp:
                write(os.path.join(tmp, "attention-trace.json"), json.dumps(broken))
                done = run_script("step_attention.py", folder=tmp)
                self.assertOneLineError(done, "attention-trace.json ")
                self.assertTrue(done.stderr.endswith(": run trace_attention.py --write\n"),
                                done.stderr)
                self.assertEqual(done.stdout, "")

    def test_a_damaged_recorded_file_is_refused_naming_it_and_what_to_run(self):
        story = "mia has a red ball. the ball is"
        readers = (("attention-trace.json", ["step_attention.py"],
                    "run trace_attention.py --write"),
                   ("trained-model.json", ["train_attention.py", "--story", story],
                    "run train_attention.py --write"),
                   ("two-layer-model.json", ["train_attention.py", "--layers", "2", "--story",
                                             story], "run train_attention.py --layers 2 --write"),
                   ("training-run.json", ["train_attention.py", "--check"], "run --write"),
                   ("two-layer-run.json", ["train_attention.py", "--layers", "2", "--check"],
                    "run --layers 2 --write"))
        damages = {"bad JSON": ("{", "is not valid JSON: Expecting"),
                   "nested": ("[" * 100_000, "is nested too deeply to be "),
                   "no object": ("[]", "must hold a JSON object, got list"),
                   "a huge integer": ('{"n": %s}' % ("9" * 400), ": 999999999999… is an "
                                                                 "integer of 400 digits")}
        for name, (script, *args), then in readers:
            for what, (text, fragment) in damages.items():
                with self.subTest(name=name, damage=what), tempfile.TemporaryDirectory() as tmp:
                    os.makedirs(os.path.join(tmp, "training"))
                    write(os.path.join(tmp, "training" if "train" in script else "", name), text)
                    done = run_script(script, *args, folder=tmp)
                    self.assertOneLineError(done, fragment)
                    self.assertTrue(done.stderr.startswith(f"error: {name}"), done.stderr)
                    self.assertTrue(done.stderr.endswith(f": {then}\n"), done.stderr)

if __name__ == "__main__":
    unittest.main()

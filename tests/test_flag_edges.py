"""The command lines' small edges a third hostile pass found, each kept fixed: a seed of another
script's digits, a hint that named the flag it rejected, a flag given twice, '-' as an output, a
large head's JSON, and a read-only download. Each test runs the doors as a learner does
(tests.helpers.run_script)."""

import json
import os
import stat
import tempfile
import unittest
from unittest import mock

from common.views import MAX_TOKENS
from lab06 import lab
from tests import helpers
from tests.helpers import MessageAssertions, run_script


class SeedsAreAsciiIntegers(MessageAssertions, unittest.TestCase):

    def test_every_seed_flag_refuses_other_scripts_digits_and_spaces(self):
        """perturb_attention.py's --seed took int()'s text (an Arabic-Indic ٣, " 5") where
        train_attention.py's, through cli.integer, refused it."""
        for script, before in (("train_attention.py", ()),
                               ("perturb_attention.py", ("--grade", "tiny_attention.py"))):
            for seed in ("\u0663", " 5", "5 "):
                with self.subTest(script=script, seed=seed):
                    done = run_script(script, *before, "--seed", seed)
                    self.assertOneLineError(done, "argument --seed: ")
                    self.assertIn(repr(seed), done.stderr)
                    self.assertEqual(done.returncode, 2)


class OptionsAreNamedForWhatTheyAre(MessageAssertions, unittest.TestCase):

    def test_an_option_of_another_subcommand_is_said_to_be_none_of_this_ones(self):
        """bpe.py's hint searched every subcommand's options, so it offered the very flag it had
        rejected: "--vocab-size (did you mean --vocab-size?)"."""
        for args, said in ((["encode", "x", "--vocab-size", "3"], "encode takes no --vocab-size"),
                           (["decode", "1", "--out", "x.json"], "decode takes no --out"),
                           (["encode", "x", "--tokeniser", "t.json"], "did you mean --tokenizer?")):
            with self.subTest(args=args):
                done = run_script("bpe.py", *args)
                self.assertOneLineError(done, f"unrecognized arguments: {' '.join(args[2:])} "
                                              f"({said}) (see --help)")
                self.assertEqual(done.returncode, 2)

    def test_an_option_of_one_value_given_twice_is_refused_before_any_work(self):
        """--grade a.py --grade b.py graded b.py alone, a.py dropped without a word."""
        for script, args, said in (
                ("perturb_attention.py", ["--grade", "a.py", "--grade", "b.py"],
                 "--grade takes one value, got 'a.py' and 'b.py': give it once"),
                ("perturb_attention.py", ["--grade=a.py", "--head", "h.json", "--grade", "b.py"],
                 "--grade takes one value, got 'a.py' and 'b.py'"),
                ("train_attention.py", ["--steps", "3", "--steps", "4"],
                 "--steps takes one value, got 3 and 4"),
                ("bpe.py", ["encode", "x", "--tokenizer", "a.json", "--tokenizer", "b.json"],
                 "--tokenizer takes one value, got 'a.json' and 'b.json'")):
            with self.subTest(args=args):
                done = run_script(script, *args)
                self.assertOneLineError(done, said)
                self.assertEqual((done.returncode, done.stdout), (2, ""))


class OutputsAreFiles(MessageAssertions, unittest.TestCase):

    def test_a_dash_as_an_output_is_refused_not_written_as_a_file_named_dash(self):
        """'-', standard output to many tools, was a file named '-' in the working folder, made
        by every output flag alike ("wrote -")."""
        doors = [("perturb_attention.py", flag) for flag in ("--svg", "--html", "--export",
                                                             "--scaffold")]
        doors += [("trace_attention.py", flag) for flag in ("--svg", "--html", "--export")]
        doors += [("train_attention.py", flag) for flag in ("--svg", "--export")]
        doors += [("bpe.py", "train README.md --vocab-size 300 --out")]
        with tempfile.TemporaryDirectory() as tmp:
            for script, flag in doors:
                with self.subTest(script=script, flag=flag):
                    done = run_script(script, *flag.split(), "-", cwd=tmp)
                    self.assertOneLineError(done, f"{flag.split()[-1]} takes a file name, got "
                                                  f"'-': this command writes files, not "
                                                  f"standard output")
                    self.assertEqual(os.listdir(tmp), [])


class ViewsHaveTheirOwnLimit(MessageAssertions, unittest.TestCase):

    def test_a_head_too_long_for_the_views_prints_as_json(self):
        """A head of more than MAX_TOKENS positions was refused whatever was asked: the limit is
        the views' and the grader's (a table that wide cannot be read), not the JSON's."""
        T = MAX_TOKENS + 1
        with tempfile.TemporaryDirectory() as tmp:
            head = os.path.join(tmp, "long.json")
            with open(head, "w", encoding="utf-8") as f:
                json.dump({"X": [[1.0]] * T, "WQ": [[1.0]], "WK": [[1.0]], "WV": [[1.0]]}, f)
            done = run_script("perturb_attention.py", "--head", head)
            self.assertEqual((done.returncode, done.stderr), (0, ""))
            self.assertEqual(len(json.loads(done.stdout)["baseline"]["weights"]), T)
            for views, said in (
                    (["--table", "--baseline"], "--table takes heads of at most"),
                    (["--svg", "h.svg", "--html", "h.html"], "--svg and --html take heads of "
                                                             "at most"),
                    (["--grade", "tiny_attention.py"], "--grade takes heads of at most")):
                with self.subTest(views=views):
                    done = run_script("perturb_attention.py", "--head", head, *views, cwd=tmp)
                    self.assertOneLineError(done, f"long.json has {T} positions: {said} "
                                                  f"{MAX_TOKENS}; without")
                    self.assertEqual(sorted(os.listdir(tmp)), ["long.json"])
            with open(head, "w", encoding="utf-8") as f:       # the lab's own limit stays
                json.dump({"X": [[1.0]] * (lab.MAX_HEAD_POSITIONS + 1), "WQ": [[1.0]],
                           "WK": [[1.0]], "WV": [[1.0]]}, f)
            self.assertOneLineError(run_script("perturb_attention.py", "--head", head),
                                    f"long.json: X is ({lab.MAX_HEAD_POSITIONS + 1}, 1): the lab "
                                    f"takes heads of at most {lab.MAX_HEAD_POSITIONS} positions")


    def test_the_lab_readme_states_the_head_files_limits(self):
        with open(os.path.join(helpers.HERE, "lab06", "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn(f"of at most {lab.MAX_HEAD_POSITIONS} positions and widths of at most "
                      f"{lab.MAX_WIDTH} (a table, a picture or `--grade` takes at most "
                      f"{MAX_TOKENS} positions)", readme)


class ReadOnlyDownload(unittest.TestCase):

    def test_a_copy_of_a_read_only_file_can_be_edited(self):
        """In a download made read-only (chmod a-w), tests that copy a file to edit it (a stale
        record, a shipped view) could not: shutil.copy copied the mode too. The tests copy the
        content alone (shutil.copyfile); as root no write is stopped, so the mode is read."""
        with tempfile.TemporaryDirectory() as download:
            with open(os.path.join(download, "attention-weights.svg"), "w", encoding="utf-8") as f:
                f.write("<svg/>\n")
            os.chmod(os.path.join(download, "attention-weights.svg"), 0o444)
            with mock.patch.object(helpers, "HERE", download), \
                    helpers.folder_copy("attention-weights.svg") as copy:
                mode = os.stat(os.path.join(copy, "attention-weights.svg")).st_mode
        self.assertTrue(mode & stat.S_IWUSR, oct(mode))


if __name__ == "__main__":
    unittest.main()

"""Where a write goes: an atomic write to the path meant, never one of the project's own files,
and a command line that refuses before it writes anything. Each test names the case it
reproduces."""

import os
import signal
import stat
import tempfile
import threading
import unittest
from unittest import mock

import bpe
from common import safe_io
from common.safe_io import write_atomic
from tests.helpers import HERE, MessageAssertions, folder_copy, run_main, run_script, shipped
import trace_attention as ta

READMES = [name for name in shipped("README.md") if name.count(os.sep) <= 1]  # top and folders'


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

    def test_sigterm_or_sighup_during_a_write_leaves_the_old_file_and_no_temporary_file(self):
        """The signal arrives (from this process, to itself) while the new text is being
        flushed: the handler write_atomic holds turns it into SystemExit, and the old file
        stays."""
        for signal_name in ("SIGTERM", "SIGHUP"):     # killed, or its terminal closed
            number = getattr(signal, signal_name)
            before = signal.signal(number, signal.SIG_DFL)     # as a terminal's program has it
            self.addCleanup(signal.signal, number, before)      # the suite may run under nohup
            with self.subTest(signal=signal_name), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "trace.json")
                write_atomic(path, "old\n")
                with mock.patch("os.fsync", lambda fd: os.kill(os.getpid(), number)), \
                        self.assertRaises(SystemExit) as stopped:
                    write_atomic(path, "new\n")
                self.assertEqual(stopped.exception.code, 128 + number)
                self.assertEqual(os.listdir(tmp), ["trace.json"])
                with open(path, encoding="utf-8") as f:
                    self.assertEqual(f.read(), "old\n")
                self.assertEqual(signal.getsignal(number), signal.SIG_DFL)   # put back as it was

    def test_under_nohup_a_sighup_during_a_write_is_ignored_as_nohup_asks(self):
        before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.addCleanup(signal.signal, signal.SIGHUP, before)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            with mock.patch("os.fsync", lambda fd: os.kill(os.getpid(), signal.SIGHUP)):
                write_atomic(path, "new\n")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "new\n")
        self.assertEqual(signal.getsignal(signal.SIGHUP), signal.SIG_IGN)

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
        self.assertOneLineError(run_script("perturb_attention.py", "--svg", ""),
                                "the output path is empty")


class EveryShippedFileIsProtected(MessageAssertions, unittest.TestCase):

    def test_each_shipped_view_is_rewritten_by_its_own_command_and_no_other(self):
        from tests import browser
        views = {"attention-weights.svg", os.path.join("explorer", "attention-explorer.html"),
                 os.path.join("explorer", "attention-explorer.png"),
                 os.path.join("lab06", "lab06-explorer.html"),
                 os.path.join("training", "learned-attention.svg")}
        self.assertLessEqual({ta.FIGURE, ta.PAGE, browser.SCREENSHOT}, views)
        self.assertLessEqual(views, safe_io.project_files())
        for name in views:
            path = os.path.join(HERE, name)
            safe_io.check_output_path(path, name)      # no error
            for other in views - {name} | {None}:
                with self.subTest(view=name, own=other):
                    self.assertMessage(ValueError, "one of this folder's own files",
                                       safe_io.check_output_path, path, other)

    def test_no_view_or_tokenizer_overwrites_a_shipped_file(self):
        """Recorded files, source, the benchmark records, the CI script, every README (copies)."""
        names = ("attention-trace.json", "tokenizer.json", "attention.py",
                 os.path.join("benchmarks", "bench-attention.txt"), os.path.join(".ci", "run"),
                 *READMES)
        with folder_copy(*names) as tmp:
            for name in names:
                path = os.path.join(tmp, name)
                with open(path, encoding="utf-8") as f:
                    before = f.read()
                with self.subTest(name=name):
                    self.assertOneLineError(run_main(ta.main, "--svg", path),
                                            "one of this folder's own files")
                    self.assertOneLineError(run_main(bpe.main, "train", path, "--vocab-size",
                                                     "300", "--out", path),
                                            "one of this folder's own files")
                with open(path, encoding="utf-8") as f:
                    self.assertEqual(f.read(), before, f"{name} was overwritten")

    def test_a_read_only_file_is_not_replaced(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "kept.svg")
            write_atomic(path, "<svg/>\n")
            os.chmod(path, 0o444)
            self.assertOneLineError(run_main(ta.main, "--svg", path),
                                    f"cannot write {path}: the file is read-only")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "<svg/>\n")

    def test_a_folder_as_the_output_or_the_input_is_one_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertOneLineError(run_main(ta.main, "--svg", tmp), f"{tmp} is a folder")
            done = run_main(bpe.main, "encode", "mia", "--tokenizer", tmp)
            self.assertOneLineError(done, f"{tmp} is a folder: expected a file")
            self.assertNotIn("Errno", done.stderr)


class CommandLinesRefuseBeforeTheyWrite(MessageAssertions, unittest.TestCase):

    def test_an_edited_sentence_over_the_limit_is_named_and_nothing_is_written(self):
        sentence = " ".join(["a"] * 64)                  # 64 tokens: " a" is one
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "long.svg")
            done = run_main(ta.main, "--sentence", sentence, "--changed", sentence + " a",
                            "--svg", path)
            self.assertOneLineError(done, "the edited sentence 'a a a a")
            self.assertIn("has 65 tokens", done.stderr)
            self.assertEqual(os.listdir(tmp), [])

    def test_the_rust_benchmark_without_its_trainer_is_one_line_before_timing(self):
        with mock.patch("importlib.util.find_spec", return_value=None):
            done = run_script("benchmarks/bench_bpe.py", "--quick", "--rust")
        self.assertOneLineError(done, "--rust needs HuggingFace tokenizers in this Python")
        self.assertEqual(done.stdout, "")

    def test_a_check_whose_message_cannot_be_printed_fails(self):
        done = run_script("make_tokenizer.py", "--check", stdout_closed=True)
        self.assertOneLineError(done, "standard output is closed")

    def test_a_command_that_says_what_it_wrote_asks_before_writing(self):
        """With standard output closed, a view or a trained tokenizer is not written: else the
        file is there while the command says it failed (and --scaffold would then refuse)."""
        with tempfile.TemporaryDirectory() as tmp:
            text = os.path.join(tmp, "text.txt")
            with open(text, "w", encoding="utf-8") as f:
                f.write("the cat sat on the mat\n")
            for script, args in [
                    ("trace_attention.py", ["--svg", os.path.join(tmp, "a.svg")]),
                    ("perturb_attention.py", ["--svg", os.path.join(tmp, "b.svg"), "--all"]),
                    ("bpe.py", ["train", text, "--vocab-size", "40", "--out",
                                os.path.join(tmp, "t.json")])]:
                with self.subTest(script=script):
                    done = run_script(script, *args, stdout_closed=True)
                    self.assertOneLineError(done, "cannot print: standard output is closed")
            self.assertEqual(os.listdir(tmp), ["text.txt"])


if __name__ == "__main__":
    unittest.main()

"""The learner's folder is the learner's: the project knows its own files from the list it ships
(common/project-files.txt), so that in a download (no git) or a clone, the learner's outputs,
scratch files and folders are theirs to write again and again, and a Windows clone (CRLF line
endings) checks its recorded files by their text."""

import atexit
import concurrent.futures
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from common import cli, golden, safe_io, shipped
from tests.helpers import HERE, MessageAssertions, folder_copy, run_main, run_script


def grade_on_an_ascii_terminal():
    """The untouched scaffold graded by `python3 perturb_attention.py --grade` with
    PYTHONIOENCODING=ascii, in a process of its own on a thread, while other tests run: the
    future of its CompletedProcess (output as bytes); the file is removed when the tests end."""
    folder = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "tiny_attention.py")
    run_script("perturb_attention.py", "--scaffold", path)
    # -S: no site packages, which the project never needs, to start sooner
    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(subprocess.run, [sys.executable, "-S", "perturb_attention.py", "--grade",
                                          path], cwd=HERE, capture_output=True, timeout=60,
                         env={**os.environ, "PYTHONIOENCODING": "ascii"})
    pool.shutdown(wait=False)
    return future


ASCII_GRADING = grade_on_an_ascii_terminal()


class TheProjectKnowsItsOwnFiles(MessageAssertions, unittest.TestCase):

    def test_the_shipped_list_is_what_git_tracks(self):
        if shipped.tracked() is None:
            self.skipTest("no git checkout here (a download): the list is what the project "
                          "shipped, and nothing can be compared with it")
        done = run_main(shipped.main, "--check")
        self.assertEqual(done.returncode, 0, done.stderr + " (after `git add`, run "
                         "python3 -m common.shipped --write)")

    def test_every_listed_file_is_in_the_folder(self):
        missing = [name for name in safe_io.project_files(HERE)
                   if not os.path.isfile(os.path.join(HERE, name))]
        self.assertEqual(missing, [])
        self.assertIn(os.path.join("lab06", "grader.py"), safe_io.project_files(HERE))

    def test_a_folder_without_its_list_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertMessage(ValueError, "common/project-files.txt is missing: it lists the "
                               "project's own files", safe_io.project_files, tmp)

    def test_a_learners_output_is_written_again_and_again_and_a_shipped_file_never(self):
        with folder_copy("attention.py", "attention-weights.svg") as tmp:
            os.mkdir(os.path.join(tmp, "out"))
            for path in ("my.svg", os.path.join("out", "a.svg"), "my.svg", "notes.svg"):
                with self.subTest(path=path):
                    done = run_script("trace_attention.py", "--svg", path, cwd=tmp)
                    self.assertEqual(done.returncode, 0, done.stderr)
            done = run_script("trace_attention.py", "--svg", "attention.py", cwd=tmp)
            self.assertEqual(done.returncode, 1)
            self.assertIn("attention.py is one of this folder's own files", done.stderr)

    def test_a_learners_files_beside_the_projects_are_not_the_projects(self):
        with folder_copy("attention.py") as tmp:
            for name in ("tiny_attention.py", "scratch.py", os.path.join("venv", "x.py")):
                os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
                with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                    f.write("x" * 120 + "\n")
            self.assertEqual(safe_io.project_files(tmp),
                             {"attention.py", safe_io.PROJECT_FILES})


class WindowsLineEndings(unittest.TestCase):

    def test_a_file_is_read_as_its_text_whatever_its_line_endings(self):
        """The explorer's style and script, a recorded trace: a Windows clone writes them with
        "\\r\\n"; a tokenizer trains on its text as it is, CRs and all."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "explorer.css")
            with open(path, "w", encoding="utf-8", newline="\r\n") as f:
                f.write("body{}\nh1{}\n")
            self.assertEqual(safe_io.read_text(path), "body{}\nh1{}\n")
            self.assertEqual(safe_io.read_text(path, as_it_is=True), "body{}\r\nh1{}\r\n")

    def test_a_recorded_file_with_crlf_line_endings_checks_as_its_text(self):
        text = '{\n  "a": 1\n}\n'
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trace.json")
            with open(path, "w", encoding="utf-8", newline="\r\n") as f:
                f.write(text)
            done = run_main(lambda _: golden.write_or_check(text, path, False, True))
            self.assertEqual((done.returncode, done.stdout), (0, "trace.json is up to date\n"))
            done = run_main(lambda _: golden.write_or_check(text.replace("1", "2"), path,
                                                             False, True))
            self.assertEqual(done.returncode, 1)
            self.assertIn("first at line 2", done.stderr)


class ATerminalThatIsNotUtf8(unittest.TestCase):

    def test_what_it_cannot_show_is_spelled_in_ascii(self):
        self.assertEqual("−∞ ␣has z₃ = A·V, Q·Kᵀ/√2, ŝ …".encode("ascii", "spelled"),
                         b"-inf _has z3 = A*V, Q*K^T/sqrt2, s ...")

    def test_json_on_it_is_escaped_and_reads_back_the_same(self):
        text = '{"z\u2083": ["\u2423has"]}'
        stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
        with contextlib.redirect_stdout(stream):
            cli.show_json(json.dumps(json.loads(text), ensure_ascii=False))
            stream.flush()
        self.assertEqual(json.loads(stream.buffer.getvalue()), {"z₃": ["␣has"]})

    def test_the_graders_verdict_is_printed(self):
        done = ASCII_GRADING.result()
        self.assertEqual((done.returncode, done.stderr), (1, b""))
        self.assertIn(b"FAIL  baseline scores = Q*K^T/sqrt2", done.stdout)
        self.assertIn(b"0 of 41 checks pass", done.stdout)


if __name__ == "__main__":
    unittest.main()

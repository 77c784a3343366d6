"""Lab 06's scaffold and grader from the command line: the scaffold lists the checks and never
writes over a file, a careful learner's file passes every check and exits 0, names that would
shadow a standard-library module are refused, the seed and the limits are the README's, what
the grader cannot use is one line and exit status 2, a fault of its own 3, and the README's
Gradescope recipe gives a careful file every point.
"""

import atexit
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock
from xml.etree import ElementTree

from common.views import TOLERANCE
from lab06 import grader as grade_lab06
from lab06.grading_checks import drawn, lab_checks
from lab06.process import CALL_LIMIT, TOTAL_LIMIT
from lab06.scaffold import shadowed
from tests.helpers import HERE, MessageAssertions, run_script
from tests.learner_files import LEARNER, InProcess, grade_source, logical, write_sources


def start_with_a_descriptor_closed():
    """A correct file graded from the command line by a process started with its standard input
    or its standard error closed (`<&-`, `2>&-`), each on a thread: {descriptor: future of the
    CompletedProcess}; the file is removed when the tests end."""
    folder = tempfile.mkdtemp()
    path = write_sources(folder, {"tiny_attention": (LEARNER, {})})["tiny_attention"]
    # -S: no site packages, which the project never needs, to start sooner (-I for the first
    # Python alone: the script's own folder must stay on its path)
    command = ("import os, sys; os.close({fd}); os.execv(sys.executable, [sys.executable, '-S', "
               "'perturb_attention.py', '--grade', {path!r}])")
    pool = concurrent.futures.ThreadPoolExecutor(2)
    futures = {fd: pool.submit(subprocess.run, [sys.executable, "-I", "-S", "-c",
                                                command.format(fd=fd, path=path)],
                               cwd=HERE, stdout=subprocess.PIPE, text=True, timeout=60)
               for fd in (0, 2)}
    pool.shutdown(wait=False)
    atexit.register(shutil.rmtree, folder, True)
    return futures


DESCRIPTOR_CLOSED = start_with_a_descriptor_closed()


def run_the_gradescope_recipe():
    """lab06/README.md's run_autograder, run by sh on a thread in a folder laid out as Gradescope
    lays out /autograder (source/: the lab's folder; submission/: a careful learner's
    tiny_attention.py; results/), its paths rewritten to that folder and python3 to this Python
    without site packages (-S), which the project never needs.
    Returns the future of (the CompletedProcess, results/results.json's text or None); the folder
    is removed when the tests end."""
    with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
        script = f.read().split("```sh\n#!/bin/sh\n", 1)[1].split("```", 1)[0]
    root = tempfile.mkdtemp()
    atexit.register(shutil.rmtree, root, True)
    os.symlink(HERE, os.path.join(root, "source"))
    for folder in ("submission", "results"):
        os.mkdir(os.path.join(root, folder))
    with open(os.path.join(root, "submission", "tiny_attention.py"), "w", encoding="utf-8") as f:
        f.write(LEARNER)
    script = script.replace("/autograder", root).replace("python3 ", shlex.quote(sys.executable)
                                                         + " -S ")
    results = os.path.join(root, "results", "results.json")

    def run():
        done = subprocess.run(["sh", "-c", script], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=120)
        if not os.path.exists(results):
            return done, None
        with open(results, encoding="utf-8") as f:
            return done, f.read()

    pool = concurrent.futures.ThreadPoolExecutor(1)
    future = pool.submit(run)
    pool.shutdown(wait=False)
    return future


GRADESCOPE_RECIPE = run_the_gradescope_recipe() if shutil.which("sh") else None


def python_files_alone(folder, names):
    """copytree's ignore: the project's code, its folders and Python files, without its records,
    its git history and its tests."""
    return [name for name in names if name in (".git", "__pycache__", "tests") or not (
        name.endswith(".py") or os.path.isdir(os.path.join(folder, name)))]


class Commands(MessageAssertions, unittest.TestCase):

    def test_the_readme_states_the_large_drawn_heads_range_and_the_tolerance(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        said = re.search(r"\((\d+) to (\d+) queries, (\d+) to (\d+) sources, (\d+) to (\d+) "
                         r"wide\) with numbers up to ±(\d+)", text)
        self.assertIsNotNone(said, "lab06/README.md no longer states the large drawn head")
        heads = [drawn(seed)["heads"][1] for seed in range(200)]
        T, S, d = ([len(q) for q, _, _, _ in heads], [len(k) for _, k, _, _ in heads],
                   [len(q[0]) for q, _, _, _ in heads])
        top = max(abs(x) for head in heads for m in head[:3] for row in m for x in row)
        self.assertEqual(tuple(map(int, said.groups())),
                         (min(T), max(T), min(S), max(S), min(d), max(d), top))
        tolerance = f"{TOLERANCE:.0e}".replace("e-0", "e-")
        self.assertIn(f"A number is right when it lies within {tolerance} of the grader's", text)

    def test_the_readme_counts_the_checks_the_grader_runs(self):
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            said = re.search(r"The grader runs the (\d+) checks the scaffold lists", f.read())
        self.assertIsNotNone(said,
                             "lab06/README.md no longer says how many checks the grader runs")
        self.assertEqual(int(said.group(1)), len(lab_checks()))

    def test_the_limits_in_use_are_at_most_30_s_in_all_and_the_readme_quotes_them(self):
        self.assertLessEqual(TOTAL_LIMIT, 30)
        self.assertLess(CALL_LIMIT, TOTAL_LIMIT)
        with open(os.path.join(HERE, "lab06", "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn(f"The grader runs the {len(lab_checks())} checks the scaffold "
                      f"lists", readme)
        self.assertIn(f"with at most {CALL_LIMIT:g} s for each call (importing it is "
                      f"one) and {TOTAL_LIMIT:g} s in all", readme)

    def test_a_correct_file_passes_every_check_and_exits_0(self):
        done = grade_source(LEARNER)
        self.assertEqual((done.returncode, done.stderr), (0, ""), done.stdout)
        self.assertNotIn("FAIL", done.stdout)
        count = len(lab_checks())
        self.assertTrue(done.stdout.endswith(f"\n{count} of {count} checks pass\n"), done.stdout)

    def test_our_core_in_the_scaffolds_three_functions_passes_every_check(self):
        source = textwrap.dedent('''
            from attention import matmul
            from lab06 import attend, masked_softmax


            def attention(Q, K, V, allowed):
                cache = attend(Q, K, V, allowed)
                nothing_blocked = [[True] * len(K) for _ in Q]
                return {"scores": attend(Q, K, V, nothing_blocked)["scores"],
                        "masked_scores": cache["scores"], "weights": cache["weights"],
                        "output": cache["mixed"]}
        ''')
        # beside a copy of the project, which the grader does not take for the project's own
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(HERE, tmp, dirs_exist_ok=True, ignore=python_files_alone)
            os.chmod(tmp, 0o700)      # copytree gave it the folder's mode, read-only in a download
            path = os.path.join(tmp, "tiny_attention.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
            lines, passed = grade_lab06.grade(path)
        self.assertTrue(passed, "\n".join(lines))

    @unittest.skipUnless(GRADESCOPE_RECIPE, "needs sh")
    def test_the_readmes_gradescope_recipe_gives_a_careful_file_every_point(self):
        done, text = GRADESCOPE_RECIPE.result()
        self.assertEqual((done.returncode, done.stderr), (0, ""))
        self.assertIsNotNone(text, "the recipe wrote no results/results.json")
        results, count = json.loads(text), len(lab_checks())
        self.assertEqual(results["score"], count)
        self.assertEqual([(test["status"], test["score"], test["max_score"])
                          for test in results["tests"]], [("passed", 1, 1)] * count)
        self.assertTrue(done.stdout.endswith(f"\n{count} of {count} checks pass\n"))

    def test_a_command_line_the_grader_cannot_use_exits_2_and_a_fault_of_its_own_3(self):
        """2 before any grading, and no report; 3 when the grader fails, which is no verdict."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(LEARNER)
            out = os.path.join(tmp, "results.json")
            for args, fragment in (
                    ((path, "--report", "junit", os.path.join(tmp, "gone", "r.xml")),
                     "does not exist"),
                    ((path, "--report", "junit", path), "is also --grade"),
                    ((path, "--report", "xml", out), "--report takes gradescope or junit"),
                    ((os.path.join(tmp, "gone.py"), "--report", "junit", out), "no such file")):
                with self.subTest(args=args):
                    done = run_script("perturb_attention.py", "--grade", *args)
                    self.assertOneLineError(done, fragment)
                    self.assertEqual(done.returncode, 2)
            with mock.patch.object(grade_lab06, "grading", side_effect=KeyError("scores")):
                done = run_script("perturb_attention.py", "--grade", path, "--report", "junit",
                                  out)
            self.assertOneLineError(done, f"the grader failed, which says nothing of {path}: "
                                          f"KeyError: 'scores'")
            self.assertEqual(done.returncode, 3)
            self.assertEqual(os.listdir(tmp), ["tiny_attention.py"])

    def test_the_scaffold_never_overwrites_a_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "mine.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write("# my work\n")
            self.assertOneLineError(run_script("perturb_attention.py", "--scaffold", path),
                                    "already exists")
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), "# my work\n")

    def test_a_name_that_would_shadow_the_standard_library_is_refused_by_scaffold_and_grade(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("json.py", "queue.py", "random.py"):
                path = os.path.join(tmp, name)
                with self.subTest(name=name):
                    self.assertOneLineError(run_script("perturb_attention.py", "--scaffold",
                                                       path), "would find it before the "
                                                              "standard library's")
                    self.assertFalse(os.path.exists(path))
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(LEARNER)
                    self.assertOneLineError(run_script("perturb_attention.py", "--grade", path),
                                            f"cannot grade {path}: `import {name[:-3]}` would "
                                            f"find it before")
        for name in sorted(sys.stdlib_module_names)[::40]:
            self.assertIn("the standard library's", shadowed(name + ".py"))
        self.assertIsNone(shadowed("json.txt"))

    def test_a_name_of_the_projects_own_shadows_nothing_and_is_written_and_graded(self):
        """The README writes tiny_attention.py in the top folder and grades it there, beside the
        project's own files: with the learner's file among them (as listed here), a name the
        project or the learner uses is no standard-library module, and is written and graded."""
        real_listdir = os.listdir

        def with_the_learners_file(path="."):
            names = real_listdir(path)
            same = os.path.realpath(path) == os.path.realpath(HERE)
            return names + ["tiny_attention.py"] if same else names

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch("os.listdir", with_the_learners_file):
            for name in ("tiny_attention.py", "attention.py", "lab06.py", "common.py"):
                with self.subTest(name=name):
                    self.assertIsNone(shadowed(os.path.join(HERE, name)))
                    path = os.path.join(tmp, name)
                    done = run_script("perturb_attention.py", "--scaffold", path)
                    self.assertEqual((done.returncode, done.stderr), (0, ""))
            with open(os.path.join(tmp, "attention.py"), "w", encoding="utf-8") as f:
                f.write(LEARNER)
            with mock.patch.object(grade_lab06, "LearnerProcess", InProcess):   # the name is tested
                done = run_script("perturb_attention.py", "--grade",
                                  os.path.join(tmp, "attention.py"))
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)

    def test_a_grader_without_standard_input_or_error_grades_a_correct_file_right(self):
        """Started with descriptor 0 or 2 closed, the grader's pipes once took that number and
        the warden, pointing 0, 1 and 2 at the null device, cut them: a correct file failed."""
        count = len(lab_checks())
        for fd, future in DESCRIPTOR_CLOSED.items():
            done = future.result()
            with self.subTest(closed=fd):
                self.assertEqual(done.returncode, 0, done.stdout[-300:])
                self.assertTrue(done.stdout.rstrip().endswith(f"{count} of {count} checks pass"))

    def test_scaffold_and_grade_say_a_closed_output_before_doing_anything(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny_attention.py")
            for flag in ("--scaffold", "--grade"):
                done = run_script("perturb_attention.py", flag, path, stdout_closed=True)
                self.assertOneLineError(done, "cannot print: standard output is closed")
                self.assertFalse(os.path.exists(path), flag)

    def test_a_file_of_any_name_is_graded_and_a_missing_one_is_one_line(self):
        """Each file graded in this process (InProcess): its name is what is tested."""
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess):
            for name in ("notes.txt", "no_extension"):
                with self.subTest(name=name):
                    path = os.path.join(tmp, name)
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(LEARNER)
                    done = run_script("perturb_attention.py", "--grade", path)
                    self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            self.assertOneLineError(run_script("perturb_attention.py", "--grade", tmp),
                                    "it is a folder, expected a Python file")
            self.assertOneLineError(run_script("perturb_attention.py", "--grade", os.devnull),
                                    "it is not a regular file, expected a Python file")
            self.assertOneLineError(
                run_script("perturb_attention.py", "--grade", os.path.join(tmp, "gone.py")),
                "no such file (write one with --scaffold")

    def test_the_main_part_does_not_run_and_printing_reaches_no_one(self):
        noisy = ('print("40 of 40 checks pass")\n'
                 'if __name__ == "__main__":\n    raise SystemExit(9)\n')
        done = grade_source(LEARNER + noisy)
        self.assertEqual(done.returncode, 0, done.stdout)
        self.assertEqual(done.stdout.count("checks pass"), 1)

    def test_grade_refuses_what_it_cannot_use_with_exit_2(self):
        for args, fragment in (
                (("--table",), "drop --table"), (("--bug", "post-softmax"), "drop --bug"),
                (("--offset-scores", "3=1000"), "drop --offset-scores"),
                (("--set-weights", "3=0,0,1"), "drop --set-weights"),
                (("--scaffold", "x.py"), "--scaffold and --grade are two steps"),
                (("--check",), "--write and --check work on the recorded file alone")):
            with self.subTest(args=args):
                done = run_script("perturb_attention.py", "--grade", "tiny_attention.py", *args)
                self.assertOneLineError(done, fragment)
                self.assertEqual(done.returncode, 2)


class TheUntouchedScaffold(MessageAssertions, unittest.TestCase):
    """The scaffold as --scaffold writes it, graded once from the command line with the README's
    `--seed 721319` and a JUnit report, in this process (InProcess): the checks it lists, the
    report and the seed are tested, not the process."""

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess):
            cls.path = os.path.join(tmp, "tiny_attention.py")
            cls.scaffolded = run_script("perturb_attention.py", "--scaffold", cls.path)
            with open(cls.path, encoding="utf-8") as f:
                cls.text = f.read()
            out = os.path.join(tmp, "report.xml")
            cls.done = run_script("perturb_attention.py", "--grade", cls.path, "--seed", "721319",
                                  "--report", "junit", out)
            cls.suite = ElementTree.parse(out).getroot() if os.path.exists(out) else None

    def test_the_untouched_scaffold_fails_each_check_it_lists_and_scores_0(self):
        self.assertEqual(self.scaffolded.returncode, 0)
        self.assertTrue(all(len(line) <= 100 for line in self.text.splitlines()))
        listed = []
        for line in self.text.split('"""')[1].splitlines():
            if line[:7].strip().rstrip(".").isdigit():
                listed.append(line.split(". ", 1)[1])
            elif line.startswith(" " * 8) and listed:
                listed[-1] += " " + line.strip()
        done, suite = self.done, self.suite
        self.assertEqual((done.returncode, done.stderr), (1, ""))
        self.assertIsNotNone(suite, "no JUnit report was written")
        self.assertEqual((suite.get("tests"), suite.get("failures")), (str(len(listed)),) * 2)
        lines = logical(done.stdout.splitlines())
        self.assertEqual([line[6:].split(": not implemented yet")[0] for line in lines[:-1]],
                         listed)
        self.assertRegex(lines[-1], rf"^0 of {len(listed)} checks pass: fix the first FAIL and "
                                    rf"grade again \(--seed \d+ draws the same cases again\)$")
        self.assertEqual(len(listed), len(lab_checks()))

    def test_the_seed_a_report_names_is_taken_from_the_command_line(self):
        """The README's `--grade tiny_attention.py --seed 721319`: the report of a failing file
        names the seed it drew with, and a bad seed is one line."""
        self.assertEqual((self.done.returncode, self.done.stderr), (1, ""))
        self.assertTrue(self.done.stdout.rstrip().endswith(
            "(--seed 721319 draws the same cases again)"), self.done.stdout[-200:])
        self.assertOneLineError(run_script("perturb_attention.py", "--grade", self.path, "--seed",
                                           "abc"), "--seed takes the number a grading's "
                                                   "report names, such as 721319, got 'abc'")


if __name__ == "__main__":
    unittest.main()

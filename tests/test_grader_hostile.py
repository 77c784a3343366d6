"""Lab 06's grader against files that attack it: no hostile file passes, hangs the grader or shows a
traceback; the answers must be the file's own (the project's files, however a file finds them,
fail it); and no process of a file outlives its grading, however the grading ends.

Each file here is LEARNER with an attack of HOSTILE at its end, graded in a process of its own,
several at a time, with a short limit where a loop must be stopped; those that attack nothing a
process holds (IN_PROCESS: what raises, exits or comes back of a call) are graded in this process,
by the runner's own functions (InProcess), as the mistakes are.
"""

import atexit
import concurrent.futures
import dis
import json
import os
import select
import shutil
import tempfile
import textwrap
import time
import unittest
from unittest import mock
from xml.etree import ElementTree

from common import safe_io
from lab06 import grader as grade_lab06
from lab06 import runner as grade_lab06_runner
from lab06.grading_checks import lab_checks
from lab06.process import Learner, LearnerProcess, project_inodes
from lab06.report import gradescope, junit, report
from tests.helpers import HERE, MessageAssertions, as_job, folder_copy
from tests.learner_files import (LEARNER, EveryReport, InProcess, first_fail, logical,
                                  write_sources)

SHORT = 1.0        # seconds a call may take where the test waits for a loop to be stopped:
                   # 40 times what importing the file takes, so that a busy machine (two suites
                   # at once) still has the loop, not the import, stopped

# The project's folder as a hostile file finds it: from the runner's path, in its __file__ or in
# /proc/PID/cmdline (PID: self, or the warden's)
ROOT_FROM_MAIN = ("import os, sys\n"
                  "ROOT = os.path.dirname(os.path.dirname(sys.modules['__main__'].__file__))\n")
ROOT_FROM_PROC = ("import os, sys\nwords = open(f'/proc/PID/cmdline', 'rb').read().split(b'\\0')\n"
                  "runner = next(w for w in words if w.endswith(b'runner.py')).decode()\n"
                  "ROOT = os.path.dirname(os.path.dirname(runner))\n")
PLANTED = "zz_planted_by_a_test"      # what a hostile file would make in the project: never made
SLEEPER = os.path.join(tempfile.mkdtemp(), "sleeper")    # the pid of a process left to outlive
atexit.register(shutil.rmtree, os.path.dirname(SLEEPER), True)

# attack: (what the file adds at its end, what its first FAIL says). None of them may pass.
HOSTILE = {
    "sys.exit at import": ("import sys\nsys.exit(0)\n",
                           "FAIL  importing tiny_attention.py: it called sys.exit(0) (line 51): "
                           "importing a file must define its functions, not end the program"),
    "os._exit at import": ("import os\nos._exit(0)\n",
                           "FAIL  importing tiny_attention.py: the learner's process ended during "
                           "the import, with exit status 0"),
    "an atexit hook that exits 0, in a wrong file": (
        "import atexit, os\natexit.register(os._exit, 0)\ndef matmul(left, right):\n"
        "    return [[0.0]]\n", "FAIL  matmul: Q = X·WQ: the product: expected a list of 3 rows"),
    "a float subclass whose == is always true": (
        "class Liar(float):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = float.__hash__\n"
        "def matmul(left, right):\n    return [[Liar(7.0) for _ in right[0]] for _ in left]\n",
        "the product row 1, column 1: expected a float or an int, got a Liar 7.0: a number must be "
        "a float or an int itself, not a subclass or a bool"),
    "patching the grader, math and builtins": (
        "import builtins, math, sys\nsys.modules['grade_lab06'] = None\nmath.exp = lambda x: 1.0\n"
        "builtins.abs = lambda x: 0.0\nbuiltins.isinstance = lambda *a: True\n"
        "def masked_softmax(scores, allowed):\n    return [0.5] * len(scores)\n",
        "masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row drawn "
        "afresh: entry 1: expected 0.3333333333 (1/3), got 0.5 (1/2)"),
    "patching the runner's functions to hide a bool and an edit": (
        "import __main__\n__main__.plain = lambda value, depth=0: [[10 ** 400, 0.0]] * 3\n"
        "__main__._bytes_of = lambda value: None\n__main__.to_json = lambda value: '{}'\n"
        "def matmul(left, right):\n    left.append([0.0])\n"
        "    return [[True for _ in right[0]] for _ in left[:-1]]\n",
        "FAIL  importing tiny_attention.py: during the import, the learner's process wrote into "
        "the grader's channel what the grader did not ask for"),
    "rewriting the runner's float texts to hide an edit": (
        "import __main__\ntry:\n    __main__.FLOAT_TEXT['2.0'] = '1.0'\nexcept TypeError:\n"
        "    pass\n_attention = attention\ndef attention(Q, K, V, allowed):\n"
        "    result = _attention([list(row) for row in Q], K, V, allowed)\n"
        "    Q[0][0] = 2.0 if Q[0][0] == 1.0 else Q[0][0]\n    return result\n",
        "baseline scores = Q·Kᵀ/√2, before the mask: attention edited its inputs in place "
        "(Q changed)"),
    "a BaseException of its own": (
        "class Boom(BaseException):\n    pass\ndef matmul(left, right):\n    raise Boom('no')\n",
        "matmul raised Boom (line 53), which is not an Exception: no"),
    "KeyboardInterrupt": ("def matmul(left, right):\n    raise KeyboardInterrupt\n",
                          "matmul raised KeyboardInterrupt (line 51), which is not an Exception"),
    "a loop in C at import": ("x = 10 ** 10 ** 8\n", "the import was stopped after"),
    # the loops in Python rest as they loop: the grader stops a call that never returns alike,
    # spinning or not, and the limit's second is no core's; the loop in C computes
    "a matmul that swallows its IndexError in a loop": (
        "import time\ndef matmul(left, right):\n    i = 0\n    while True:\n        try:\n"
        "            time.sleep(0.01)\n            left[i]\n            i += 1\n"
        "        except Exception:\n            pass\n",
        "matmul was stopped after"),
    "a message whose __str__ loops": (
        "import time\nclass Stubborn(ValueError):\n    def __str__(self):\n        while True:\n"
        "            time.sleep(0.01)\ndef matmul(left, right):\n    raise Stubborn()\n",
        "matmul was stopped after"),
    "a thread that exits the process": (
        "import os, threading\nthreading.Thread(target=os._exit, args=(0,)).start()\n"
        "import time\ntime.sleep(5)\n", "the learner's process ended during the import"),
    "writing on descriptors 1 and 2 and into the grader's channel": (
        "import os\nos.write(1, b'40 of 40 checks pass\\n')\nos.write(2, b'Traceback\\n')\n"
        "for fd in range(3, 12):\n    try:\n"
        "        os.write(fd, b'{\"id\": 1, \"value\": null}\\n')\n"
        "    except OSError:\n        pass\n",
        "wrote into the grader's channel what the grader did not ask for"),
    "a crash in C": ("import ctypes\ndef matmul(left, right):\n    ctypes.string_at(0)\n",
                     "the learner's process was killed by SIGSEGV during matmul"),
    "a syntax error": ("def matmul(left, right)\n    pass\n",
                       "FAIL  importing tiny_attention.py: syntax error (line 50): expected ':'"),
    "a message that paints PASS over its FAIL, with a lone surrogate": (
        "def matmul(left, right):\n    raise ValueError('\\x1b[2K\\rPASS  fine\\n\\ud800')\n",
        "matmul raised ValueError: \\x1b[2K\\rPASS  fine\\n\\ud800"),
    "a module beyond the standard library": (
        "import numpy\n", "FAIL  importing tiny_attention.py: it raised ModuleNotFoundError: No "
                          "module named 'numpy' (line 50): the grader runs the file with the "
                          "standard library alone, as the lab asks"),
    # answers taken from the project: its folder found as a file could find it, from the runner's
    # __file__ or a command line in /proc, then its files loaded in each way there is
    "the project's lab06 imported, its folder found from the runner's __file__": (
        ROOT_FROM_MAIN + "sys.path.insert(0, ROOT)\nfrom lab06 import attention, masked_softmax\n",
        f"it opened {os.path.join(HERE, 'lab06', '__init__.py')}, one of the project's own files "
        f"and folders: the answers must be the file's own"),
    "a module of the project's loaded by importlib, found from /proc/self/cmdline": (
        ROOT_FROM_PROC.replace("PID", "self") + "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('h', os.path.join(ROOT, 'lab06', "
        "'head.py'))\nspec.loader.exec_module(importlib.util.module_from_spec(spec))\n",
        f"it opened {os.path.join(HERE, 'lab06', 'head.py')}, one of the project's own"),
    "the project's attention.py read and run, found from the warden's /proc cmdline": (
        ROOT_FROM_PROC.replace("PID", "{os.getppid()}")
        + "exec(open(os.path.join(ROOT, 'attention.py')).read(), {'__name__': 'x'})\n",
        f"it opened {os.path.join(HERE, 'attention.py')}, one of the project's own"),
    "runpy.run_path of one of the project's modules": (
        ROOT_FROM_MAIN + "import runpy\nrunpy.run_path(os.path.join(ROOT, 'core', 'masked.py'))\n",
        f"it opened {os.path.join(HERE, 'core', 'masked.py')}, one of the project's own"),
    "os.open of one of the project's folders, to open its files through dir_fd": (
        ROOT_FROM_MAIN + "at = os.open(os.path.join(ROOT, 'lab06'), os.O_RDONLY)\n"
        "os.read(os.open('head.py', os.O_RDONLY, dir_fd=at), 100)\n",
        f"it opened {os.path.join(HERE, 'lab06')}, one of the project's own"),
    "a folder above the project's opened, to open the project's files through dir_fd": (
        ROOT_FROM_MAIN + "at = os.open(os.path.dirname(ROOT), os.O_RDONLY)\n"
        "os.open(os.path.join(os.path.basename(ROOT), 'attention.py'), os.O_RDONLY, dir_fd=at)\n",
        f"it opened the folder {os.path.dirname(HERE)}, from which a path reaches files unseen"),
    # a file made in the project's folders, where the next grading would import it
    "a module planted in the project's folder for the next grading": (
        ROOT_FROM_MAIN + f"open(os.path.join(ROOT, '{PLANTED}.py'), 'w').write('x = 1')\n",
        f"it made {os.path.join(HERE, PLANTED + '.py')} in one of the project's folders"),
    "a package planted in the project's folder": (
        ROOT_FROM_MAIN + f"os.mkdir(os.path.join(ROOT, 'lab06', '{PLANTED}'))\n",
        f"it made {os.path.join(HERE, 'lab06', PLANTED)} in one of the project's folders"),
    "a module written beside the file, then moved into the project's folder": (
        ROOT_FROM_MAIN + "mine = os.path.join(os.path.dirname(__file__), 'm.txt')\n"
        f"open(mine, 'w').write('x = 1')\nos.rename(mine, os.path.join(ROOT, '{PLANTED}.pth'))\n",
        f"it made {os.path.join(HERE, PLANTED + '.pth')} in one of the project's folders"),
    "the project's attention.py opened through a link to the project's folder": (
        ROOT_FROM_MAIN + "link = os.path.join(os.path.dirname(__file__), 'p')\n"
        "os.symlink(ROOT, link)\nopen(os.path.join(link, 'attention.py')).read()\n",
        "/p/attention.py, one of the project's own"),
    "the project's attention.py opened from its folder": (
        ROOT_FROM_MAIN + "os.chdir(ROOT)\nopen('attention.py').read()\n",
        "it opened attention.py, one of the project's own"),
    "another Python started to import the project": (
        ROOT_FROM_MAIN + "os.chdir(ROOT)\nos.system(sys.executable + ' -c \"import attention\"')\n",
        "it started another program (os.system): the answers must be the file's own"),
    "the runner's watch rewritten through gc, then the project imported": (
        "import gc\nfor f in gc.get_objects():\n    if getattr(f, '__name__', '') == 'hook':\n"
        "        f.__module__ = 'mine'\n        f.__code__ = (lambda event, args: None).__code__\n"
        + ROOT_FROM_MAIN
        + "sys.path.insert(0, ROOT)\nimport attention\n",
        "it rewrote the __code__ of one of the grader's functions: the answers must be the file's "
        "own"),
    # its warden killed at once, then a sleeper left that its parent no longer holds
    "a warden stopped, and a sleeper left": (
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGKILL)\nready, told = os.pipe()\n"
        "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
        f"        with open({SLEEPER!r}, 'w') as f:\n            f.write(str(os.getpid()))\n"
        "        os.write(told, b'x')\n        time.sleep(30)\n    os._exit(0)\n"
        "os.read(ready, 1)\n",
        "FAIL  the grading: the file stopped its warden, the process that ends what it starts, and "
        "the grader killed what was left"),
}
LOOPS = {"a loop in C at import", "a matmul that swallows its IndexError in a loop",
         "a message whose __str__ loops"}
# what the runner answers alone, whatever process it runs in: its code catches each of them
IN_PROCESS = {"sys.exit at import", "a float subclass whose == is always true",
              "a BaseException of its own", "KeyboardInterrupt", "a syntax error",
              "a message that paints PASS over its FAIL, with a lone surrogate"}


def start_grading(sources):
    """Start grading each file of {name: (source, limits)} in a process of its own, several at a
    time on threads (most of a grading is waiting for the other process). Returns
    {name: future of its Grading}; the files are removed when the tests end."""
    folder = tempfile.mkdtemp()
    paths = write_sources(folder, sources)
    pool = concurrent.futures.ThreadPoolExecutor(6)
    futures = {name: pool.submit(grade_lab06.grading, paths[name], **sources[name][1])
               for name in sources}
    pool.shutdown(wait=False)
    atexit.register(shutil.rmtree, folder, True)
    return futures


# More of the standard library than math, the stack of every call formatted: the runner's own lines
# (linecache opens runner.py) are no answer taken from the project
BEYOND_MATH = textwrap.dedent('''
    import fractions, json, traceback
    _matmul = matmul


    def matmul(left, right):
        traceback.format_stack()
        return _matmul(left, right)
''')


def attacking_sources():
    """The files that attack the grader, each graded in a process of its own: first those that
    wait for a limit; IN_PROCESS left out."""
    slow = ("\nimport time\n_matmul = matmul\n\n\ndef matmul(left, right):\n"
            "    time.sleep(0.4)\n    return _matmul(left, right)\n")
    sources = {"slow": (LEARNER + slow, {"call_limit": 5, "total_limit": 2.0}),
               "the standard library at large": (LEARNER + BEYOND_MATH, {})}
    sources.update({name: (LEARNER + "\n" + attack, {"call_limit": SHORT})
                    for name, (attack, _) in HOSTILE.items() if name in LOOPS})
    sources.update({name: (LEARNER + "\n" + attack, {})
                    for name, (attack, _) in HOSTILE.items() if name not in LOOPS | IN_PROCESS})
    return sources


# Started here, when the tests are collected: the processes run on the second core while the
# modules before this one are tested.
ATTACKS = start_grading(attacking_sources())


# A file that, as it is imported, leaves two processes that try to outlive the grading: one in a
# session of its own (setsid), one in a process group of its own (setpgid), each the grandchild
# of a parent that has exited, each holding the FIFO open for writing; then its matmul sleeps, so
# that the grading is under way when the grader is stopped.
ESCAPES = textwrap.dedent('''
    import os, time


    ready, told = os.pipe()
    for leave in (os.setsid, lambda: os.setpgid(0, 0)):
        if os.fork() == 0:
            leave()
            if os.fork() == 0:
                alive = os.open(FIFO, os.O_WRONLY)
                os.write(alive, b"x")
                os.write(told, b"x")
                while True:
                    time.sleep(1)
            os._exit(0)
    os.read(ready, 1)
    os.read(ready, 1)


    def matmul(left, right):
        time.sleep(60)
''')


# One process that imports the grader once and forks a grader per signal: three graders for the
# price of one Python start. Each grades its file as perturb_attention.py --grade does, its report
# on the standard output they share, Ctrl-C ending it with 130 as the command line's does.
GRADERS = textwrap.dedent('''
    import os, signal, sys
    from lab06 import grader
    signal.signal(signal.SIGHUP, signal.SIG_DFL)    # as a terminal's program has it, even if the
                                                    # tests run under nohup
    pids = []
    for path in sys.argv[1:]:
        pid = os.fork()
        if pid == 0:
            try:
                lines, passed = grader.grade(path)
                os.write(1, ("\\n".join(lines) + "\\n").encode())
                os._exit(0 if passed else 1)
            except KeyboardInterrupt:
                os._exit(130)
            finally:
                os._exit(1)
        pids.append(pid)
    print(*pids, flush=True)
    for pid in pids:
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
''')


def stop_the_graders_midway(signal_names):
    """Grade ESCAPES once per signal, each grader a process of its own; send each its signal once
    both of its escapees hold its FIFO. Returns {signal name: (how many escapees held the FIFO,
    the grader's exit status, whether a writer still held the FIFO 10 s after the graders
    ended)}."""
    import signal
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        readers, paths = [], []
        for n, _ in enumerate(signal_names):
            fifo = os.path.join(tmp, f"alive{n}")
            os.mkfifo(fifo)
            readers.append(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
            paths.append(os.path.join(tmp, f"{n}", "tiny_attention.py"))
            os.mkdir(os.path.dirname(paths[-1]))
            with open(paths[-1], "w", encoding="utf-8") as f:
                f.write(f"FIFO = {fifo!r}\n" + ESCAPES)
        try:
            # -S: no site packages, which the project never needs, to start sooner
            graders = subprocess.Popen([*as_job(), "-S", "-c", GRADERS, *paths], cwd=HERE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
            pids = [int(pid) for pid in graders.stdout.readline().split()]
            ready = []
            for reader, pid, name in zip(readers, pids, signal_names):
                got = b""
                while len(got) < 2 and select.select([reader], [], [], 20)[0]:
                    got += os.read(reader, 2)
                ready.append(len(got))
                os.kill(pid, getattr(signal, name))
            printed = graders.stdout.read()
            graders.stdout.close()
            graders.wait()
            codes, results = [int(line) for line in printed.split()[-len(pids):]], {}
            for name, reader, got, code in zip(signal_names, readers, ready, codes):
                held = True
                while select.select([reader], [], [], 10)[0]:
                    if not os.read(reader, 64):
                        held = False          # every writer has gone
                        break
                results[name] = (got, code, held)
            return results
        finally:
            for reader in readers:
                os.close(reader)


STOPPED = (concurrent.futures.ThreadPoolExecutor(1).submit(
    stop_the_graders_midway, ("SIGTERM", "SIGHUP", "SIGINT"))
    if hasattr(os, "mkfifo") and hasattr(os, "fork") and os.path.isdir("/proc") else None)


class HostileFiles(EveryReport, MessageAssertions, unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        """Every hostile file graded once: in a process of its own (ATTACKS, started when this
        module was imported), then IN_PROCESS in this one, once no grading runs on a thread."""
        cls.gradings = {name: future.result() for name, future in ATTACKS.items()}
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(grade_lab06, "LearnerProcess", InProcess):
            paths = write_sources(tmp, {name: (LEARNER + "\n" + HOSTILE[name][0], {})
                                        for name in sorted(IN_PROCESS)})
            cls.gradings.update({name: grade_lab06.grading(path) for name, path in paths.items()})
        cls.graded = {name: report(found) for name, found in cls.gradings.items()}

    def test_no_hostile_file_passes_hangs_the_grader_or_leaves_a_traceback(self):
        for name in HOSTILE:
            lines, passed = self.graded[name]
            with self.subTest(attack=name):
                self.assertFalse(passed)
                self.assertIn(HOSTILE[name][1], first_fail(lines), "\n".join(lines))
                self.assertTrue(all(line.isprintable() for line in lines), lines)
                self.assertFalse(any("Traceback" in line for line in lines))
                self.assertRegex(logical(lines)[-1], r"^\d+ of \d+ checks pass")
                self.assertTrue(all(len(line) <= 100 for line in lines), lines)

    def test_a_hostile_file_makes_nothing_in_the_projects_folders(self):
        made = [path for path in (os.path.join(HERE, PLANTED + ".py"),
                                  os.path.join(HERE, PLANTED + ".pth"),
                                  os.path.join(HERE, "lab06", PLANTED)) if os.path.exists(path)]
        for path in made:       # a failing run must not leave them for the next
            if os.path.isdir(path):
                os.rmdir(path)
            else:
                os.remove(path)
        self.assertEqual(made, [])

    def test_a_file_that_imports_more_of_the_standard_library_passes(self):
        lines, passed = self.graded["the standard library at large"]
        self.assertTrue(passed, "\n".join(lines))

    def test_a_file_that_never_finishes_its_import_scores_0_in_the_course_reports(self):
        found = self.gradings["a loop in C at import"]
        results = json.loads(gradescope(found, 1))
        self.assertEqual(results["score"], 0)
        self.assertEqual({test["output"] for test in results["tests"]},
                         {f"did not run: the grading stopped at importing tiny_attention.py: the "
                          f"import was stopped after {SHORT:g} s: does a loop never end?"})
        suite = ElementTree.fromstring(junit(found, 1))
        self.assertEqual(suite.get("failures"), suite.get("tests"))

    def test_the_whole_grading_has_a_limit_of_its_own(self):
        """Which call the limit ends depends on the machine's load (on a busy one, the import may
        take most of the limit): the limit, not the call, is what is asserted."""
        lines, passed = self.graded["slow"]
        lines = logical(lines)
        self.assertFalse(passed)
        self.assertIn("the grading was stopped after 2 s in all, during ", lines[-2])
        self.assertIn("so the last", lines[-1])

    def test_in_the_projects_folder_a_file_imports_its_own_module_but_none_of_the_projects(self):
        """Part 3 writes tiny_attention.py in the top folder: beside it, a module of the learner's
        is imported, and one of the project's files (those project_files lists, as a download's
        list of shipped files would: not the learner's) fails the file that imports it."""
        with folder_copy("attention.py") as copy, mock.patch.object(
                safe_io, "project_files", lambda root=None: {"attention.py"}):
            for name, source in (("mine.py", LEARNER),
                                 ("tiny_attention.py", "from mine import matmul\n"),
                                 ("cheat.py", LEARNER + "from attention import matmul\n")):
                with open(os.path.join(copy, name), "w", encoding="utf-8") as f:
                    f.write(source)
            process = LearnerProcess(os.path.join(copy, "tiny_attention.py"), 2, 5)
            try:
                learner = Learner(process, "tiny_attention.py")
                self.assertIsNone(learner.load())
                self.assertEqual(learner.call("matmul", [[1.0]], [[2.0]]).value, [[2.0]])
            finally:
                process.stop()
            lines, passed = grade_lab06.grade(os.path.join(copy, "cheat.py"))
        self.assertFalse(passed)
        self.assertIn(f"FAIL  importing cheat.py: it opened {os.path.join(copy, 'attention.py')}, "
                      f"one of the project's own files and folders: the answers must be the "
                      f"file's own", first_fail(lines))

    def test_the_runner_watches_the_projects_files_and_folders_and_those_it_makes_for_itself(self):
        with folder_copy("attention.py") as copy, mock.patch.object(
                safe_io, "project_files", lambda root=None: {"attention.py", "tiny_attention.py"}):
            for folder in ("__pycache__", ".git", os.path.join(".git", "objects")):
                os.mkdir(os.path.join(copy, folder))
            inode = {name: (os.stat(os.path.join(copy, name)).st_dev,
                            os.stat(os.path.join(copy, name)).st_ino)
                     for name in ("attention.py", "", "__pycache__", ".git", ".git/objects")}
            with open(os.path.join(copy, "tiny_attention.py"), "w", encoding="utf-8") as f:
                f.write(LEARNER)
            files, folders = project_inodes(os.path.join(copy, "tiny_attention.py"))
        self.assertEqual(files, {inode["attention.py"], inode[""]})     # not the learner's file
        self.assertEqual(folders, {inode["__pycache__"], inode[".git"], inode[".git/objects"]})

    def test_the_runners_watch_looks_up_no_name_when_it_runs(self):
        """Every name the hook uses is bound when it is made: patching builtins (str, type),
        os or the runner's module changes nothing it does."""
        hook = next(code for code in grade_lab06_runner.watch.__code__.co_consts
                    if getattr(code, "co_name", None) == "hook")
        self.assertEqual([step.argval for step in dis.get_instructions(hook)
                          if step.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF")], [])

    @unittest.skipUnless(os.path.isdir("/proc") and hasattr(os, "fork"), "needs /proc and fork")
    def test_what_a_file_leaves_after_stopping_its_warden_ends_with_the_grading(self):
        lines, passed = self.graded["a warden stopped, and a sleeper left"]
        count = len(lab_checks())
        self.assertFalse(passed)
        self.assertTrue(logical(lines)[-1].startswith(
            f"{count} of {count} checks pass; the file stopped its warden, so none counts"))
        results = json.loads(gradescope(self.gradings["a warden stopped, and a sleeper left"], 1))
        self.assertEqual(results["score"], 0)       # none counts, in the course's report too
        with open(SLEEPER, encoding="utf-8") as f:
            sleeper = f"/proc/{int(f.read())}"
        for _ in range(100):      # a bound, not a timing: the grader has killed and reaped it
            if not os.path.exists(sleeper):
                break
            time.sleep(0.01)
        self.assertFalse(os.path.exists(sleeper), "the sleeper outlived the grading")

    @unittest.skipUnless(hasattr(os, "mkfifo") and hasattr(os, "fork"), "needs a FIFO and fork")
    def test_what_the_file_starts_is_killed_with_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "alive")
            os.mkfifo(fifo)
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            self.addCleanup(os.close, reader)
            # A child that holds the FIFO open, and tells its parent once it does.
            source = LEARNER + textwrap.dedent(f'''
                import os, time
                ready, told = os.pipe()
                if os.fork() == 0:
                    alive = os.open({fifo!r}, os.O_WRONLY)
                    os.write(alive, b"x")
                    os.write(told, b"x")
                    time.sleep(30)
                    os._exit(0)
                os.read(ready, 1)
            ''')
            lines, passed = report(start_grading({"child": (source, {})})["child"].result())
            self.assertTrue(passed, "\n".join(lines))
            self.assertEqual(os.read(reader, 1), b"x")
            # Every writer gone means the end of the FIFO: the child was killed with the group.
            self.assertEqual(select.select([reader], [], [], 5)[0], [reader], "still alive")
            self.assertEqual(os.read(reader, 1), b"")

    @unittest.skipUnless(STOPPED, "needs a FIFO, fork and /proc")
    def test_no_process_of_the_file_outlives_a_grader_stopped_by_sigterm_sighup_or_ctrl_c(self):
        results = STOPPED.result()
        for name, (ready, code, held) in results.items():
            with self.subTest(signal=name):
                self.assertEqual(ready, 2, "the escapees never held the FIFO")
                self.assertNotEqual(code, 0)
                self.assertFalse(held, "a process of the learner's file outlived the grader")


if __name__ == "__main__":
    unittest.main()

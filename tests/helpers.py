"""What the test files share: running a command line as a learner runs it, and asserting on errors.

    run_script(script, *args)      a script run as `python3 script args` runs it, but in this
                                   process (fast): its own code as __main__, output captured;
                                   folder= makes it find its files in another folder
    run_main(main, *args)          a command line's main(argv) in this process, output captured
    folder_copy(*names)            a temporary copy of some of this folder's files, which the
                                   protection of shipped files (safe_io) takes for the folder:
                                   a test that aims a write at a shipped file aims it there
    MessageAssertions              assertMessage (an exception and its message) and
                                   assertOneLineError (one line on stderr, non-zero exit,
                                   no traceback)

Nothing here is a test; the test files import it, and no other module does.
"""

import contextlib
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile

from attention import matmul, transpose

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder


def as_job(*ignored):
    """Python, started as a terminal starts a job: SIGINT, SIGTERM and SIGHUP at their default (a
    suite run in the background, `python3 -m unittest &` in a script, ignores SIGINT, one run
    under nohup SIGHUP, and so would every program it starts), but the signals named in ignored,
    ignored as `nohup` ignores SIGHUP."""
    return [sys.executable, "-c", "import os, signal, sys\n"
            "for name in ('SIGINT', 'SIGTERM', 'SIGHUP'):\n"
            "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
            + "".join(f"signal.signal(signal.{name}, signal.SIG_IGN)\n" for name in ignored)
            + "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"]


class MessageAssertions:
    """Mixed into a unittest.TestCase."""

    def assertMessage(self, error, fragment, call, *args):
        """call(*args) raises error, and its message contains fragment."""
        with self.assertRaises(error) as caught:
            call(*args)
        self.assertIn(fragment, str(caught.exception))

    def assertOneLineError(self, done, fragment):
        """A finished command line failed with one line on stderr that contains fragment."""
        self.assertNotEqual(done.returncode, 0)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        self.assertIn(fragment, done.stderr)


# Central differences with ε = 1e-6 on a loss of size ~1: truncation O(ε²) and rounding about
# 1e-16/ε = 1e-10, so a right gradient agrees within 1e-7 and a dropped path misses by far more.
GRAD_TOLERANCE = 1e-7


def bits(value):
    """Every float of nested lists and dicts as its hex text, so that −0.0 and 0.0 differ."""
    if isinstance(value, dict):
        return {key: bits(item) for key, item in value.items()}
    if isinstance(value, list):
        return [bits(item) for item in value]
    return value.hex()


def question_row_and_its_gradient(test, row, out, full, d_logits, U):
    """Assert that row and out, what attention_core and Wo give for a layer's question row alone,
    are full's last row (attention_forward of the whole layer) bit for bit; return d_out (T,
    d_model), dLoss/d(out) for attention_backward: zero but in the last row, d_logits·Uᵀ."""
    for name in ("q", "scores", "weights", "mixed"):
        test.assertEqual(bits(row[name]), bits(full[name][-1:]), name)
    for name in ("k", "v"):
        test.assertEqual(bits(row[name]), bits(full[name]), name)
    test.assertEqual(bits(out), bits(full["out"][-1:]))
    width = len(full["out"][0])
    return [[0.0] * width for _ in full["out"][:-1]] + matmul([d_logits], transpose(U))


def shipped(end=""):
    """The project's own files whose path ends with end, sorted, as paths from the project folder:
    the list that travels with the project, so that no file of the learner's ever counts."""
    from common.safe_io import project_files
    return sorted(name for name in project_files(HERE) if name.endswith(end))


@contextlib.contextmanager
def folder_copy(*names):
    """A temporary folder holding copies of names (paths relative to this folder) and the list of
    them as its project's files, which safe_io.HERE points to while it is open: were the
    protection of shipped files to fail, only the copies would be overwritten."""
    from common import safe_io
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
            shutil.copyfile(os.path.join(HERE, name), os.path.join(tmp, name))
        os.makedirs(os.path.join(tmp, os.path.dirname(safe_io.PROJECT_FILES)), exist_ok=True)
        with open(os.path.join(tmp, safe_io.PROJECT_FILES), "w", encoding="utf-8") as f:
            f.write("".join(f"{name}\n" for name in (*names, safe_io.PROJECT_FILES)))
        saved = safe_io.HERE
        safe_io.HERE = tmp
        try:
            yield tmp
        finally:
            safe_io.HERE = saved


_COMPILED = {}


def run_script(script, *args, folder=None, cwd=None, stdout_closed=False, stderr_closed=False):
    """Run a script of this folder as `python3 script *args` would, in this process: a fresh
    __main__ namespace each time, sys.argv set, output captured, SystemExit caught. The modules it
    imports are this process's. With folder, the script's __file__ lies there, so the files it finds
    beside itself (its recorded trace) are that folder's. Returns returncode, stdout and stderr."""
    path = os.path.join(HERE, script)
    if path not in _COMPILED:
        with open(path, encoding="utf-8") as f:
            _COMPILED[path] = compile(f.read(), path, "exec")
    namespace = {"__name__": "__main__", "__file__": os.path.join(folder or HERE, script),
                 "__builtins__": __builtins__}
    argv = sys.argv
    sys.argv = [script, *args]
    try:
        return run_main(lambda _: exec(_COMPILED[path], namespace), cwd=cwd,
                        stdout_closed=stdout_closed, stderr_closed=stderr_closed)
    finally:
        sys.argv = argv


def run_main(main, *args, cwd=None, stdout_closed=False, stderr_closed=False):
    """Run a command line's main(argv) in this process, as the script would run: returns an object
    with returncode, stdout and stderr. An exception escaping main fails the test: the script would
    have shown a traceback. stdout_closed: sys.stdout is None, as Python makes it when the script
    starts with its standard output closed (`>&-`); stderr_closed the same for stderr (`2>&-`)."""
    out, code = (None if stdout_closed else io.StringIO()), None
    err = None if stderr_closed else io.StringIO()
    here = os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:
                code = exit_.code
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(args, code, out.getvalue() if out else "",
                                       err.getvalue() if err else "")


@functools.lru_cache(maxsize=None)
def recorded_seed_stories():
    """The recorded seed's stories, training_story's and every held-out set
    (stories(SEED) of training/stories.py), drawn once for every test module of a run: none changes
    them."""
    from training.stories import stories
    from training.train import SEED
    return stories(SEED)


RAINDROP = "look, ivan has a big brown palm. rohan's raindrop is blue. the raindrop is"
LISTED = "mia has a red ball and a blue kite. the kite is"


@functools.lru_cache(maxsize=None)
def raindrop_figures():
    """The recorded two-layer model and what training/README.md shows of it on RAINDROP: intervene
    blocking " blue" (position 15), then it and the "." after it, each (before, after), and patch
    of it with " green" for " blue"; and given_layer.predict on LISTED."""
    from training import given_layer, interventions
    model = given_layer.read_model(os.path.join(HERE, "training", "two-layer-model.json"))
    return (model, [interventions.intervene(model, RAINDROP, block) for block in ([15], [15, 16])],
            interventions.patch(model, RAINDROP, RAINDROP.replace("is blue", "is green")),
            given_layer.predict(model, LISTED))

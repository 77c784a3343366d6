"""Lab 06's scaffold and grader: write your own tiny_attention.py, then have it checked.

    python3 perturb_attention.py --scaffold tiny_attention.py    a starter file to fill in
    python3 perturb_attention.py --grade tiny_attention.py       one PASS or FAIL line per check
    python3 perturb_attention.py --grade tiny_attention.py --head my-head.json --scale-key 3=2
                                                  your file against ours, on any head and change

The learner's file defines, as the lab's Part 3 asks:

    matmul(left, right)                 lists of lists, (n, m)·(m, p) -> (n, p)
    masked_softmax(scores, allowed)     one row; a blocked source gets exactly 0.0
    attention(Q, K, V, allowed)         {"scores", "masked_scores", "weights", "output"}

The learner's code is not trusted. It runs in a process of its own (runner.py), below a warden
(runner.py --warden) that kills it and every process it started once the grading ends, however the
grading ends, a new session or process group of theirs included (Linux: a child subreaper; where
there is no prctl, the process group alone, and the report says so). A file that stops its warden
fails, and the grader, a subreaper too, kills what it left. The answers must be the file's own: it
runs from its own folder with the standard library alone, and opening one of the project's files
(project_inodes) or starting another program ends it with a FAIL that says so. It is asked one
call at a time and answers each in JSON. Each call may take CALL_LIMIT seconds and the whole
grading TOTAL_LIMIT.
Every verdict is made here, from the answers alone: a number must be a float or an int (not a bool,
not a subclass), in the shape asked, and a call must leave its arguments as they came. Whatever the
code does (exits, raises, loops in Python or in C, prints, patches what it can reach, answers from
a table of the inputs it expects), the learner sees a FAIL line that says so.

The checks run in the order of the computation: the projections, the scores, the masked scores,
the weights, the output; then the interventions, the rejections, inputs left as they were and the
optional checks. Three of them also take cases drawn afresh for each grading from a seed, which a
FAIL names (grade(..., seed=N) draws them again). Where wrong numbers match a mistake learners
make, the line names it (each, when several give the same numbers), so the first FAIL says which
intermediate went wrong first and how; each hint comes once. Rows and columns count from 1, as the
lab's; lines are wrapped at LINE_WIDTH.

What it leaves out: a sandbox. The learner's code runs with the learner's own rights (as root, with
no capability): the grader guards its verdict against any mistake and any trick played inside the
learner's own processes, not the machine against a file written to attack it.
"""

import collections
import json
import marshal
import math
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time

from attention import causal_mask, matmul, transpose
from common import safe_io
from common.safe_io import check_output_path, write_atomic
from common.views import TOLERANCE
from lab06 import lab as lab06
from lab06 import runner
from lab06.head import attend, attention, masked_softmax

LIKENESS = 1e-6       # how close wrong numbers must come to a known mistake's for it to be named
CALL_LIMIT = 2.0      # seconds one call of the learner's code may take; importing it is a call
TOTAL_LIMIT = 20.0    # seconds the whole grading may take
START_LIMIT = 5.0     # seconds for Python to start, before any of the learner's code runs
MAX_FILE = 2 ** 20    # bytes: a larger file is refused before it runs
MAX_ANSWER = 2 ** 20  # bytes of one answer: the largest asked for (a 64-position head's four
                      # matrices) is about 400 kB, and a larger one is no answer but a burden
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")

SCAFFOLD = '''"""Lab 06: one attention head, computed by hand. Fill in the three functions, then run

    python3 tiny_attention.py                                 print your baseline
    python3 perturb_attention.py --grade tiny_attention.py    check every part

Rows are positions. allowed[i][j] is True when query i may attend to source j. The grader runs your
file in a process of its own, at most CALL_LIMIT s a call, and these COUNT checks, in the order of
the computation (rows and columns in its messages count from 1; a number is right when it lies
within TOLERANCE of the grader's):

CHECKS
"""

import math

C = math.sqrt(2) * math.log(2)    # keep it exact: every score comes out a multiple of ln 2
X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
WQ = [[1.0, 0.0], [0.0, 1.0]]
WK = [[C, 0.0], [0.0, C]]
WV = [[2.0, 0.0], [0.0, 4.0]]
ALLOWED = [[True, False, False], [True, True, False], [True, True, True]]


def matmul(left, right):
    """(n, m)·(m, p) -> (n, p). Raise ValueError, naming both shapes, when m differs."""
    raise NotImplementedError("matmul: check the inner sizes, then one sum of products per "
                              "output cell")


def masked_softmax(scores, allowed):
    """Softmax of one row over the allowed sources; a blocked source gets exactly 0.0.
    Raise ValueError when nothing is allowed, or a list is empty or of the wrong length."""
    raise NotImplementedError("masked_softmax: subtract the largest allowed score, take exp, "
                              "divide by the sum; blocked sources are 0.0")


def attention(Q, K, V, allowed):
    """Return {"scores": Q·Kᵀ/√d before the mask, "masked_scores": −∞ where blocked,
    "weights": masked_softmax of each row, "output": weights·V}. Raise ValueError for a ragged
    or empty matrix, widths or counts that do not fit, a mask of the wrong size or with an entry
    that is not a bool, a row with nothing allowed, or a number that is not finite."""
    raise NotImplementedError("attention: scores, then the mask, then masked_softmax per row, "
                              "then the weighted sum of V")


if __name__ == "__main__":
    Q, K, V = matmul(X, WQ), matmul(X, WK), matmul(X, WV)
    result = attention(Q, K, V, ALLOWED)
    for name in ("scores", "masked_scores", "weights", "output"):
        print(name, result[name])
'''


LINE_WIDTH = 100      # a report's lines, wrapped: the learner has the lesson beside it


def shadowed(path):
    """The module of the standard library (sys.stdlib_module_names) that a Python file of this
    name would shadow, run or imported from its folder: beside a json.py, `import json` finds the
    file, and every command run there breaks; None when nothing. A name of this project's
    (attention.py) shadows nothing the commands use: they run from the top folder, and import
    finds its modules and packages before a file elsewhere, or a new file beside a package.

    >>> shadowed("json.py"), shadowed("attention.py"), shadowed("tiny_attention.py")
    ("the standard library's json", None, None)
    """
    stem, extension = os.path.splitext(os.path.basename(path))
    if extension == ".py" and (stem in sys.stdlib_module_names
                               or stem in sys.builtin_module_names):
        return f"the standard library's {stem}"
    return None


def refuse_a_shadowing_name(path, doing):
    what = shadowed(path)
    if what:
        stem = os.path.splitext(os.path.basename(path))[0]
        raise ValueError(f"cannot {doing} {path}: `import {stem}` would find it before {what}, "
                         f"and every command beside it would break; pick another name, such as "
                         f"tiny_attention.py")


def wrapped(line, width=LINE_WIDTH, indent=" " * 6):
    """line as lines of at most width characters, broken at spaces; each after the first indented
    to follow "FAIL  ". A word longer than a line is cut where the line ends.

    >>> wrapped("FAIL  " + "word " * 4, 16)
    ['FAIL  word word', '      word word']
    """
    lines = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent) + 1, width + 1)
        if cut == -1:
            lines.append(line[:width])
            line = indent + line[width:]
        else:
            lines.append(line[:cut])
            line = indent + line[cut + 1:]
    return lines + [line.rstrip()]


def scaffold(path):
    """Write the starter file, which lists the grader's checks; refuse to overwrite anything."""
    if not path:
        raise ValueError("the scaffold path is empty: expected a file name such as "
                         "tiny_attention.py")
    if os.path.lexists(path):
        raise ValueError(f"{path} already exists: the scaffold never overwrites a file "
                         f"(pick another name, or delete it first)")
    refuse_a_shadowing_name(path, "write")
    check_output_path(path)
    names = [name for name, _ in lab_checks()]
    listed = [part for n, name in enumerate(names, 1)
              for part in wrapped(f"    {n:2}. {name}", indent=" " * 8)]
    text = (SCAFFOLD.replace("CALL_LIMIT", f"{CALL_LIMIT:g}").replace("COUNT", str(len(names)))
            .replace("TOLERANCE", f"{TOLERANCE:.0e}".replace("e-0", "e-"))
            .replace("CHECKS", "\n".join(listed)))
    write_atomic(path, text)
    return f"wrote {path}: fill in matmul, masked_softmax and attention, then run --grade {path}"


# ---- the learner's process ---------------------------------------------------------------------

class Stopped(Exception):
    """The learner's process can answer no more; the message says why, in a few words."""


def _fill_standard_descriptors():
    """The null device on each of descriptors 0, 1 and 2 that is closed (`2>&-`): else a pipe
    takes that number, and the warden, which points 0, 1 and 2 at the null device before the
    learner's code runs, cuts the grader's channel."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)      # the lowest free number: fd itself


class LearnerProcess:
    """The learner's file in a process of its own, asked one call at a time, below a warden process
    (runner.py --warden) that stops it and everything it started once this grading ends, however
    it ends. Answers are the runner's dicts. Raises Stopped when the process runs out of time,
    ends, or answers out of turn; it is killed then, with everything it started."""

    def __init__(self, path, call_limit, total_limit):
        self.call_limit, self.total_limit = call_limit, total_limit
        self.deadline = time.monotonic() + total_limit
        self.count, self.stopped, self.runner, self.mode = 0, False, None, None
        self.warden_stopped, self.watched = False, project_inodes(path)
        self.answers, self.requests, self.reports = queue.Queue(), queue.Queue(), queue.Queue()
        # not dumpable: no learner's process opens this one's /proc/PID/fd/1, the terminal
        runner.prctl(runner.PR_SET_DUMPABLE, 0)
        # a subreaper: were the warden stopped, what the file started would be orphaned here
        runner.prctl(runner.PR_SET_CHILD_SUBREAPER, 1)
        _fill_standard_descriptors()
        requests_in, requests_out = os.pipe()
        answers_in, answers_out = os.pipe()
        control_in, self.control = os.pipe()
        # -B: the runner writes no bytecode into this folder (and reads none the learner's code
        # may have left there: runner.py moves the cache under the null device)
        command = [sys.executable, "-I", "-S", "-B", RUNNER,
                   "--warden", str(requests_in), str(answers_out), os.path.abspath(path)]
        # /proc/PID/cmdline of the warden, the runner and every fork of it
        self.command = b"".join(os.fsencode(word) + b"\0" for word in command)
        try:
            self.process = subprocess.Popen(
                command, stdin=control_in, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=(requests_in, answers_out), start_new_session=True,
                cwd=os.path.dirname(os.path.abspath(path)))      # the file's, not ours
        except OSError as e:
            for fd in (requests_in, requests_out, answers_in, answers_out, self.control):
                os.close(fd)
            raise OSError(f"cannot start Python to run {path}: {e.strerror or e}") from None
        finally:
            os.close(control_in)
        os.close(requests_in)
        os.close(answers_out)
        self.answer_stream = os.fdopen(answers_in, "rb")
        self.request_stream = os.fdopen(requests_out, "wb")
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()
        threading.Thread(target=self._hear_the_warden, daemon=True).start()
        try:
            report = self.reports.get(timeout=START_LIMIT)
            self.runner, self.mode = int(report[1]), report[2]
            self._next("starting Python", START_LIMIT)
        except (Stopped, queue.Empty, IndexError, ValueError) as e:  # before any learner code
            self.stop()
            raise OSError(f"cannot start Python to run {path}: {e or 'no answer'}") from None

    def _hear_the_warden(self):
        """The warden's lines: "runner PID MODE" first, "exit CODE" when the runner ends."""
        with self.process.stdout as stream:
            for line in stream:
                self.reports.put(line.decode("ascii", "replace").split())
        self.reports.put(["gone"])

    def _read(self):
        """Each answer line, as it comes; a line without its newline is the last (the end, or an
        answer too long)."""
        with self.answer_stream as stream:
            while True:
                line = stream.readline(MAX_ANSWER + 1)
                self.answers.put(line)
                if not line.endswith(b"\n"):
                    return

    def _write(self):
        """Each request, in its own thread: a process that stops reading cannot block the
        grader."""
        try:
            for request in iter(self.requests.get, None):
                self.request_stream.write(request)
                self.request_stream.flush()
        except OSError:
            pass                  # the process has gone; the next answer says how
        finally:
            try:
                self.request_stream.close()
            except OSError:
                pass

    def ask(self, call, *args):
        """The runner's answer to call(*args): "import", which carries what the runner watches
        from then on (project_inodes), or one of the learner's functions."""
        self.count += 1
        args = self.watched if call == "import" else args
        request = marshal.dumps({"id": self.count, "call": call, "args": list(args)})
        self.requests.put(len(request).to_bytes(4, "big") + request)
        return self._next("the import" if call == "import" else call, self.call_limit)

    def _next(self, what, limit):
        left = self.deadline - time.monotonic()
        try:
            line = self.answers.get(timeout=max(0.0, min(limit, left)))
        except queue.Empty:
            self.stop()
            if left <= limit:
                raise Stopped(f"the grading was stopped after {self.total_limit:g} s in all, "
                              f"during {what}") from None
            raise Stopped(f"{what} was stopped after {limit:g} s: does a loop never end?") from None
        if len(line) > MAX_ANSWER:
            self.stop()
            raise Stopped(f"{what} answered with more than {MAX_ANSWER >> 20} MB")
        if not line.endswith(b"\n"):
            code = self._exit_code()
            self.stop()
            raise Stopped(self._ended(what, code))
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):
            answer = None
        if isinstance(answer, dict) and "not_own" in answer:
            self.stop()
            raise Stopped(_not_own(answer["not_own"]))
        if not isinstance(answer, dict) or answer.get("id") != self.count:
            self.stop()
            raise Stopped(f"during {what}, the learner's process wrote into the grader's channel "
                          f"what the grader did not ask for")
        return answer

    def _exit_code(self):
        """The runner's exit status, once the warden reports it, else None: the warden reports
        it within its next look (every 20 ms); START_LIMIT bounds the wait for a runner that
        closed its answers and lives on, or a warden that is gone, even on a busy machine."""
        deadline = time.monotonic() + START_LIMIT
        while True:
            try:
                report = self.reports.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if report[:1] == ["exit"] and len(report) == 2 and report[1].lstrip("-").isdigit():
                return int(report[1])
            if report[:1] == ["gone"]:
                return None

    @staticmethod
    def _ended(what, code):
        if code is None:
            return (f"the learner's process stopped answering during {what}: it closed the "
                    f"grader's channel, or its warden was killed")
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:            # a signal this Python has no name for
                name = f"signal {-code}"
            return f"the learner's process was killed by {name} during {what}"
        return (f"the learner's process ended during {what}, with exit status {code}: does the "
                f"file call os._exit, or end the process another way?")

    def stop(self):
        """Stop the learner's process and everything it started: closing the warden's input tells
        it to kill them all; wait until it has. A warden that ended otherwise was stopped (by the
        file, most likely): warden_stopped, and kill what it left. Idempotent."""
        if self.stopped:
            return
        self.stopped = True
        os.close(self.control)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:    # the warden itself was stopped: do what it would
            self.process.kill()
            self.process.wait()
        if self.runner is not None and self.process.returncode != 0:
            self.warden_stopped = True
            self._kill_what_escaped()
        self.requests.put(None)

    def _kill_what_escaped(self):
        """Kill and reap what the file started: the runner's group and, below this process (a
        subreaper, where the orphans went), every process with the warden's command line, as the
        runner and its forks have (the runner lets none of them start another program); at most
        for START_LIMIT seconds."""
        try:
            os.killpg(self.runner, signal.SIGKILL)
        except (OSError, AttributeError):
            pass
        killed, deadline = set(), time.monotonic() + START_LIMIT
        while time.monotonic() < deadline:
            found = [pid for pid in runner.descendants(os.getpid())
                     if _command_line(pid) == self.command]
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            killed.update(found)
            for pid in list(killed):
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        killed.discard(pid)
                except ChildProcessError:      # not yet this process's: its parent is dying
                    pass
            if not found and not killed:
                return
            time.sleep(0.002)


def _command_line(pid):
    """The command line of process pid as /proc holds it, or None (it has ended, or no /proc)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return None


def project_inodes(path):
    """(files, folders), what the runner keeps the learner's file at path from opening: the
    (device, inode) of each of the project's files (safe_io.project_files) and of each folder
    holding one, but the runner and path; and of each folder the project makes for itself
    (__pycache__, .git, all they hold), whose every file is its own. The inodes, not the paths:
    a link or /proc/self/fd leads to the same."""
    def inode(name):
        try:
            found = os.stat(name)
        except OSError:
            return None
        return found.st_dev, found.st_ino

    root = safe_io.HERE
    names = [os.path.join(root, name) for name in safe_io.project_files()]
    holders = {root} | {os.path.dirname(name) for name in names}
    made = [os.path.join(folder, "__pycache__") for folder in holders]
    made = [folder for top in made + [os.path.join(root, ".git")]
            for folder, _, _ in os.walk(top)]
    files = {inode(name) for name in names + sorted(holders)} - {inode(RUNNER), inode(path)}
    return frozenset(files - {None}), frozenset({inode(folder) for folder in made} - {None})


NOT_OWN = {"opened": "it opened {}, one of the project's own files and folders",
           "started": "it started another program ({})",
           "rewrote": "it rewrote the {} of one of the grader's functions"}


def _not_own(said):
    """What the runner's watch saw the file do, and why it fails."""
    did, what = said if isinstance(said, list) and len(said) == 2 else (None, None)
    return (NOT_OWN.get(did, "it did what the grader does not allow ({})").format(_text(what))
            + ": the answers must be the file's own, computed with the standard library alone")


Reply = collections.namedtuple("Reply", "value failure error kind edited")
Reply.__doc__ = """One call's answer: value (as JSON brought it), failure (None, or what went wrong
in a few words), error and kind (the exception's type and the first of ValueError, TypeError,
... it is, or None), edited (the numbers of the arguments the call changed)."""


class Learner:
    """The learner's functions, called in its process. The answer to a call with the same
    arguments is kept, so the checks of one run share it."""

    def __init__(self, process, name):
        self.process, self.name, self.kept = process, name, {}

    def load(self):
        """None when the file imports, else what went wrong."""
        return self._reply("it", self.process.ask("import")).failure

    def call(self, function, *args, fresh=False):
        key = json.dumps([function, args])
        if fresh or key not in self.kept:
            self.kept[key] = self._reply(function, self.process.ask(function, *args))
        return self.kept[key]

    def _reply(self, function, answer):
        if "value" in answer:
            edited = answer.get("edited")
            edited = edited if isinstance(edited, list) else []
            return Reply(answer["value"], None, None, None, edited)
        if answer.get("missing") is True:
            return Reply(None, f"{self.name} has no function {function}", None, None, [])
        raised = answer.get("raised")
        if not isinstance(raised, dict):
            raise Stopped(f"during {function}, the learner's process answered what the grader "
                          f"did not ask for")
        error, kind, message, line = (_text(raised.get(key)) for key in
                                      ("type", "kind", "message", "line"))
        where = f" (line {line})" if line else ""
        if kind == "NotImplementedError":
            failure = f"not implemented yet: {function}"
        elif error == "SystemExit":
            failure = (f"{function} called sys.exit({message}){where}: " + (
                "importing a file must define its functions, not end the program"
                if function == "it" else "a function must return or raise, not end the program"))
        elif kind == "SyntaxError":
            failure = f"syntax error{where}: {message}"
        elif kind == "BaseException":
            failure = (f"{function} raised {error}{where}, which is not an Exception"
                       f"{': ' + message if message else ''}")
        else:
            failure = f"{function} raised {error}{': ' + message if message else ''}{where}"
            failure += _beyond_the_standard_library(error, message)
        return Reply(None, failure, error, kind, [])


def _beyond_the_standard_library(error, message):
    """Why a module the file imports is missing, when it lies beyond the standard library.

    >>> _beyond_the_standard_library("ModuleNotFoundError", "No module named 'numpy.linalg'")
    ': the grader runs the file with the standard library alone, as the lab asks'
    """
    name = message.partition("No module named '")[2].partition("'")[0].partition(".")[0]
    if error != "ModuleNotFoundError" or not name or name in sys.stdlib_module_names:
        return ""
    return ": the grader runs the file with the standard library alone, as the lab asks"


def _text(value):
    return str(value)[:300] if isinstance(value, (str, int)) and not isinstance(value, bool) \
        else ""


# ---- comparing -----------------------------------------------------------------------------------

def _is_number(x):
    """A float, or an int a float can hold: what a matrix of the lab may contain."""
    return type(x) is float or (type(x) is int and -2 ** 1023 < x < 2 ** 1023)


def _num(x):
    """A number for a message, with the small fraction it stands for, if any.

    >>> _num(1 / 3), _num(-math.inf), _num(0.2689414213699951)
    ('0.3333333333 (1/3)', '−∞', '0.2689414214')
    """
    if math.isinf(x) or math.isnan(x):
        return {math.inf: "∞", -math.inf: "−∞"}.get(x, "NaN")
    fraction = lab06.exact_fraction(x)
    shown = f"{x:.10g}"
    return f"{shown} ({fraction})" if fraction is not None and fraction.denominator > 1 else shown


def _came(value):
    """What came from the learner's process, in a few words: the runner writes what is not a plain
    list, dict, int or float as "<type ...>"."""
    if isinstance(value, str):
        name, _, number = value.strip("<>").partition(" ")
        if name == "NoneType":
            return "None"
        hint = (": a number must be a float or an int itself, not a subclass or a bool"
                if number and name not in ("float", "int") else "")
        return f"a {name}{' ' + number if number else ''}{hint}"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _entries_problem(got, want, where, blocked=None, blocked_value=None):
    """The first entry of a row that is not a number or differs from want (exactly blocked_value
    where blocked), in a few words, or None. where(j) names entry j, counted from 1."""
    for j, (g, w) in enumerate(zip(got, want)):
        if not _is_number(g):
            return f"{where(j + 1)}: expected a float or an int, got {_came(g)}"
        if blocked and blocked[j]:
            if g != blocked_value:
                return (f"{where(j + 1)} is blocked: expected exactly {_num(blocked_value)}, "
                        f"got {_num(g)}")
        elif not abs(g - w) <= TOLERANCE:
            return f"{where(j + 1)}: expected {_num(w)}, got {_num(g)}"
    return None


def mismatch(got, want, what, blocked=None, blocked_value=None):
    """None when got has the shape of want, a list of rows, and each entry is a float or an int
    within TOLERANCE of want's (exactly blocked_value where blocked is True); else a few words on
    the first difference, rows and columns counted from 1.

    >>> mismatch([[1.0, 0.25]], [[1.0, 0.5]], "weights")
    'weights row 1, column 2: expected 0.5 (1/2), got 0.25 (1/4)'
    """
    if type(got) is not list or len(got) != len(want):
        return f"{what}: expected a list of {len(want)} rows, got {_came(got)}"
    for i, (got_row, want_row) in enumerate(zip(got, want)):
        if type(got_row) is not list or len(got_row) != len(want_row):
            return (f"{what} row {i + 1}: expected a list of {len(want_row)} numbers, "
                    f"got {_came(got_row)}")
        problem = _entries_problem(got_row, want_row, lambda j: f"{what} row {i + 1}, column {j}",
                                   blocked and blocked[i], blocked_value)
        if problem:
            return problem
    return None


def row_mismatch(got, want, blocked=None):
    """mismatch for one row (masked_softmax's answer): a blocked entry must be exactly 0.0."""
    if type(got) is not list or len(got) != len(want):
        return f"expected a list of {len(want)} numbers, got {_came(got)}"
    return _entries_problem(got, want, lambda j: f"entry {j}", blocked, 0.0)


def _like(got, matrix):
    """got has matrix's shape and lies within LIKENESS of it, −∞ where it is −∞."""
    return (type(got) is list and len(got) == len(matrix) and all(
        type(g_row) is list and len(g_row) == len(m_row) and all(
            _is_number(g) and (g == m if math.isinf(m) else abs(g - m) <= LIKENESS)
            for g, m in zip(g_row, m_row))
        for g_row, m_row in zip(got, matrix)))


def diagnose(got, want, mistakes):
    """The mistake, of (mistake, make) pairs, whose matrix make() differs from want and got
    matches; when several do, each of them, numbered: this head cannot tell them apart. None when
    none does. A make that raises does not apply to this head."""
    found = []
    for mistake, make in mistakes:
        try:
            matrix = make()
        except (ValueError, TypeError, ArithmeticError):
            continue
        if not _like(want, matrix) and _like(got, matrix) and mistake not in found:
            found.append(mistake)
    if len(found) > 1:
        return (f"one of {len(found)} mistakes that give these numbers on this head: "
                + "; ".join(f"({n}) {mistake}" for n, mistake in enumerate(found, 1)))
    return found[0] if found else None


HINT = "; this looks like: "


def _hinted(problem, mistake):
    return f"{problem}{HINT}{mistake}" if problem and mistake else problem


# ---- the mistakes learners make, each made with the folder's own matmul and softmax ------------

def _scales(q, k, v):
    """(mistake, divisor) for each scale a learner divides Q·Kᵀ by instead of √d."""
    T, S, d, d_v, d_model = len(q), len(k), len(q[0]), len(v[0]), len(lab06.X[0])
    keys = "the number of keys" + (" (and of queries)" if T == S else "")
    scales = [
        (f"the scores are not scaled: divide Q·Kᵀ by √d = √{d}, the width of Q and K", 1.0),
        (f"the scores are multiplied by √d = √{d}, not divided by it", 1 / math.sqrt(d)),
        (f"the scores are divided by d = {d}, not by √d", d),
        (f"the scores are divided by √{S}, {keys}, not by √d = √{d}, the width of Q and K",
         math.sqrt(S))]
    if T != S:
        scales.append((f"the scores are divided by √{T}, the number of queries, not by √d = "
                       f"√{d}, the width of Q and K", math.sqrt(T)))
    return scales + [
        (f"the scores are divided by √{d_v}, the width of V, not by √d = √{d}, the width of Q "
         f"and K", math.sqrt(d_v)),
        (f"the scores are divided by √{d_model}, the width of the lab's X or a number written "
         f"in, not by √d = √{d}, the width of this head's Q and K", math.sqrt(d_model)),
    ]


def score_mistakes(q, k, v):
    """(mistake, make) for the scores before the mask, of q (T, d), k (S, d) and v (S, d_v)."""
    product = matmul(q, transpose(k))
    return [(mistake, lambda by=by: [[s / by for s in row] for row in product])
            for mistake, by in _scales(q, k, v)] + [
        ("the scores are transposed: row i holds query i's scores, Q·Kᵀ and not K·Qᵀ",
         lambda: transpose(attend(q, k, k, lab06.everything_allowed(q, k))["scores"]))]


ZERO_FILL = "blocked scores are set to 0.0 instead of −∞: exp(0) = 1 still gives them weight"
FINITE_FILL = ("a blocked score stood in for by a finite number (such as −1e9), which wins once "
               "the allowed scores are lower still (right near −1e8, wrong near −1e10): use −∞")
HIGH_FILL = ("blocked scores are set to 0.0, or to a finite number such as −10000, instead of −∞: "
             "it wins over allowed scores lower than itself (wrong near −1e8 and near −1e10)")


def masked_score_mistakes(scores, allowed):
    """(mistake, make) for the masked scores, from the right scores before the mask."""
    def masked(keep, blocked_value=-math.inf):
        return [[s if keep(i, j) else blocked_value for j, s in enumerate(row)]
                for i, row in enumerate(scores)]
    square = len(scores) == len(scores[0])
    return [
        (ZERO_FILL,
         lambda: masked(lambda i, j: allowed[i][j], 0.0)),
        ("the mask's polarity is inverted: allowed[i][j] True means query i MAY read source j",
         lambda: masked(lambda i, j: not allowed[i][j])),
        ("the mask is read as allowed[j][i]: the row is the query, the column the source",
         lambda: masked(lambda i, j: square and allowed[j][i])),
        ("the mask is not applied: a blocked score must be −∞", lambda: scores),
        ("the masked scores were shifted in place: masked_softmax subtracted the row's largest "
         "score from the list it was given, attention's own; work on a copy",
         lambda: [[s - max(t for t, ok in zip(row, oks) if ok) if ok else -math.inf
                   for s, ok in zip(row, oks)] for row, oks in zip(scores, allowed)]),
    ]


def finite_stand_in(got, want, allowed):
    """The mistake when got is want with every blocked score one finite number, else None."""
    if type(got) is not list or len(got) != len(want) or any(
            type(row) is not list or len(row) != len(want_row)
            for row, want_row in zip(got, want)):
        return None                       # mismatch has said what came instead
    blocked = [g for got_row, ok_row in zip(got, allowed) for g, ok in zip(got_row, ok_row)
               if not ok]
    if not blocked or not all(_is_number(g) and math.isfinite(g) for g in blocked):
        return None
    if len(set(blocked)) != 1 or blocked[0] == 0.0:
        return None

    def allowed_only(matrix):
        return [[x for x, ok in zip(row, ok_row) if ok] for row, ok_row in zip(matrix, allowed)]

    if _like(allowed_only(got), allowed_only(want)):
        return (f"a blocked score stood in for by a finite number ({_num(blocked[0])}) "
                f"instead of −∞: it gets weight once the allowed scores are lower still")
    return None


def weight_mistakes(q, k, v, allowed):
    """(mistake, make) for the weights of a head."""
    d = len(q[0])

    def weights(q=q, allowed=allowed, blocked_score=-math.inf):
        return attend(q, k, v, allowed, blocked_score)["weights"]

    def scaled(factor):
        return [[x * factor for x in row] for row in q]

    return [
        ("the mask is applied after the softmax and the rows are not renormalised (they sum to "
         "less than 1): softmax over the allowed sources only",
         lambda: lab06.buggy_post_softmax(q, k, v, allowed)[0]),
        ("the mask is not applied: a blocked source must get weight 0.0",
         lambda: weights(allowed=lab06.everything_allowed(q, k))),
        ("the softmax is taken over each column (over the destinations); take it over each row, "
         "over the sources one query may read",
         lambda: lab06.softmax_over_destinations(q, k, v, allowed)[0]),
        (ZERO_FILL,
         lambda: weights(blocked_score=0.0)),
        ("a blocked score stood in for by a finite number (such as −1e9), which wins once the "
         "allowed scores are lower still: use −∞", lambda: weights(blocked_score=-1e9)),
        ("the mask's polarity is inverted: allowed[i][j] True means query i MAY read source j",
         lambda: weights(allowed=[[not ok for ok in row] for row in allowed])),
        ("the mask is read as allowed[j][i]: the row is the query, the column the source",
         lambda: weights(allowed=transpose(allowed))),
        ("the mask given is ignored for a causal mask of its own: use allowed as it comes",
         lambda: weights(allowed=causal_mask(len(q)))),
        (f"the scale is applied after the softmax: divide the scores by √{d} before it, not the "
         f"weights", lambda: [[w / math.sqrt(d) for w in row] for row in weights(scaled(d ** .5))]),
    ] + [(f"the softmax is not taken of the scores returned: {mistake}",   # they passed first
          lambda by=by: weights(scaled(math.sqrt(d) / by))) for mistake, by in _scales(q, k, v)]


def output_mistakes(weights, k, v):
    """(mistake, make) for the output, from the right weights."""
    return [("the mixture takes A's columns: z_i = Σ_j a_ij·v_j is A·V, not Aᵀ·V",
             lambda: matmul(transpose(weights), v)),
            ("the weights mix K, not V", lambda: matmul(weights, k))]


def softmax_row_mistakes(scores, allowed):
    """(mistake, make) for masked_softmax's answer on one row, each made a matrix of one row."""
    unmasked = masked_softmax(scores, [True] * len(scores))
    return [("a softmax over every source with the blocked ones zeroed after it: the row is not "
             "renormalised", lambda: [[w if ok else 0.0 for w, ok in zip(unmasked, allowed)]]),
            ("the blocked sources keep their weight: take the softmax over the allowed ones only",
             lambda: [unmasked]),
            (ZERO_FILL, lambda: [masked_softmax(
                [s if ok else 0.0 for s, ok in zip(scores, allowed)], [True] * len(scores))])]


# ---- the checks ----------------------------------------------------------------------------------

ARGUMENTS = {"matmul": ("left", "right"), "masked_softmax": ("scores", "allowed"),
             "attention": ("Q", "K", "V", "allowed")}
SOFTMAX_PROBE = ([0.0, math.log(2), math.log(2)], [True, True, False])   # check 7's row


def _edit_problem(function, reply):
    """What a call changed of its caller's arguments, in a few words, or None: said before any of
    its numbers, which an edit may be the cause of."""
    names = ARGUMENTS[function]
    edited = [names[n] for n in reply.edited if type(n) is int and 0 <= n < len(names)]
    return (f"{function} edited its inputs in place ({', '.join(edited)} changed): work on "
            f"copies" if edited else None)


def _softmax_edits(learner):
    """The hint when masked_softmax edits the row it is given: attention's own rows change too."""
    reply = learner.call("masked_softmax", *SOFTMAX_PROBE)
    if _edit_problem("masked_softmax", reply):
        return ("masked_softmax edits the scores it is given (masked_softmax(scores, allowed) "
                "changed scores): the rows attention hands it change with it; work on a copy")
    return None


def _product(learner, left, right, want):
    reply = learner.call("matmul", left, right)
    return reply.failure or _edit_problem("matmul", reply) or mismatch(reply.value, want,
                                                                        "the product")


def _dict_problem(value):
    if value == "<NoneType>":
        return "attention returned None: does it end with return {...}?"
    if type(value) is not dict:
        return (f"attention must return a dict with scores, masked_scores, weights and output, "
                f"got {_came(value)}")
    missing = [key for key in ("scores", "masked_scores", "weights", "output") if key not in value]
    return (f"attention's dict has no {', '.join(missing)} (it has "
            f"{', '.join(value) or 'nothing'})" if missing else None)


def _part(learner, args, part, want, mistakes=(), blocked=None, blocked_value=None,
          when_raised=None):
    """One part of attention's answer on args against want: None, or what is wrong, with the
    mistake it looks like. mistakes: (mistake, make) pairs, or a function of the answer giving
    the mistake; when_raised: the hint for an exception, given the reply."""
    reply = learner.call("attention", *args)
    if reply.failure:
        return _hinted(reply.failure, when_raised and when_raised(reply))
    problem = _edit_problem("attention", reply) or _dict_problem(reply.value)
    if problem:
        return problem
    got = reply.value[part]
    problem = mismatch(got, want, part, blocked, blocked_value)
    if problem:
        mistake = (mistakes(got) if callable(mistakes) else diagnose(got, want, mistakes)) \
            or _softmax_edits(learner)
        return _hinted(problem, mistake)
    return None


def _row(learner, scores, allowed, want, when_wrong=None):
    """masked_softmax(scores, allowed) against want; when_wrong(reply): the mistake an exception
    or a wrong row points to."""
    reply = learner.call("masked_softmax", scores, allowed)
    problem = reply.failure or _edit_problem("masked_softmax", reply) or row_mismatch(
        reply.value, want, [not ok for ok in allowed])
    if problem and not reply.failure:
        mistake = diagnose([reply.value], [want], softmax_row_mistakes(scores, allowed))
        return _hinted(problem, mistake or (when_wrong and when_wrong(reply)))
    return _hinted(problem, when_wrong and when_wrong(reply))


def _rejects(learner, function, args, what, type_error_too=False):
    """None when function(*args) raises ValueError (or a subclass; TypeError too where the value is
    of the wrong kind), else what happened. args may be a list of (label, argument tuple),
    witnesses of one kind of bad input ("a ragged K"): each must be refused, and the message names
    the first that is not."""
    for label, one in args if isinstance(args, list) else [(None, args)]:
        reply = learner.call(function, *one)
        if reply.kind == "ValueError" or (type_error_too and reply.kind == "TypeError"):
            continue
        case = what + (f" ({label})" if label else "")
        if reply.failure is None:
            return f"expected ValueError for {case}, but it returned {_came(reply.value)}"
        if reply.kind in (None, "NotImplementedError", "BaseException"):
            return reply.failure
        return f"expected ValueError for {case}, but {reply.failure}"
    return None


def _edited(reply, names):
    if reply.failure:
        return reply.failure
    edited = [names[n] for n in reply.edited if isinstance(n, int) and 0 <= n < len(names)]
    return (f"the inputs were edited in place ({', '.join(edited)} changed): work on copies"
            if edited else None)


def _on_the_lab_head(reply):
    """The hint when attention raises on the lab's own head, which is valid."""
    if reply.kind == "ValueError":
        T, d = len(lab06.X), len(lab06.WQ[0])
        return (f"the lab's head is valid input: is a check wrong, K not transposed (Q·Kᵀ: Q is "
                f"({T}, {d}) and Kᵀ ({d}, {T}); Q·K does not fit), or the mask's polarity "
                f"inverted (allowed[i][j] True means query i MAY read source j)?")
    if reply.error == "ZeroDivisionError":
        return ("a row's sum of exponentials is 0: does the mask block every source of a row "
                "(its polarity inverted?), or exp underflow for every allowed score?")
    return None


def _refused_shape(shape, v_width):
    def hint(reply):
        return (f"this head is valid: the mask is (number of queries, number of sources) = "
                f"{shape} and need not be square, A is {shape} and Z = A·V is "
                f"{shape}·({shape.split(', ')[1][:-1]}, {v_width}); does a check or a product "
                f"assume a square head?"
                if reply.kind not in ("NotImplementedError", "BaseException") else None)
    return hint


def _exp_trouble(reply):
    """What the exponentials did, as the error or the answer shows it, in a few words; or None."""
    if reply.error == "OverflowError" or _not_finite(reply.value) == "∞":
        return "an exp overflowed"
    if reply.error == "ZeroDivisionError":
        return "every exp underflowed to 0, and their sum with them"
    if _not_finite(reply.value) == "NaN":
        return "a NaN came out"
    return None


def _no_shift(reply):
    trouble = _exp_trouble(reply)
    return trouble and (f"no shift, or not by the largest allowed score: {trouble}; subtract "
                        f"the largest allowed score before exp")


def _shift_not_largest(reply):
    trouble = _exp_trouble(reply)
    return trouble and (f"the shift is not the largest allowed score: {trouble}; subtract the "
                        f"largest, 1000 here, so that no exp is above 1")


def _shift_over_blocked(reply):
    trouble = _exp_trouble(reply)
    if trouble and "overflow" in trouble:
        return _shift_not_largest(reply)
    if trouble or reply.failure is None:
        return ("the shift is the largest of every score, blocked ones too"
                + (f": {trouble}" if trouble else "") + "; subtract the largest allowed score")
    return None


def _large_scores(reply):
    trouble = _exp_trouble(reply)
    return trouble and (f"no shift by the largest allowed score: {trouble} (exp(1000.7) alone "
                        f"overflows)")


def _not_finite(value):
    """"∞" or "NaN" for the first +∞ or NaN in an answer (what an overflow or a 0/0 leaves
    behind), else None."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        found = _not_finite(item)
        if found:
            return found
    if isinstance(value, float) and (math.isnan(value) or value == math.inf):
        return "NaN" if math.isnan(value) else "∞"
    return None


# Probe heads: (q, k, v, allowed), each a mistake's witness.
WIDE = ([[1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]],
        [[1.0, 0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0, 0.0],
         [0.0, 0.0, 1.0, 1.0, 1.0]],
        [[float(i)] * 6 for i in range(1, 5)],        # √5, √4 keys, √3 queries, √6 of V, √2 of X
        [[True] * 4] * 3)
NON_SQUARE = ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
              [[2.0, 0.0, 1.0], [0.0, 4.0, 1.0], [1.0, 1.0, 3.0]],   # values 3 wide, Q and K 2
              [[True, True, False], [True, True, True]])
TALL = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
RECTANGLE = [[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]]
MIXED_MASK = [[True, False, True], [False, True, True], [True, True, False]]
FUTURE_ABOVE = ([[1.0], [1.0]], [[0.0], [1000.0]], [[1.0], [2.0]], [[True, False], [True, True]])
NEAR_MINUS_1E10 = ([[-1e5], [-1e5]], [[1e5], [1e5]], [[1.0], [2.0]],
                   [[True, False], [True, True]])


NEAR_MINUS_1E8 = ([[-1e4], [-1e4]], [[1e4], [1e4]], [[1.0], [2.0]],
                  [[True, False], [True, True]])


def _fill_probe(learner):
    """The weights near −1e10. A blocked score set to 0.0 and one set to a finite fill such as
    −1e9 give the same wrong weights here; scores near −1e8, where the fill still loses, tell
    them apart."""
    want = _want(NEAR_MINUS_1E10)

    def mistake(got):
        if not _like(got, attend(*NEAR_MINUS_1E10, blocked_score=0.0)["weights"]):
            return diagnose(got, want["weights"], weight_mistakes(*NEAR_MINUS_1E10))
        near_1e8 = _want(NEAR_MINUS_1E8)
        wrong_there_too = _part(learner, NEAR_MINUS_1E8, "weights", near_1e8["weights"], (),
                                near_1e8["blocked"], 0.0)
        return HIGH_FILL if wrong_there_too else FINITE_FILL

    return _part(learner, NEAR_MINUS_1E10, "weights", want["weights"], mistake, want["blocked"],
                 0.0)


def _want(head_args):
    """What ours gives on (q, k, v, allowed): scores before the mask, masked_scores, weights,
    output, and where the mask blocks."""
    return {**attention(*head_args), "blocked": [[not ok for ok in row] for row in head_args[3]]}


def _all_parts(learner, args, when_raised=None):
    """scores, masked_scores, weights and output on args, in that order: the first that differs."""
    want = _want(args)
    q, k, v, allowed = args
    return (_part(learner, args, "scores", want["scores"], score_mistakes(q, k, v),
                  when_raised=when_raised)
            or _part(learner, args, "masked_scores", want["masked_scores"],
                     lambda got: finite_stand_in(got, want["masked_scores"], allowed) or diagnose(
                         got, want["masked_scores"],
                         masked_score_mistakes(want["scores"], allowed)),
                     want["blocked"], -math.inf)
            or _part(learner, args, "weights", want["weights"], weight_mistakes(q, k, v, allowed),
                     want["blocked"], 0.0)
            or _part(learner, args, "output", want["output"],
                     output_mistakes(want["weights"], k, v)))


def drawn(seed):
    """What one grading draws afresh from seed, so that no file can know its inputs ahead: a
    product, a row for masked_softmax and two heads of shapes of their own, every number a
    multiple of 1/2 (of 1/4 for the row) and every row of a mask with a source allowed. The
    second head is larger than any other the grader asks about (9 to 12 queries, 7 to 12 sources,
    6 to 8 wide) and its numbers reach ±12, so that a file right only on small heads or small
    numbers fails it."""
    rng = random.Random(seed)

    def matrix(rows, columns, top=4):
        return [[rng.randint(-top, top) / 2 for _ in range(columns)] for _ in range(rows)]

    def mask(rows, columns):
        allowed = [[rng.random() < 0.6 for _ in range(columns)] for _ in range(rows)]
        for row in allowed:
            row[rng.randrange(columns)] = True
        return allowed

    n, m, p = (rng.randint(1, 4) for _ in range(3))
    width = rng.randint(2, 5)
    row = ([rng.randint(-8, 8) / 4 for _ in range(width)], mask(1, width)[0])
    heads = []
    for sizes, top in ((((1, 4), (2, 5), (1, 4), (1, 4)), 4),
                       (((9, 12), (7, 12), (6, 8), (2, 8)), 24)):
        T, S, d, d_v = (rng.randint(*size) for size in sizes)
        heads.append((matrix(T, d, top), matrix(S, d, top), matrix(S, d_v, top), mask(T, S)))
    return {"product": (matrix(n, m), matrix(m, p)), "row": row, "heads": heads}


def _afresh(problem, what, seed):
    """problem, said of a case drawn afresh, with the seed that draws it again."""
    return problem and (f"on {what} drawn afresh with seed {seed} (--seed {seed} draws it "
                        f"again): {problem}")


def _shape_of(head):
    q, k, v, _ = head
    return (f"a head of {len(q)} quer{'y' if len(q) == 1 else 'ies'} and {len(k)} sources, "
            f"Q and K {len(q[0])} wide, V {len(v[0])} wide")


def _drawn_heads(learner, heads, seed):
    """Every intermediate of each head drawn afresh: the first problem, or None."""
    for head in heads:
        problem = _all_parts(learner, head)
        if problem:
            return _afresh(problem, _shape_of(head), seed)
    return None


def lab_checks(seed=0):
    """[(name, check)] for the lab's own head, in the order of the computation; check(learner)
    is None when the learner's file passes, else what is wrong and what it looks like. Three
    checks also take cases drawn afresh from seed (drawn): the names do not depend on it."""
    q, k, v, allowed = lab = lab06.projected()
    fresh = drawn(seed)
    fresh_row = (*fresh["row"], masked_softmax(*fresh["row"]))
    want = _want(lab)
    blocked = want["blocked"]
    ln2 = math.log(2)

    def baseline(part, mistakes, blocked_value=None):
        return lambda learner: _part(learner, lab, part, want[part], mistakes,
                                     blocked_value is not None and blocked or None,
                                     blocked_value, _on_the_lab_head)

    def intervention(change):
        after = lab06.run(lab06.HEAD, [change])
        args = (after["q"], after["k"], after["v"], after["allowed"])
        return lambda learner: _all_parts(learner, args)

    def rejects(what, args, type_error_too=False):
        return (f"attention rejects {what}",
                lambda learner: _rejects(learner, "attention", args, what, type_error_too))

    def edited(name, at, value):
        """(Q, K, V, allowed) of the lab with one entry of Q, K or V replaced by value."""
        matrices = [[list(row) for row in m] for m in (q, k, v)]
        matrices["QKV".index(name)][at[0]][at[1]] = value
        return (*matrices, allowed)

    def not_finite(name):
        """Witnesses of a non-finite entry in each row of Q, K or V, NaN, ∞ and −∞ in turn: a
        check of one row alone, or of one kind, lets the others through."""
        rows = {"Q": q, "K": k, "V": v}[name]
        bad = (math.nan, math.inf, -math.inf)
        return rejects(f"a {dict(Q='query', K='key', V='value')[name]} that is not finite",
                       [(f"{_num(bad[i % 3])} in {name} row {i + 1}",
                         edited(name, (i, i % len(row)), bad[i % 3]))
                        for i, row in enumerate(rows)])

    def ragged(matrix):
        return [list(row) for row in matrix[:1]] + [list(matrix[1][:1])] + \
            [list(row) for row in matrix[2:]]

    checks = [
        ("matmul: Q = X·WQ", lambda learner: _product(learner, lab06.X, lab06.WQ, q)),
        ("matmul: K = X·WK", lambda learner: _product(learner, lab06.X, lab06.WK, k)),
        ("matmul: V = X·WV", lambda learner: _product(learner, lab06.X, lab06.WV, v)),
        ("matmul: a (2, 3)·(3, 2) product, then one drawn afresh", lambda learner: _product(
            learner, RECTANGLE, TALL, matmul(RECTANGLE, TALL)) or _afresh(_product(
                learner, *fresh["product"], matmul(*fresh["product"])), "a product", seed)),
        ("baseline scores = Q·Kᵀ/√2, before the mask",
         baseline("scores", score_mistakes(q, k, v))),
        ("baseline masked_scores: −∞ where blocked",
         baseline("masked_scores", lambda got: finite_stand_in(got, want["masked_scores"],
                                                               allowed) or diagnose(
             got, want["masked_scores"], masked_score_mistakes(want["scores"], allowed)),
                  -math.inf)),
        ("masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row "
         "drawn afresh",
         lambda learner: _row(learner, *SOFTMAX_PROBE, [1 / 3, 2 / 3, 0.0])
         or _afresh(_row(learner, *fresh_row), "a row", seed)),
        ("masked_softmax: [−1000, −1000 + ln 2] -> [1/3, 2/3], which needs a shift",
         lambda learner: _row(learner, [-1000.0, -1000.0 + ln2], [True, True],
                              masked_softmax([-1000.0, -1000.0 + ln2], [True, True]), _no_shift)),
        ("masked_softmax: [0, 1000] -> [0, 1], which needs the largest allowed score as the shift",
         lambda learner: _row(learner, [0.0, 1000.0], [True, True], [0.0, 1.0],
                              _shift_not_largest)),
        ("masked_softmax: [0, ln 2, 1000] with the last blocked -> [1/3, 2/3, 0]",
         lambda learner: _row(learner, [0.0, ln2, 1000.0], [True, True, False],
                              [1 / 3, 2 / 3, 0.0], _shift_over_blocked)),
        ("baseline weights: rows sum to 1, exactly 0.0 where blocked",
         baseline("weights", weight_mistakes(q, k, v, allowed), 0.0)),
        ("weights with allowed = [[T, F, T], [F, T, T], [T, T, F]]",
         lambda learner: _part(learner, (q, k, v, MIXED_MASK), "weights",
                               attend(q, k, v, MIXED_MASK)["weights"],
                               weight_mistakes(q, k, v, MIXED_MASK),
                               [[not ok for ok in row] for row in MIXED_MASK], 0.0)),
        ("weights when a blocked (future) score is 1000 above the allowed one",
         lambda learner: _part(learner, FUTURE_ABOVE, "weights", _want(FUTURE_ABOVE)["weights"],
                               weight_mistakes(*FUTURE_ABOVE), _want(FUTURE_ABOVE)["blocked"],
                               0.0, _shift_over_blocked)),
        ("weights when every score is near −1e10: a blocked source still gets none",
         _fill_probe),
        ("baseline output = weights·V",
         baseline("output", output_mistakes(want["weights"], k, v))),
        ("scores of a head of 3 queries and 4 keys of width 5: Q·Kᵀ/√5",
         lambda learner: _part(learner, WIDE, "scores", _want(WIDE)["scores"],
                               score_mistakes(*WIDE[:3]),
                               when_raised=_refused_shape("(3, 4)", 6))),
        ("a head of 2 queries and 3 sources, then two heads drawn afresh: scores, "
         "masked_scores, weights and output",
         lambda learner: _all_parts(learner, NON_SQUARE, _refused_shape("(2, 3)", 3))
         or _drawn_heads(learner, fresh["heads"], seed)),
    ]
    checks += [(f"{lab06.TITLES[key]}, every intermediate", intervention(change))
               for key, change in lab06.INTERVENTIONS.items()]
    checks += [
        ("matmul rejects (1, 3)·(2, 1)", lambda learner: _rejects(
            learner, "matmul", ([[1.0, 2.0, 3.0]], [[1.0], [2.0]]), "inner sizes that differ")),
        ("matmul rejects a ragged matrix", lambda learner: _rejects(
            learner, "matmul", ([[1.0, 2.0], [3.0]], [[1.0], [2.0]]), "a ragged matrix")),
        ("masked_softmax rejects a row with nothing allowed, an empty one too",
         lambda learner: _rejects(
             learner, "masked_softmax", [("both sources blocked", ([1.0, 2.0], [False, False])),
                                         ("no source at all: masked_softmax([], [])", ([], []))],
             "a row with nothing allowed (no fallback is invented)")),
        ("masked_softmax rejects a mask of another length", lambda learner: _rejects(
            learner, "masked_softmax", [("3 scores, 1 mask entry", ([1.0, 2.0, 3.0], [True])),
                                        ("1 score, 2 mask entries", ([1.0], [True, False]))],
            "scores and a mask of different lengths")),
        rejects("a ragged matrix", [("a ragged Q", (ragged(q), k, v, allowed)),
                                    ("a ragged K", (q, ragged(k), v, allowed)),
                                    ("a ragged V", (q, k, ragged(v), allowed))]),
        rejects("an empty matrix", [("no queries", ([], k, v, [])),
                                    ("rows of width 0", ([[]] * 3, [[]] * 3, v, allowed))]),
        rejects("query and key widths that differ", (q, [[1.0, 0.0, 0.0]] * 3, v, allowed)),
        rejects("key and value counts that differ", (q, k, v[:2], allowed)),
        rejects("a mask of the wrong size", [
            ("2 rows for 3 queries", (q, k, v, [[True, False], [True, True]])),
            ("a row of 2 for 3 sources", (q, k, v, [[True, False, False], [True, True],
                                                    [True, True, True]])),
            ("4 rows for 3 queries", (q, k, v, [[True, False, False], [True, True, False],
                                                [True, True, True], [True, True, True]])),
            ("a row of 4 for 3 sources", (q, k, v, [[True, False, False, False],
                                                    [True, True, False], [True, True, True]]))]),
        rejects("a mask entry that is not a bool", (q, k, v, [[True, False, False],
                                                             [1, True, False],
                                                             [True, True, True]]), True),
        rejects("a row with every source blocked", (q, k, v, [[True, False, False], [False] * 3,
                                                             [True, True, True]])),
        not_finite("Q"),
        not_finite("K"),
        not_finite("V"),
        rejects("scores that overflow to infinity", ([[1e200, 1e200]] * 3, [[1e200, 1e200]] * 3,
                                                     v, allowed)),
        ("masked_softmax leaves scores and allowed as they were", lambda learner: _edited(
            learner.call("masked_softmax", [0.0, ln2, ln2], [True, True, False]),
            ("scores", "allowed"))),
        ("attention leaves Q, K, V and allowed as they were", lambda learner: _edited(
            learner.call("attention", *lab), ("Q", "K", "V", "allowed"))),
        ("the baseline comes out the same when run again", lambda learner: _again(learner, lab)),
        ("optional: adding [1, −2] to every value shifts each output by [1, −2]",
         intervention(lab06.shift_values(lab06.VALUE_SHIFT))),
        ("optional: adding 1000 to every score keeps the weights [1/4, 1/4, 1/2]",
         lambda learner: _row(learner, [s + lab06.SCORE_OFFSET for s in want["scores"][2]],
                              [True] * 3, want["weights"][2], _large_scores)),
    ]
    return checks


def _again(learner, args):
    first, again = learner.call("attention", *args), learner.call("attention", *args, fresh=True)
    if first.failure or again.failure:
        return first.failure or again.failure
    return None if again.value == first.value else ("a second run gave other numbers: does the "
                                                    "function keep state between calls?")


def experiment_checks(head, changes=()):
    """[(name, check)] for a head of your own and an intervention made of changes (of Q, K, V and
    the mask): the projections, then every intermediate of the baseline and after the changes."""
    q, k, v, _ = lab06.projected(head)
    checks = [(f"matmul: {name} = X·W{name}", lambda learner, w=head[f"W{name}"], want=want:
               _product(learner, head["X"], w, want))
              for name, want in (("Q", q), ("K", k), ("V", v)) if name != "V" or "V" not in head]
    runs = [("baseline", lab06.run(head))]
    if changes:
        runs.append((f"after {'; '.join(c.description for c in changes)}",
                     lab06.run(head, changes)))
    d = len(q[0])
    for label, run in runs:
        args = (run["q"], run["k"], run["v"], run["allowed"])
        want = _want(args)
        checks += [
            (f"{label}: scores = Q·Kᵀ/√{d}, before the mask", lambda learner, a=args, w=want:
             _part(learner, a, "scores", w["scores"], score_mistakes(*a[:3]))),
            (f"{label}: masked_scores, −∞ where blocked", lambda learner, a=args, w=want: _part(
                learner, a, "masked_scores", w["masked_scores"],
                lambda got: finite_stand_in(got, w["masked_scores"], a[3]) or diagnose(
                    got, w["masked_scores"], masked_score_mistakes(w["scores"], a[3])),
                w["blocked"], -math.inf)),
            (f"{label}: weights, exactly 0.0 where blocked", lambda learner, a=args, w=want:
             _part(learner, a, "weights", w["weights"], weight_mistakes(*a), w["blocked"], 0.0)),
            (f"{label}: output = weights·V", lambda learner, a=args, w=want: _part(
                learner, a, "output", w["output"], output_mistakes(w["weights"], a[1], a[2]))),
        ]
    return checks


def grade(path, head=None, changes=(), call_limit=None, total_limit=None, seed=None):
    """The report, a line a check (wrapped at LINE_WIDTH) and a last line that counts them, and
    whether every check passed. With a head or changes, that head's checks; else the lab's, with
    the cases drawn afresh from seed (a new one by default, named in the report when a check
    fails). Limits in seconds (CALL_LIMIT and TOTAL_LIMIT by default). Raises ValueError when path
    is not a file to grade, or its name would shadow a module."""
    if os.path.isdir(path):
        raise ValueError(f"cannot grade {path}: it is a folder, expected a Python file")
    if not os.path.lexists(path):
        raise ValueError(f"cannot grade {path}: no such file (write one with --scaffold {path})")
    if not os.path.isfile(path):
        raise ValueError(f"cannot grade {path}: it is not a regular file, expected a Python file")
    refuse_a_shadowing_name(path, "grade")
    with open(path, "rb") as f:       # here, so that an unreadable file is one line, not a FAIL
        if len(f.read(MAX_FILE + 1)) > MAX_FILE:
            raise ValueError(f"cannot grade {path}: it is larger than {MAX_FILE >> 20} MB")
    own_head = head is not None or changes
    seed = random.SystemRandom().randrange(1, 10 ** 6) if seed is None else seed
    checks = experiment_checks(head or lab06.HEAD, changes) if own_head else lab_checks(seed)
    name = os.path.basename(path)
    lines, passed, stopped, current, hints = [], 0, None, f"importing {name}", set()
    process = LearnerProcess(path, call_limit or CALL_LIMIT, total_limit or TOTAL_LIMIT)
    try:
        learner = Learner(process, name)
        failure = learner.load()
        if failure:
            lines.append(f"FAIL  {current}: {failure}")
            stopped = "the file could not be imported, so no check ran"
        for check_name, check in checks if not failure else ():
            current = check_name
            try:
                problem = check(learner)
            except RecursionError:      # an answer nested almost as deep as JSON allows
                problem = "the answer is nested too deeply to be a matrix"
            if problem is not None:     # each hint once, at its first FAIL
                problem, _, hint = problem.partition(HINT)
                if hint:
                    problem += "; the mistake named above" if hint in hints else HINT + hint
                    hints.add(hint)
            lines.append(f"PASS  {check_name}" if problem is None
                         else f"FAIL  {check_name}: {problem}")
            passed += problem is None
    except Stopped as stop:
        left = len(checks) - len(lines) - (current != f"importing {name}")
        lines.append(f"FAIL  {current}: {stop}")
        stopped = f"the learner's process was stopped, so the last {left} did not run"
    finally:
        process.stop()
    if process.warden_stopped:
        lines.append("FAIL  the grading: the file stopped its warden, the process that ends what "
                     "it starts, and the grader killed what was left: leave the grader's "
                     "processes alone")
        stopped = stopped or "the file stopped its warden, so none counts"
    if process.mode != "subreaper":
        lines.append("note: this system has no prctl(PR_SET_CHILD_SUBREAPER): a process the file "
                     "started in a session of its own may outlive the grading")
    summary = f"{passed} of {len(checks)} checks pass"
    verdict = passed == len(checks) and not process.warden_stopped
    if not verdict:
        summary += f"; {stopped}" if stopped else ""
        summary += ": fix the first FAIL and grade again"
        summary += "" if own_head else f" (--seed {seed} draws the same cases again)"
    report = [printable(line) for line in lines] + [summary]
    return [part for line in report for part in wrapped(line)], verdict


def printable(line):
    r"""line with every character a terminal would act on (a newline, a carriage return, an escape
    sequence's ESC, a lone surrogate) written as its escape: a message from the learner's code
    cannot move the cursor, paint a PASS over its FAIL or break the output's encoding.

    >>> printable("FAIL  x: \x1b[1A\rPASS")
    'FAIL  x: \\x1b[1A\\rPASS'
    """
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in line)

"""Lab 06's grader, the learner's process: the learner's file run by runner.py in a process of its
own, below a warden (runner.py --warden) that kills it and all it started once the grading ends,
however it ends (Linux: a child subreaper; elsewhere the process group alone, and mode says so).
Learner(process, name).call(function, *args) asks one call at a time and gives a Reply; Stopped
comes when the file runs out of time (CALL_LIMIT a call, TOTAL_LIMIT in all), ends, stops its
warden (warden_stopped) or does what its answers may not (project_inodes: open one of the
project's files, start another program). What it leaves out: any verdict, and a sandbox.
"""

import collections
import contextlib
import json
import marshal
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from common import safe_io
from lab06 import runner

CALL_LIMIT = 2.0      # seconds one call of the learner's code may take; importing it is a call
TOTAL_LIMIT = 20.0    # seconds the whole grading may take
START_LIMIT = 5.0     # seconds for Python to start, before any of the learner's code runs
MAX_ANSWER = 2 ** 20  # bytes of one answer: the largest asked for (a 64-position head's four
                      # matrices) is about 400 kB, and a larger one is no answer but a burden
RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "runner.py")


class Stopped(Exception):
    """The learner's process can answer no more; the message says why, in a few words."""


class LearnerProcess:
    """The learner's process of the module docstring, asked one call at a time; answers are the
    runner's dicts. Once it raises Stopped (also for an answer out of turn), all is killed."""

    def __init__(self, path, call_limit, total_limit):
        self.call_limit, self.total_limit = call_limit, total_limit
        self.deadline = time.monotonic() + total_limit
        self.count, self.stopped, self.runner, self.mode = 0, False, None, None
        self.warden_stopped, self.watched = False, project_inodes(path)
        self.answers, self.requests, self.reports = queue.Queue(), queue.Queue(), queue.Queue()
        # a subreaper: were the warden stopped, what the file started would be orphaned here
        runner.prctl(runner.PR_SET_CHILD_SUBREAPER, 1)
        # the null device on each of 0, 1 and 2 that is closed (`2>&-`): else a pipe takes that
        # number, and the warden, pointing 0, 1 and 2 at the null device, cuts the channel
        for fd in (0, 1, 2):
            try:
                os.fstat(fd)
            except OSError:
                os.open(os.devnull, os.O_RDWR)      # the lowest free number: fd itself
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
            for fd in (requests_out, answers_in, self.control):
                os.close(fd)
            raise OSError(f"cannot start Python to run {path}: {e.strerror or e}") from None
        finally:
            for fd in (control_in, requests_in, answers_out):      # the warden's ends
                os.close(fd)
        self.answer_stream = os.fdopen(answers_in, "rb")
        self.request_stream = os.fdopen(requests_out, "wb")
        for target in (self._read, self._write, self._hear_the_warden):
            threading.Thread(target=target, daemon=True).start()
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
        """Each answer line as it comes; one without its newline ends them (or is too long)."""
        with self.answer_stream as stream:
            line = b"\n"
            while line.endswith(b"\n"):
                line = stream.readline(MAX_ANSWER + 1)
                self.answers.put(line)

    def _write(self):
        """Each request, in its own thread: a process that stops reading cannot block the grader.
        An OSError is the process gone: the next answer says how."""
        with contextlib.suppress(OSError), self.request_stream as stream:
            for request in iter(self.requests.get, None):
                stream.write(request)
                stream.flush()

    def ask(self, call, *args):
        """The runner's answer to call(*args): "import", which carries what the runner watches
        from then on (project_inodes), or one of the learner's functions."""
        self.count += 1
        args = self.watched if call == "import" else args
        request = marshal.dumps({"id": self.count, "call": call, "args": list(args)})
        self.requests.put(len(request).to_bytes(4, "big") + request)
        try:
            return self._next("the import" if call == "import" else call, self.call_limit)
        except Stopped:
            self.stop()
            raise

    def _next(self, what, limit):
        left = self.deadline - time.monotonic()
        try:
            line = self.answers.get(timeout=max(0.0, min(limit, left)))
        except queue.Empty:
            if left <= limit:
                raise Stopped(f"the grading was stopped after {self.total_limit:g} s in all, "
                              f"during {what}") from None
            raise Stopped(f"{what} was stopped after {limit:g} s: does a loop never end?") from None
        if len(line) > MAX_ANSWER:
            raise Stopped(f"{what} answered with more than {MAX_ANSWER >> 20} MB")
        if not line.endswith(b"\n"):
            raise Stopped(self._ended(what, self._exit_code()))
        try:
            answer = json.loads(line)
        except (ValueError, RecursionError):
            answer = None
        if isinstance(answer, dict) and "not_own" in answer:
            raise Stopped(_not_own(answer["not_own"]))
        if not isinstance(answer, dict) or answer.get("id") != self.count:
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
        runner and its forks have (none may start another program), for START_LIMIT s at most."""
        with contextlib.suppress(OSError, AttributeError):
            os.killpg(self.runner, signal.SIGKILL)
        killed, deadline = set(), time.monotonic() + START_LIMIT
        while time.monotonic() < deadline:
            found = [pid for pid in runner.descendants(os.getpid())
                     if _command_line(pid) == self.command]
            for pid in found:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            killed.update(found)
            for pid in list(killed):
                with contextlib.suppress(ChildProcessError):  # not yet ours: its parent is dying
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        killed.discard(pid)
            if not found and not killed:
                return
            time.sleep(0.002)


def _command_line(pid):
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read()
    return None             # it has ended


def project_inodes(path):
    """(files, folders), what the runner keeps the learner's file at path from opening: the
    (device, inode) of each of the project's files (safe_io.project_files) and of each folder
    holding one, but the runner and path; and of each folder the project makes for itself
    (__pycache__, .git, all they hold), whose every file is its own. The inodes, not the paths:
    a link or /proc/self/fd leads to the same."""
    def inode(name):
        with contextlib.suppress(OSError):
            found = os.stat(name)
            return found.st_dev, found.st_ino
        return None

    root = safe_io.HERE
    names = [os.path.join(root, name) for name in safe_io.project_files()]
    holders = {root} | {os.path.dirname(name) for name in names}
    made = [os.path.join(folder, "__pycache__") for folder in holders]
    made = [folder for top in made + [os.path.join(root, ".git")] for folder, _, _ in os.walk(top)]
    files = {inode(name) for name in names + sorted(holders)} - {inode(RUNNER), inode(path)}
    return frozenset(files - {None}), frozenset({inode(folder) for folder in made} - {None})


def _text(value):
    return str(value)[:300] if isinstance(value, (str, int)) and not isinstance(value, bool) else ""


NOT_OWN = {"opened": "it opened {}, one of the project's own files and folders",
           "opened a folder": "it opened the folder {}, from which a path reaches files unseen",
           "made": "it made {} in one of the project's folders, where a later run would read it",
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
    """The learner's functions, called in its process. Each answer is kept, under (function, its
    arguments as JSON), so the checks of one run share it."""

    def __init__(self, process, name):
        self.process, self.name, self.kept = process, name, {}

    def load(self):
        """None when the file imports, else what went wrong."""
        return self._reply("it", self.process.ask("import")).failure

    def call(self, function, *args, fresh=False):
        key = (function, json.dumps(args))
        if fresh or key not in self.kept:
            self.kept[key] = self._reply(function, self.process.ask(function, *args))
        return self.kept[key]

    def _reply(self, function, answer):
        if "value" in answer:
            edited = answer.get("edited") if isinstance(answer.get("edited"), list) else []
            return Reply(answer["value"], None, None, None, edited)
        if answer.get("missing") is True:
            return Reply(None, f"{self.name} has no function {function}", None, None, [])
        raised = answer.get("raised")
        if not isinstance(raised, dict):
            raise Stopped(f"during {function}, the learner's process answered what the grader "
                          f"did not ask for")
        error, kind, message, line, file = (_text(raised.get(key)) for key in
                                            ("type", "kind", "message", "line", "file"))
        where = f" (line {line})" if line else ""
        if kind == "NotImplementedError":
            failure = f"not implemented yet: {function}"
        elif error == "SystemExit":
            failure = (f"{function} called sys.exit({message}){where}: " + (
                "importing a file must define its functions, not end the program"
                if function == "it" else "a function must return or raise, not end the program"))
        elif kind == "SyntaxError":
            failure = f"syntax error{' in ' + file if file else ''}{where}: {message}"
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

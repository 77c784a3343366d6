"""The learner's side of Lab 06's grader: a learner's tiny_attention.py, imported in a process of
its own and called one request at a time. It has no expected value and makes no verdict.

    python3 -I -S runner.py --warden REQUESTS ANSWERS tiny_attention.py    started by process.py
    python3 -I -S runner.py tiny_attention.py                              by hand, to try it

The warden stands between the grader and the learner's process, and holds no learner code: it
forks the runner on the two descriptors it was passed, reports the runner's pid and, when it ends,
its exit status on standard output, and once its standard input ends (the grader closed it, or the
grader's process ended in any way: its normal end, Ctrl-C, SIGTERM, SIGHUP, even SIGKILL) or a
signal asks it to stop, it kills every descendant and exits. On Linux it is a child subreaper
(prctl PR_SET_CHILD_SUBREAPER): a process the learner's code starts stays below it whatever it does,
a new session (setsid) or process group (setpgid) or a parent that exits, so the warden finds it in
/proc and kills it. Without prctl it kills the runner's process group, and says so ("group").

Requests come on standard input, each a 4-byte length and a marshal of {"id": n, "call": "import"}
or {"id": n, "call": name, "args": [...]}: marshal is quick to load and safe only from a trusted
sender, which the grader is. Each is answered with one JSON line on standard output, which the
grader reads from an untrusted process:
{"id": n, "value": ..., "edited": [numbers of the arguments the call changed]}, or
{"id": n, "raised": {"type", "kind", "message", "line", "file"}}, or {"id": n, "missing": true}.

The answers must be the file's own: the "import" request carries the (device, inode) pairs of the
project's files and folders (process.py's project_inodes), and watch() ends the process at the
first thing the file's code may not do. A value travels as plain() keeps it, so that the grader
can name what came.

Before the learner's code runs, the two channels move to descriptors of their own and 0, 1 and 2
point at the null device, so what the code prints or reads never mixes with the answers; every
builtin the runner uses is bound here, and JSON is written with the C string encoder, so that
patching builtins or json does not change an answer. Address space is limited to MEMORY_LIMIT.
What it leaves out: time limits (the grader keeps them, from its own process), killing (the
warden's) and any sandbox: the code runs with the user's rights, and may patch this module (it is
__main__) or call C through ctypes; a course runs untrusted submissions in a container.
"""

import marshal
import os
import select
import sys
import time
import types
from builtins import (BaseException, Exception, NotImplementedError, SyntaxError, TypeError,
                      ValueError, abs, all, bool, callable, compile, dict, enumerate, exec, float,
                      getattr, int, isinstance, len, list, next, open, str, type)

import _signal as signal    # signal's own C module (signal.py needs it too), its names without
                            # signal's enums: those were most of what a warden imports

MEMORY_LIMIT = 2 ** 30    # bytes of address space: a runaway list ends in MemoryError
DEPTH = 4                 # a value nested deeper than any answer asked for is not sent whole
MAX_ITEMS = 2 ** 16       # rows and numbers read of one answer: a 64-position head's four
                          # matrices hold 16,640, and reading millions would outlast a call
KINDS = (NotImplementedError, ValueError, TypeError, SyntaxError, Exception)
try:
    from _json import encode_basestring_ascii as QUOTE    # C code, whatever is patched later
except ImportError:                                      # a Python without the C accelerator
    from json.encoder import py_encode_basestring_ascii as QUOTE
FLOAT_TEXT = types.MappingProxyType({"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"})


def plain(value):
    """value with every list, string-keyed dict, int and float kept, anything else a "<...>"; a
    list longer than the entries left to read of MAX_ITEMS is "<list of N>", unread.

    >>> plain({"w": [[0.5, True], (1, 2)]})
    {'w': [[0.5, '<bool True>'], '<tuple>']}
    >>> plain([[0.0, 0.0]] * 2_000_000)
    '<list of 2000000>'
    """
    left = [MAX_ITEMS]        # shared by every level: the whole answer reads at most MAX_ITEMS

    def kept(value, depth):
        kind = type(value)
        if kind is float or (kind is int and abs(value) < 2 ** 1023):
            return value
        if depth < DEPTH and kind is list:
            if len(value) > left[0]:
                return f"<list of {len(value)}>"
            left[0] -= len(value)
            return [kept(item, depth + 1) for item in value]
        if depth < DEPTH and kind is dict and len(value) <= left[0] and all(
                type(key) is str for key in value):
            left[0] -= len(value)
            return {key: kept(item, depth + 1) for key, item in value.items()}
        return f"<{_describe(value)}>"

    return kept(value, 0)


def _describe(value):
    """The type of a value that is not plain, and its number when it has one."""
    name = type(value).__name__
    name = name if type(name) is str else "object"
    if isinstance(value, bool):
        return f"{name} {'True' if value else 'False'}"
    if isinstance(value, float):
        return f"{name} {float.__repr__(value)}"
    if isinstance(value, int):
        return f"{name} {int.__repr__(value)}" if -10 ** 30 < value < 10 ** 30 else f"{name}, huge"
    return name


def to_json(value):
    """JSON text of what plain() returns, and of the runner's own messages (None, bools, strings).

    >>> to_json({"id": 1, "value": [0.5, float("-inf"), "<tuple>"], "missing": True})
    '{"id": 1, "value": [0.5, -Infinity, "<tuple>"], "missing": true}'
    """
    kind = type(value)
    if kind is float:
        text = float.__repr__(value)
        return FLOAT_TEXT.get(text, text)
    if kind is int:
        return int.__repr__(value)
    if kind is str:
        return QUOTE(value)
    if kind is list:
        return "[" + ", ".join([to_json(item) for item in value]) + "]"
    if kind is dict:
        return "{" + ", ".join([QUOTE(key) + ": " + to_json(item)
                                for key, item in value.items()]) + "}"
    return {True: "true", False: "false", None: "null"}[value]


def raised(error, path):
    """What an exception says, for the grader: its type, the first of KINDS it is, its message
    and the last line of the learner's file it passed through; for a syntax error in another file
    the learner's code imports, that file's name and line."""
    kind = next((k.__name__ for k in KINDS if isinstance(error, k)), "BaseException")
    try:
        message = (error.msg if isinstance(error, SyntaxError) else str(error))
        message = message[:300] if type(message) is str else ""
    except BaseException:         # a message that cannot be shown is not the grader's problem
        message = "(its message cannot be shown)"
    line = error.lineno if isinstance(error, SyntaxError) else None
    elsewhere = isinstance(error, SyntaxError) and error.filename != path
    trace = error.__traceback__
    while trace is not None and not elsewhere:
        if trace.tb_frame.f_code.co_filename == path:
            line = trace.tb_lineno
        trace = trace.tb_next
    name = type(error).__name__
    return {"type": name if type(name) is str else "?", "kind": kind, "message": message,
            "line": line if type(line) is int else None,
            "file": os.path.basename(error.filename)
            if elsewhere and type(error.filename) is str else None}


def load(path):
    """The learner's module, its __main__ part not run. Raises what importing it raises."""
    stem = os.path.splitext(os.path.basename(path))[0]
    name = "learner_" + (stem if stem.isidentifier() else "file")
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))      # as `python3 tiny_attention.py` would
    exec(code, module.__dict__)
    return module


def call(module, name, args):
    """The answer to one call of the learner's function. Raises what the function raises."""
    function = getattr(module, name, None)
    if not callable(function):
        return {"missing": True}
    before = [_bytes_of(arg) for arg in args]
    value = function(*args)
    return {"value": plain(value), "edited": [n for n, arg in enumerate(args)
                                              if _bytes_of(arg) != before[n]]}


def reply_to(module, request, path):
    """(module, reply): the learner's module after the request (loaded by an "import") and the
    answer to it, what raised included."""
    try:
        if request["call"] == "import":
            return load(path), {"value": None, "edited": []}
        return module, call(module, request["call"], request["args"])
    except BaseException as error:      # SystemExit and KeyboardInterrupt are answers here too
        return module, {"raised": raised(error, path)}


def _bytes_of(value, dumps=marshal.dumps):
    """value as marshal's version 2 writes it, every number to its last bit (later versions mark
    an object that something else refers to, which a call may change without an edit), or None
    where marshal cannot: the call put into its argument an object of a class of its own, a
    subclass of float or list, or a list that holds itself."""
    try:
        return dumps(value, 2)
    except BaseException:
        return None


# ---- the watch: the answers must be the file's own ---------------------------------------------

STARTS = frozenset({"os.exec", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen"})
REWRITES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
MAKES = frozenset({"os.mkdir", "os.rename", "os.link", "os.symlink"})    # each makes a path
IMPORTABLE = (".py", ".pyc", ".pth", ".so")     # a file made that a later run could import


def watch(answers, files=frozenset(), folders=frozenset()):
    """From now on, end this process at the first thing the learner's code may not do, and say
    what on descriptor answers, {"not_own": [what it did, to what]}: open a file or folder whose
    (device, inode) is among files, or a file in one of folders, whichever path leads there (a
    link, /proc/self/fd, a folder changed into) or any other folder (a path from it, dir_fd, goes
    unseen); make a path (MAKES), or a file Python could import, in a folder among files or
    folders; start another program, whose reading no hook here would see; or rewrite one of this
    module's functions, the hook among them. An audit hook
    (sys.addaudithook), which no Python code can remove; it looks up no name when it runs, so that
    patching os, builtins or this module changes nothing it does."""

    def hook(event, args, files=frozenset(files), folders=frozenset(folders), answers=answers,
             stat=os.stat, write=os.write, end=os._exit, kind=type, text=str, raw=bytes,
             number=int, getattr=getattr, quote=QUOTE, errors=(OSError, ValueError, TypeError),
             starts=STARTS, rewrites=REWRITES, makes=MAKES, importable=IMPORTABLE,
             places=frozenset(files) | frozenset(folders), home=globals()):
        did, new = None, None
        if event == "open" and kind(args[0]) in (text, raw, number):
            path = args[0].decode("utf-8", "surrogateescape") if kind(args[0]) is raw else args[0]
            try:
                found = stat(path)
                folder = found.st_mode & 0o170000 == 0o040000
                mine = (found.st_dev, found.st_ino) in files
                if not mine and kind(path) is text:
                    head, slash, _ = path.rpartition("/")
                    found = stat(head or slash or ".")        # the folder that holds it
                    mine = (found.st_dev, found.st_ino) in folders
            except errors:
                folder, mine, new = False, False, path     # nothing there yet: a file it makes
            shown = path if kind(path) is text else f"descriptor {path}"
            did = mine and ["opened", shown] or folder and ["opened a folder", shown]
        elif event in makes:
            new = args[0 if event == "os.mkdir" else 1]       # the path made
        if kind(new) in (text, raw):
            new = new.decode("utf-8", "surrogateescape") if kind(new) is raw else new
            head, slash, _ = new.rpartition("/")
            try:
                found = stat(head or slash or ".")            # the folder it would be made in
                did = (event in makes or new.endswith(importable)) and (
                    found.st_dev, found.st_ino) in places and ["made", new]
            except errors:
                pass
        elif event in starts:
            did = ["started", event]
        elif event == "object.__setattr__" and args[1] in rewrites and \
                getattr(args[0], "__globals__", None) is home:       # read-only, unlike __module__
            did = ["rewrote", args[1]]
        if did:
            try:
                write(answers, ('{"not_own": [' + quote(did[0]) + ", " + quote(did[1])
                                + "]}\n").encode("utf-8"))
            finally:
                end(1)

    sys.addaudithook(hook)


# ---- the warden: no learner code runs here ------------------------------------------------------

PR_SET_CHILD_SUBREAPER = 36


def prctl(option, value):
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (ImportError, OSError, AttributeError):
        return False


def descendants(root):
    """Every process below root, found through /proc's parent links; [] where there is no /proc."""
    children = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue                      # it ended while we looked
        children.setdefault(parent, []).append(int(name))
    found = [root]
    for pid in found:           # the list grows as it is read: each child's children follow
        found += children.get(pid, [])
    return found[1:]


STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT")   # the warden's, each a request to stop


class _Stop(Exception):
    """A signal asked the warden to stop."""


def _stop(signum, frame):
    raise _Stop()


def warden(requests, answers, path):
    """Start the runner on the descriptors requests and answers, report "runner PID MODE" (MODE
    "subreaper" or "group") and "exit CODE", and stop as the module docstring says."""
    subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1)
    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), _stop)
    runner = None
    try:
        runner = os.fork()               # a fork, not a second Python: it starts at once
        if runner == 0:                   # the child: the runner, in a session of its own
            try:
                os.setsid()
                for name in ("SIGTERM", "SIGHUP", "SIGQUIT"):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.dup2(requests, 0)
                os.dup2(answers, 1)
                os.closerange(3, 65536)
                # the warden read the standard library's bytecode; what the learner's code
                # imports is read from its source, as -X pycache_prefix=/dev/null would
                sys.pycache_prefix = os.devnull
                serve(path)
            finally:
                os._exit(127)
        os.close(requests)
        os.close(answers)
        report = os.fdopen(1, "w", buffering=1)
        report.write(f"runner {runner} {'subreaper' if subreaper else 'group'}\n")
        running = True
        while True:
            if select.select([0], [], [], 0.02)[0] and not os.read(0, 64):
                break                     # the grader is done, or gone
            if running:
                pid, status = os.waitpid(runner, os.WNOHANG)
                if pid:
                    running = False
                    report.write(f"exit {os.waitstatus_to_exitcode(status)}\n")
    except (_Stop, OSError):
        pass
    finally:
        for name in STOP_SIGNALS:
            signal.signal(getattr(signal, name), signal.SIG_IGN)
        if runner:
            _kill_all(runner, subreaper)


def _kill_all(runner, subreaper):
    """Kill every descendant, and reap each, until none is left (or 5 s have passed)."""
    try:
        os.killpg(runner, signal.SIGKILL)
    except OSError:
        pass
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            if subreaper or not descendants(os.getpid()):
                return                    # a subreaper with no child has no descendant left
        time.sleep(0.002)


def main():
    if sys.argv[1:2] == ["--warden"]:
        warden(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
        os._exit(0)
    serve(sys.argv[1])


def serve(path):
    """Answer the requests on descriptor 0 on descriptor 1, one at a time, then end the process."""
    path = os.path.abspath(path)
    requests, answers = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    try:
        import resource
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):     # not on this system: the time limit still holds
        pass

    def answer(message):
        answers.write(to_json(message).encode("utf-8") + b"\n")
        answers.flush()

    answer({"id": 0, "started": True})
    module = None
    while size := int.from_bytes(requests.read(4), "big"):
        request = marshal.loads(requests.read(size))
        if request["call"] == "import":
            watch(answers.fileno(), *request["args"])
        module, reply = reply_to(module, request, path)
        answer({"id": request["id"], **reply})
    os._exit(0)        # neither the learner's atexit hooks nor its threads hold the process


if __name__ == "__main__":
    main()

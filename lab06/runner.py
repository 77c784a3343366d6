"""The learner's side of Lab 06's grader: a learner's tiny_attention.py, imported in a process of
its own and called one request at a time. It has no expected value and makes no verdict.

    python3 -I -S grade_lab06_runner.py tiny_attention.py     started by grade_lab06.py, not by hand

Requests come on standard input, each a 4-byte length and a marshal of {"id": n, "call": "import"}
or {"id": n, "call": name, "args": [...]}: marshal is quick to load and safe only from a trusted
sender, which the grader is. Each is answered with one JSON line on standard output, which the
grader reads from an untrusted process:
{"id": n, "value": ..., "edited": [numbers of the arguments the call changed]}, or
{"id": n, "raised": {"type", "kind", "message", "line"}}, or {"id": n, "missing": true}.

A value travels as it is where it is plain: a list stays a list, a dict with string keys a dict,
an int or a float (the types themselves) a number. Anything else, a bool, a tuple, a float
subclass, None, becomes a string "<type ...>", so that the grader can name what came.

Before the learner's code runs, the two channels move to descriptors of their own and 0, 1 and 2
point at the null device, so what the code prints or reads never mixes with the answers; every
builtin the runner uses is bound here, its own functions are called through a private copy of its
names, and JSON is written with the C string encoder, so that patching builtins, json or
__main__ does not change an answer. Address space is limited to
MEMORY_LIMIT. What it leaves out: time limits and killing (the grader does both, from its own
process) and any sandbox (the code runs with the user's rights, and could rewrite this process).
"""

import marshal
import os
import sys
import types
from builtins import (BaseException, Exception, NotImplementedError, SyntaxError, TypeError,
                      ValueError, abs, all, bool, callable, compile, dict, enumerate, exec, float,
                      getattr, int, isinstance, len, list, next, open, str, type)

MEMORY_LIMIT = 2 ** 30    # bytes of address space: a runaway list ends in MemoryError
DEPTH = 4                 # a value nested deeper than any answer asked for is not sent whole
KINDS = (NotImplementedError, ValueError, TypeError, SyntaxError, Exception)
try:
    from _json import encode_basestring_ascii as QUOTE    # C code, whatever is patched later
except ImportError:                                      # a Python without the C accelerator
    from json.encoder import py_encode_basestring_ascii as QUOTE
FLOAT_TEXT = types.MappingProxyType({"inf": "Infinity", "-inf": "-Infinity", "nan": "NaN"})


def plain(value, depth=0):
    """value with every list, string-keyed dict, int and float kept, anything else a "<...>".

    >>> plain({"w": [[0.5, True], (1, 2)]})
    {'w': [[0.5, '<bool True>'], '<tuple>']}
    """
    kind = type(value)
    if kind is float or (kind is int and abs(value) < 2 ** 1023):
        return value
    if depth < DEPTH and kind is list:
        return [plain(item, depth + 1) for item in value]
    if depth < DEPTH and kind is dict and all(type(key) is str for key in value):
        return {key: plain(item, depth + 1) for key, item in value.items()}
    return f"<{_describe(value)}>"


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
    and the last line of the learner's file it passed through."""
    kind = next((k.__name__ for k in KINDS if isinstance(error, k)), "BaseException")
    try:
        message = (error.msg if isinstance(error, SyntaxError) else str(error))
        message = message[:300] if type(message) is str else ""
    except BaseException:         # a message that cannot be shown is not the grader's problem
        message = "(its message cannot be shown)"
    line = error.lineno if isinstance(error, SyntaxError) else None
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == path:
            line = trace.tb_lineno
        trace = trace.tb_next
    name = type(error).__name__
    return {"type": name if type(name) is str else "?", "kind": kind, "message": message,
            "line": line if type(line) is int else None}


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


def call(module, name, args, path):
    """The answer to one call of the learner's function."""
    try:
        function = getattr(module, name, None)
        if not callable(function):
            return {"missing": True}
        before = [_text_of(arg) for arg in args]
        value = function(*args)
        return {"value": plain(value), "edited": [n for n, arg in enumerate(args)
                                                  if _text_of(arg) != before[n]]}
    except BaseException as error:      # SystemExit and KeyboardInterrupt are answers here too
        return {"raised": raised(error, path)}


def reply_to(module, request, path):
    """(module, reply): the learner's module after the request (loaded by an "import") and the
    answer to it, what raised included."""
    if request["call"] != "import":
        return module, call(module, request["call"], request["args"], path)
    try:
        return load(path), {"value": None, "edited": []}
    except BaseException as error:      # SystemExit and KeyboardInterrupt are answers here too
        return module, {"raised": raised(error, path)}


def _text_of(value):
    try:
        return to_json(plain(value))
    except BaseException:               # the call put into its argument what plain() lacks
        return None


def _limit_memory():
    try:
        import resource
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):     # not on this system: the time limit still holds
        pass


def _private_names():
    """This module's names, each of its functions rebuilt to look its names up here rather than in
    __main__: code that rebinds __main__.plain or __main__.to_json changes nothing the runner
    calls. (Code that goes looking for these functions' own globals still could: no sandbox.)"""
    names = dict(globals())
    for name, value in list(names.items()):
        if type(value) is types.FunctionType and value.__globals__ is globals():
            names[name] = types.FunctionType(value.__code__, names, name, value.__defaults__,
                                             value.__closure__)
    return names


def main():
    own = _private_names()
    reply_to, to_json = own["reply_to"], own["to_json"]
    path = os.path.abspath(sys.argv[1])
    requests, answers = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(quiet, fd)
    _limit_memory()

    def answer(message):
        answers.write(to_json(message).encode("utf-8") + b"\n")
        answers.flush()

    answer({"id": 0, "started": True})
    module = None
    while True:
        size = int.from_bytes(requests.read(4), "big")
        if not size:
            break
        request = marshal.loads(requests.read(size))
        module, reply = reply_to(module, request, path)
        answer({"id": request["id"], **reply})
    os._exit(0)        # neither the learner's atexit hooks nor its threads hold the process


if __name__ == "__main__":
    main()

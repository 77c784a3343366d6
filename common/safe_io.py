"""Reading and writing files so that nothing is lost: size-limited reads (read_text, read_json),
atomic writes (write_atomic) and outputs that replace none of the project's files nor another
input or output (check_output_path).

Every file the project reads goes through read_text, and every JSON file through read_json;
every recorded file, saved tokenizer, SVG and benchmark record through write_atomic. A write that
was killed (SIGKILL, a power cut) leaves its temporary file, named after its target and its
process: the next write to that target removes it.
"""

import contextlib
import functools
import hashlib
import json
import os
import signal
import stat
import tempfile

from common.checks import NotANumber, int_of

MAX_RECORDED_BYTES = 8 * 2 ** 20   # far more than any recorded file; a larger one is refused
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the project folder
PROJECT_FILES = os.path.join("common", "project-files.txt")    # from HERE; a download has no git


def read_text(path, limit=MAX_RECORDED_BYTES, as_it_is=False):
    """The UTF-8 text of a file, read whole only when it is at most limit bytes, without the
    byte-order mark some editors put first (U+FEFF is no character of the text), and each "\r\n"
    read as "\n" (git on Windows writes "\r\n": the text is the same) unless as_it_is (text to
    train a tokenizer on). Raises TypeError for a path that is not a file name, ValueError naming
    the file when it is larger or not UTF-8, and OSError when it cannot be read."""
    _check_path(path)
    name = os.path.basename(path) or path
    if os.path.exists(path) and stat.S_ISFIFO(os.stat(path).st_mode):
        raise ValueError(f"{name} is a pipe: expected a file (a pipe with no writer never ends)")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {limit // 2 ** 20} MB: expected a smaller file")
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name} is not UTF-8 text: byte {e.start} is "
                         f"{data[e.start]:#04x}") from None
    return text if as_it_is else text.replace("\r\n", "\n")


def read_json(path, what, expected="a JSON object", parse_float=float, then="", text=None):
    """The JSON object in the file at path (or in text, already read): integers of at most 309
    digits (int_of), no deep nesting, decimals as parse_float reads them (float_of refuses 1e400;
    float leaves NaN and inf to the caller's checks). what names what the file should be, expected
    what it must hold, then what to do about one that is not ("run --write"). Raises ValueError
    naming the file for read_text's reasons, bad JSON, such a number, nesting or no object."""
    try:
        text = read_text(path) if text is None else text
        name = os.path.basename(path) or path
        try:
            data = json.loads(text, parse_float=parse_float, parse_int=int_of)
        except RecursionError:
            raise ValueError(f"{name} is nested too deeply to be {what}") from None
        except NotANumber as e:
            raise ValueError(f"{name}: {e}") from None
        except ValueError as e:
            raise ValueError(f"{name} is not valid JSON: {e}") from None
        if type(data) is not dict:
            raise ValueError(f"{name} must hold {expected}, got {type(data).__name__}")
    except ValueError as e:
        raise ValueError(f"{e}: {then}" if then else str(e)) from None
    return data


def _check_path(path, what=""):
    """Raise TypeError unless path is a file name, a str or an os.PathLike (pathlib.Path), and
    ValueError when it is empty or holds a NUL, which no file name can."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"a file name must be a str, got {type(path).__name__} {path!r:.60}")
    if not os.fspath(path):
        raise ValueError(f"the {what}path is empty: expected a file name")
    if "\0" in os.fspath(path):
        raise ValueError(f"a file name cannot hold a NUL character, got {os.fspath(path)!r:.60}")


def project_files(root=None):
    """The project's own files, as paths relative to root (the project folder): the list that
    travels with the project, PROJECT_FILES, which `python3 -m common.shipped --write` writes
    from `git ls-files`. Everything else in the folder is the learner's. Raises ValueError when
    the list is missing, for then nothing says which files are the project's."""
    try:
        return _listed(read_text(os.path.join(root or HERE, PROJECT_FILES)))
    except FileNotFoundError:
        raise ValueError(f"{PROJECT_FILES} is missing: it lists the project's own files; "
                         f"download the folder again") from None


@functools.lru_cache(maxsize=None)
def _listed(text):
    """The paths of a list of files, one a line, each in this system's spelling."""
    return frozenset(os.path.normpath(line) for line in text.splitlines() if line)


def check_output_path(path, own=None, others=()):
    """Refuse an empty output path, a folder, the folder's git history, any of the project's
    own files (project_files) but own: the view (a path from the project folder, such as
    "attention-weights.svg") that the command asking writes itself, and any of others: (name,
    path) pairs of the other files the command reads or writes (None for one it does not), which
    an output must not replace. A view is no golden file, and one view is not another."""
    _check_path(path, "output ")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder: expected a file name")
    target = os.path.relpath(os.path.realpath(path), os.path.realpath(HERE))
    if target.split(os.sep)[0] == ".git" or (target != own and target in project_files()):
        raise ValueError(f"{path} is one of this folder's own files: write yours somewhere else")
    for name, other in others:
        if other is not None and _same_file(path, other):
            raise ValueError(f"{path} is also {name}: an output must not replace an input or "
                             f"another output; write it somewhere else")


def _same_file(a, b):
    """True when paths a and b name one regular file (or would: a file not yet written). Two
    writes to one device or pipe (/dev/stdout twice) replace nothing."""
    if any(os.path.exists(path) and not os.path.isfile(path) for path in (a, b)):
        return False
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)           # hard links too
    return os.path.realpath(a) == os.path.realpath(b)


def write_atomic(path, text):
    """Write text (a str, or bytes for a picture) to path whole or not at all: through a
    temporary file beside the target, renamed into place. A symlink's target is replaced and the
    link kept; a target that exists and is not a regular file (a device, a FIFO, /dev/stdout) is
    written to directly. The temporary file is removed on any error and on SIGTERM, SIGHUP or
    Ctrl-C. A read-only file is not replaced. Raises OSError, naming path, when it cannot write."""
    _check_path(path)
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a folder")
    if os.path.isfile(path) and not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP
                                                             | stat.S_IWOTH):
        raise OSError(f"cannot write {path}: the file is read-only")
    if os.path.exists(path) and not os.path.isfile(path):
        try:
            with _open_for(path, text) as f:
                f.write(text)
        except OSError as e:        # /dev/full: "No space left on device", and which
            raise OSError(f"cannot write {path}: {e.strerror or e}") from None
        return
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    _remove_stale(folder, _temporary_key(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{_temporary_key(target)}{os.getpid()}-", dir=folder)
    except OSError as e:
        raise OSError(f"cannot write {path}: {e.strerror}") from None
    try:
        with _raising_on_signals():
            os.chmod(tmp, _readable_mode(target))  # mkstemp makes the file private
            with _open_for(fd, text) as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
    except BaseException as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OSError(f"cannot write {path}: {e.strerror or e}") from None
        raise


def _temporary_key(target):
    """The start of every temporary file's name for target: ".tmp-", target's name (its first 60
    characters, and a digest of the whole, so that a long name still fits), then the process id.

    >>> _temporary_key("/tmp/trace.json")
    '.tmp-trace.json-c02eb2db-'
    """
    name = os.path.basename(target)
    return f".tmp-{name[:60]}-{hashlib.sha256(os.fsencode(name)).hexdigest()[:8]}-"


def _remove_stale(folder, key):
    """Remove the temporary files for one target that a write killed before its cleanup left: those
    whose process no longer runs. A write under way in another process keeps its file."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name[len(key):].partition("-")[0]
        if name.startswith(key) and pid.isascii() and pid.isdigit() and not _running(int(pid)):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _running(pid):
    """True when a process of that id runs (or may: one of another user's)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True
    except (ProcessLookupError, OverflowError):
        return False
    return True


def _open_for(file, text):
    """A file (a path or a descriptor) opened to write text: as UTF-8 text, or as bytes."""
    binary = isinstance(text, bytes)
    return open(file, "wb") if binary else open(file, "w", encoding="utf-8", newline="\n")


STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def stopping():
    """The signals of STOPPING that stop a program now: not those it was started ignoring (nohup
    ignores SIGHUP, so that a closed terminal leaves it running)."""
    return [number for number in STOPPING if signal.getsignal(number) is not signal.SIG_IGN]


@contextlib.contextmanager
def _raising_on_signals():
    """While a write is under way, SIGTERM and SIGHUP (a closed terminal) raise SystemExit, so the
    cleanup above runs, unless ignored (nohup); Ctrl-C raises KeyboardInterrupt, caught too."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = [(number, signal.signal(number, stop)) for number in stopping()]
    except ValueError:        # not the main thread: signals cannot be caught here
        previous = []
    try:
        yield
    finally:
        for number, handler in previous:
            signal.signal(number, handler)


def _readable_mode(path):
    """The permissions a written file gets: the old file's, or what the umask gives a new file."""
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask

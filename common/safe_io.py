"""Reading and writing files so that nothing is lost: size-limited reads and atomic writes.

    read_text(path)                   a UTF-8 file of at most 8 MB, or a ValueError naming it
    write_atomic(path, text)          a temporary file beside the target, renamed into place, so an
                                      interrupted write leaves the old file as it was
    check_output_path(path, own)      refuse an empty path and the project's own files (but the
                                      view own, which the command asking writes itself)
    project_files()                   the project's files: `git ls-files`, or the tree

Every recorded file, saved tokenizer, SVG and benchmark record goes through write_atomic.
"""

import contextlib
import functools
import os
import signal
import stat
import subprocess
import tempfile

MAX_RECORDED_BYTES = 8 * 2 ** 20   # far more than any recorded file; a larger one is refused
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the project folder


def project_files(root=None):
    """The project's own files, as paths relative to root (the project folder): what `git ls-files`
    lists in a checkout, else every file under root (a download without its history). The tree
    is the list: nothing here is typed by hand."""
    root = root or HERE
    tracked = _tracked(root) if os.path.isdir(os.path.join(root, ".git")) else None
    if tracked is not None:
        return set(tracked)
    found = set()
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in (".git", "__pycache__")]
        found.update(os.path.relpath(os.path.join(folder, name), root) for name in names
                     if not name.startswith(".tmp-"))
    return found


def read_text(path, limit=MAX_RECORDED_BYTES):
    """The UTF-8 text of a file, read whole only when it is at most limit bytes. Raises ValueError
    naming the file when it is larger or not UTF-8, and OSError when it cannot be read."""
    name = os.path.basename(path) or path
    if os.path.exists(path) and stat.S_ISFIFO(os.stat(path).st_mode):
        raise ValueError(f"{name} is a pipe: expected a file (a pipe with no writer never ends)")
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {limit // 2 ** 20} MB: expected a smaller file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name} is not UTF-8 text: byte {e.start} is "
                         f"{data[e.start]:#04x}") from None


@functools.lru_cache(maxsize=None)
def _tracked(root):
    """What `git ls-files` lists in root, once a process, or None when git cannot say."""
    try:
        done = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return frozenset(os.path.normpath(name) for name in os.fsdecode(done.stdout).split("\0")
                     if name)


def check_output_path(path, own=None):
    """Refuse an empty output path, a folder, the folder's git history, and any of the project's
    own files (project_files) but own: the view (a path from the project folder, such as
    "attention-weights.svg") that the command asking writes itself. A view is no golden file, and
    one view is not another."""
    if not path:
        raise ValueError("the output path is empty: expected a file name")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a folder: expected a file name")
    target = os.path.relpath(os.path.realpath(path), os.path.realpath(HERE))
    if target.split(os.sep)[0] == ".git" or (target != own and target in project_files()):
        raise ValueError(f"{path} is one of this folder's own files: write yours somewhere "
                         f"else")


def write_atomic(path, text):
    """Write text (a str, or bytes for a picture) to path whole or not at all: through a
    temporary file beside the target, renamed into place. A symlink's target is replaced and the
    link kept; a target that exists and is not a regular file (a device, a FIFO, /dev/stdout) is
    written to directly. The temporary file is removed on any error and on SIGTERM, SIGHUP or
    Ctrl-C. A file without write permission is not replaced. Raises OSError naming path when it
    cannot be written."""
    if os.path.isdir(path):
        raise OSError(f"cannot write {path}: it is a folder")
    if os.path.isfile(path) and not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP
                                                             | stat.S_IWOTH):
        raise OSError(f"cannot write {path}: the file is read-only")
    if os.path.exists(path) and not os.path.isfile(path):
        with _open_for(path, text) as f:
            f.write(text)
        return
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise OSError(f"cannot write {path}: the folder {folder} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
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


def _open_for(file, text):
    """A file (a path or a descriptor) opened to write text: as UTF-8 text, or as bytes."""
    if isinstance(text, bytes):
        return open(file, "wb")
    return open(file, "w", encoding="utf-8", newline="\n")


_STOPPING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def _raising_on_signals():
    """While a write is under way, SIGTERM and SIGHUP (a closed terminal) raise SystemExit, so the
    cleanup above runs; Ctrl-C raises KeyboardInterrupt, which it catches too."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = [(number, signal.signal(number, stop)) for number in _STOPPING]
    except ValueError:        # not the main thread: signals cannot be caught here
        yield
        return
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

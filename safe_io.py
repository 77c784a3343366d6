"""Reading and writing files so that nothing is lost: size-limited reads and atomic writes.

    read_text(path)                   a UTF-8 file of at most 8 MB, or a ValueError naming it
    write_atomic(path, text)          a temporary file beside the target, renamed into place, so an
                                      interrupted write leaves the old file as it was
    check_output_path(path)           refuse an empty path and the folder's own recorded and source
                                      files as the target of a view

Every recorded file, saved tokenizer, SVG and benchmark record goes through write_atomic.
"""

import contextlib
import os
import signal
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_RECORDED_BYTES = 8 * 2 ** 20   # far more than any recorded file; a larger one is refused
# What no view or saved tokenizer may overwrite: the recorded files and the folder's own text.
PROTECTED = ("attention-trace.json", "perturb-trace.json", "tokenizer.json", "training-run.json",
             "kv-cache-trace.json", "README.md")


def read_text(path, limit=MAX_RECORDED_BYTES):
    """The UTF-8 text of a file, read whole only when it is at most limit bytes. Raises ValueError
    naming the file when it is larger or not UTF-8, and OSError when it cannot be read."""
    name = os.path.basename(path) or path
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{name} is larger than {limit // 2 ** 20} MB: expected a smaller file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{name} is not UTF-8 text: byte {e.start} is "
                         f"{data[e.start]:#04x}") from None


def check_output_path(path):
    """Refuse an empty output path, or one that would overwrite a recorded file or the folder's own
    source (a view is no golden file)."""
    if not path:
        raise ValueError("the output path is empty: expected a file name")
    target = os.path.realpath(path)
    if os.path.dirname(target) == os.path.realpath(HERE) and (
            os.path.basename(target) in PROTECTED or target.endswith(".py")):
        raise ValueError(f"{path} is one of this folder's recorded or source files: write the view "
                         f"somewhere else")


def write_atomic(path, text):
    """Write text to path whole or not at all: through a temporary file beside the target, renamed
    into place. A symlink's target is replaced and the link kept; a target that exists and is not a
    regular file (a device, a FIFO, /dev/stdout) is written to directly. The temporary file is
    removed on any error and on SIGTERM. Raises OSError naming path when it cannot be written."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
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
        with _raising_on_sigterm():
            os.chmod(tmp, _readable_mode(target))  # mkstemp makes the file private
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
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


@contextlib.contextmanager
def _raising_on_sigterm():
    """While a write is under way, SIGTERM raises SystemExit, so the cleanup above runs."""
    def stop(signum, frame):
        raise SystemExit(128 + signum)
    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:        # not the main thread: signals cannot be caught here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _readable_mode(path):
    """The permissions a written file gets: the old file's, or what the umask gives a new file."""
    if os.path.exists(path):
        return os.stat(path).st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask

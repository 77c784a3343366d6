"""A signal stops train_attention.py's pools of workers (--seeds N, and --layers 2 --write, which
trains three seeds two at a time): SIGTERM, SIGHUP or Ctrl-C's SIGINT ends every worker and the
command, with one line and exit status 130, and nothing is written."""

import concurrent.futures
import os
import signal
import subprocess
import tempfile
import time
import unittest

from lab06.runner import descendants
from tests.helpers import AS_FOREGROUND, HERE


def running(pid):
    """Whether pid is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stopped_by(stop, *args):
    """`train_attention.py args` stopped by the signal stop once both its workers run: (exit
    status, stderr, the workers, those still running after it ended). It waits for events; its
    bounds of 60 s stand only against a hang (a worker left running keeps a pipe open, so stderr
    goes to a file); whatever happens, nothing it started is left to train, or to write."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        process = subprocess.Popen([*AS_FOREGROUND, "train_attention.py", *args], cwd=HERE,
                                   stdout=subprocess.DEVNULL, stderr=err)
        workers = []
        try:
            bound = time.monotonic() + 60
            while len(descendants(process.pid)) < 2 and time.monotonic() < bound:
                time.sleep(0.02)
            workers = descendants(process.pid)
            process.send_signal(stop)
            process.wait(timeout=60)
            bound = time.monotonic() + 60
            while any(running(w) for w in workers) and time.monotonic() < bound:
                time.sleep(0.02)
        finally:
            left = [w for w in workers if running(w)]
            for pid in left + [process.pid] * (process.poll() is None):
                os.kill(pid, signal.SIGKILL)
        err.seek(0)
        return process.returncode, err.read(), workers, left


RECORDS = [os.path.join(HERE, "training", name)      # what --layers 2 --write would write
           for name in ("two-layer-run.json", "two-layer-model.json")]
WRITTEN = [os.stat(path).st_mtime_ns for path in RECORDS]      # before any run below starts
# started when this module is imported, each on a thread: most of it is the other process's work
STOPPED = ({(stop, args): concurrent.futures.ThreadPoolExecutor(1).submit(stopped_by, stop, *args)
            for stop, args in ((signal.SIGTERM, ("--seeds", "2", "--steps", "100000")),
                               (signal.SIGHUP, ("--seeds", "2", "--steps", "100000")),
                               (signal.SIGINT, ("--layers", "2", "--write")))}
           if os.path.isdir("/proc") and hasattr(signal, "SIGHUP") else {})


class Stopping(unittest.TestCase):

    @unittest.skipUnless(STOPPED, "needs /proc and SIGHUP")
    def test_a_signal_stops_the_workers_of_seeds_and_of_the_two_layer_record(self):
        for (stop, args), future in STOPPED.items():     # SIGTERM, SIGHUP, and Ctrl-C's SIGINT
            code, err, workers, left = future.result()
            with self.subTest(signal=stop.name, args=args):
                self.assertEqual(len(workers), 2, "the two workers never started")
                lines = err.strip().splitlines()    # after any progress a worker said
                self.assertEqual((code, lines[-1:]), (130, ["error: interrupted"]), err)
                self.assertTrue(all(line.startswith("seed ") for line in lines[:-1]), err)
                self.assertEqual(left, [], f"a worker outlived train_attention.py {args}")
        self.assertEqual([os.stat(path).st_mtime_ns for path in RECORDS], WRITTEN)


if __name__ == "__main__":
    unittest.main()

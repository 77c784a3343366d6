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
from tests.helpers import HERE, as_job


def running(pid):
    """Whether pid is a process that has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stopped_by(stop, *args, nohup=False):
    """`train_attention.py args` stopped by the signal stop once both its workers run: (exit
    status, stderr, the workers, those still running after it ended, and those of the command
    and its workers that ignore SIGHUP). nohup: started ignoring SIGHUP, as `nohup` starts it,
    it gets SIGHUP before stop, as a closed terminal sends it. It waits for events; its bounds of
    60 s stand only against a hang (a worker left running keeps a pipe open, so stderr goes to a
    file); whatever happens, nothing it started is left to train, or to write."""
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        started = as_job("SIGHUP") if nohup else as_job()
        process = subprocess.Popen([*started, "train_attention.py", *args],
                                   cwd=HERE, stdout=subprocess.DEVNULL, stderr=err)
        workers, ignoring = [], []
        try:
            bound = time.monotonic() + 60
            while len(descendants(process.pid)) < 2 and time.monotonic() < bound:
                time.sleep(0.02)
            workers = descendants(process.pid)
            ignoring = [pid for pid in [process.pid, *workers] if ignores(pid, signal.SIGHUP)]
            if nohup:
                for pid in [process.pid, *workers]:
                    os.kill(pid, signal.SIGHUP)
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
        return process.returncode, err.read(), workers, left, ignoring


def ignores(pid, stop):
    """Whether process pid ignores the signal stop: its bit in SigIgn, /proc's mask of them."""
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        mask = next(line.split()[1] for line in f if line.startswith("SigIgn:"))
    return int(mask, 16) >> (stop - 1) & 1 == 1


RECORDS = [os.path.join(HERE, "training", name)      # what --layers 2 --write would write
           for name in ("two-layer-run.json", "two-layer-model.json")]
WRITTEN = [os.stat(path).st_mtime_ns for path in RECORDS]      # before any run below starts
# started when this module is imported, each on a thread: most of it is the other process's work
STOPPED = ({(stop, args, nohup): concurrent.futures.ThreadPoolExecutor(1).submit(
    stopped_by, stop, *args, nohup=nohup)
    for stop, args, nohup in ((signal.SIGTERM, ("--seeds", "2", "--steps", "100000"), False),
                              (signal.SIGHUP, ("--seeds", "2", "--steps", "100000"), False),
                              (signal.SIGINT, ("--layers", "2", "--write"), False),
                              (signal.SIGTERM, ("--layers", "2", "--write"), True))}
           if os.path.isdir("/proc") and hasattr(signal, "SIGHUP") else {})


class Stopping(unittest.TestCase):

    @unittest.skipUnless(STOPPED, "needs /proc and SIGHUP")
    def test_a_signal_stops_the_workers_of_seeds_and_of_the_two_layer_record(self):
        for (stop, args, nohup), future in STOPPED.items():   # SIGTERM, SIGHUP, Ctrl-C's SIGINT
            code, err, workers, left, _ = future.result()
            with self.subTest(signal=stop.name, args=args, nohup=nohup):
                self.assertEqual(len(workers), 2, "the two workers never started")
                lines = err.strip().splitlines()    # after any progress a worker said
                self.assertEqual((code, lines[-1:]), (130, ["error: interrupted"]), err)
                self.assertTrue(all(line.startswith("seed ") for line in lines[:-1]), err)
                self.assertEqual(left, [], f"a worker outlived train_attention.py {args}")
        self.assertEqual([os.stat(path).st_mtime_ns for path in RECORDS], WRITTEN)

    @unittest.skipUnless(STOPPED, "needs /proc and SIGHUP")
    def test_under_nohup_the_two_layer_record_and_its_workers_go_on_ignoring_sighup(self):
        """The run a learner may start and leave: a closed terminal's SIGHUP stops neither it
        nor its workers (SIGTERM then stops them all, as the test above asserts); started as
        usual, all three are stopped by SIGHUP, none ignores it."""
        for nohup, (stop, args) in ((True, (signal.SIGTERM, ("--layers", "2", "--write"))),
                                    (False, (signal.SIGINT, ("--layers", "2", "--write")))):
            *_, ignoring = STOPPED[stop, args, nohup].result()
            with self.subTest(nohup=nohup):     # the command and its two workers, or none
                self.assertEqual(len(ignoring), 3 if nohup else 0, ignoring)


if __name__ == "__main__":
    unittest.main()

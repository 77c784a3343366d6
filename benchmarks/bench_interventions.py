"""How long the trained layer's questions take from the command line: train_attention.py's
--story, --block, --ablate-value, --patch and --export, each a fresh process answering from the
recorded model, 5 runs each (median and slowest). A benchmark script, not a test.

    python3 -m benchmarks.bench_interventions [--record]   --record: also bench-interventions.txt
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, Report, guarded
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD_PATH = os.path.join(HERE, "benchmarks", "bench-interventions.txt")
RUNS = 5
STORY = "tom has a green kite. sam has a blue car too. the kite is"
CORRUPTED = "tom has a white kite. sam has a blue car too. the kite is"


def commands(folder):
    """(name, arguments of train_attention.py) of each command timed; outputs go to folder."""
    return [("--story", ["--story", STORY]),
            ("--story --json", ["--story", STORY, "--json"]),
            ("--block", ["--story", STORY, "--block", "4"]),
            ("--ablate-value", ["--story", STORY, "--ablate-value", "4"]),
            ("--patch", ["--patch", STORY, "--into", CORRUPTED]),
            ("--patch --svg", ["--patch", STORY, "--into", CORRUPTED, "--svg",
                               os.path.join(folder, "patch.svg")]),
            ("--export", ["--story", STORY, "--export", os.path.join(folder, "attention.json")])]


def wall_seconds(args):
    """The wall time of one `python3 train_attention.py args`; raises RuntimeError if it fails."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "train_attention.py", *args], cwd=HERE,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"train_attention.py {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds


def main(argv=None):
    parser = OneLineParser(description="Time train_attention.py's questions to the recorded model.")
    parser.add_argument("--record", action="store_true", help="write bench-interventions.txt")
    args = parser.parse_args(argv)
    return guarded(lambda: run(args.record))


def run(record):
    report = Report()
    report.say(f"train_attention.py from the recorded model, wall seconds of a fresh process, "
               f"{RUNS} runs each; Python {sys.version.split()[0]}, {os.cpu_count()} cores", "",
               "| command | median s | slowest s |", "|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, args in commands(folder):
            times = [wall_seconds(args) for _ in range(RUNS)]
            report.say(f"| {name} | {statistics.median(times):.2f} | {max(times):.2f} |")
    if record:
        report.record(RECORD_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""How long the default training run takes in a fresh process, and what a step costs a token of
story (its printed training time over every prompt's tokens). A benchmark script, not a test.

    python3 -m benchmarks.bench_training [--record]   --record: also write bench-training.txt
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, Report, guarded
import os
import random
import re
import statistics
import subprocess
import sys
import time

from training.stories import question, stories, training_tokenizer
from training.train import SEED, STEPS

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD_PATH = os.path.join(HERE, "benchmarks", "bench-training.txt")
RUNS = 3


def trained_tokens(seed=SEED, steps=STEPS):
    """The tokens of every prompt the default run trains on, drawn as train_model draws them."""
    tokenizer = training_tokenizer()
    lengths = [len(tokenizer.encode(question(s))) for s in stories(seed)[0]]
    order = random.Random(seed + 1)
    return sum(order.choice(lengths) for _ in range(steps))


def one_run():
    """(wall seconds of `python3 train_attention.py`, the training's seconds it prints)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "train_attention.py"], cwd=HERE, capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"train_attention.py failed: {done.stderr.strip()}")
    return seconds, float(re.search(r"steps in ([0-9.]+) s", done.stdout).group(1))


def main(argv=None):
    parser = OneLineParser(description="Time train_attention.py's default run.")
    parser.add_argument("--record", action="store_true", help="write bench-training.txt")
    args = parser.parse_args(argv)
    return guarded(lambda: run(args.record))


def run(record):
    tokens = trained_tokens()
    runs = [one_run() for _ in range(RUNS)]
    wall, training = (statistics.median(part) for part in zip(*runs))
    report = Report()
    report.say(f"python3 train_attention.py, a fresh process, {RUNS} runs (medians); Python "
               f"{sys.version.split()[0]}, {os.cpu_count()} cores", "",
               "| the whole run s | its training s | steps | tokens trained on | ms a token a "
               "step |", "|---|---|---|---|---|", f"| {wall:.1f} | {training:.1f} | {STEPS} | "
               f"{tokens} | {1000 * training / tokens:.3f} |")
    if record:
        report.record(RECORD_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""How long train_attention.py takes as a learner runs it, each run a fresh process: the default
training run (and what a step costs a token of story: its printed training time over every
prompt's tokens), or with --questions each question to the recorded model (--story, --block,
--ablate-value, --patch, --export). A benchmark script, not a test.

    python3 -m benchmarks.bench_training [--record]   --record: also write bench-training.txt
    python3 -m benchmarks.bench_training --questions [--record]     bench-interventions.txt
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, Report, guarded
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

from training.stories import question, stories, training_tokenizer
from training.train import SEED, STEPS

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDS = {False: os.path.join(HERE, "benchmarks", "bench-training.txt"),
           True: os.path.join(HERE, "benchmarks", "bench-interventions.txt")}
TRAINING_RUNS, QUESTION_RUNS = 3, 5
STORY = "tom has a green kite. sam has a blue car too. the kite is"
CORRUPTED = "tom has a white kite. sam has a blue car too. the kite is"


def questions(folder):
    """(name, arguments of train_attention.py) of each question timed; outputs go to folder."""
    return [("--story", ["--story", STORY]),
            ("--story --json", ["--story", STORY, "--json"]),
            ("--block", ["--story", STORY, "--block", "4"]),
            ("--ablate-value", ["--story", STORY, "--ablate-value", "4"]),
            ("--patch", ["--patch", STORY, "--into", CORRUPTED]),
            ("--patch --svg", ["--patch", STORY, "--into", CORRUPTED, "--svg",
                               os.path.join(folder, "patch.svg")]),
            ("--export", ["--story", STORY, "--export", os.path.join(folder, "attention.json")])]


def one_run(*args):
    """(wall seconds of `python3 train_attention.py args`, its output); RuntimeError if it fails."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "train_attention.py", *args], cwd=HERE,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"train_attention.py {' '.join(args)} failed: {done.stderr.strip()}")
    return seconds, done.stdout


def main(argv=None):
    parser = OneLineParser(description="Time train_attention.py's default run, or its questions "
                                       "to the recorded model.")
    parser.add_argument("--questions", action="store_true",
                        help="time the questions to the recorded model instead")
    parser.add_argument("--record", action="store_true",
                        help="write bench-training.txt (bench-interventions.txt with --questions)")
    args = parser.parse_args(argv)
    return guarded(lambda: run(args.questions, args.record))


def run(questions_only, record):
    report = Report()
    python = f"Python {sys.version.split()[0]}, {os.cpu_count()} cores"
    if questions_only:
        report.say(f"train_attention.py from the recorded model, wall seconds of a fresh process, "
                   f"{QUESTION_RUNS} runs each; {python}", "",
                   "| command | median s | slowest s |", "|---|---|---|")
        with tempfile.TemporaryDirectory() as folder:
            for name, args in questions(folder):
                times = [one_run(*args)[0] for _ in range(QUESTION_RUNS)]
                report.say(f"| {name} | {statistics.median(times):.2f} | {max(times):.2f} |")
    else:
        # the tokens of every prompt the default run trains on, drawn as train_model draws them
        tokenizer = training_tokenizer()
        lengths = [len(tokenizer.encode(question(s))) for s in stories(SEED)[0]]
        order = random.Random(SEED + 1)
        tokens = sum(order.choice(lengths) for _ in range(STEPS))
        runs = [one_run() for _ in range(TRAINING_RUNS)]
        wall = statistics.median(seconds for seconds, _ in runs)
        training = statistics.median(float(re.search(r"steps in ([0-9.]+) s", out).group(1))
                                     for _, out in runs)
        report.say(f"python3 train_attention.py, a fresh process, {TRAINING_RUNS} runs (medians); "
                   f"{python}", "", "| the whole run s | its training s | steps | tokens trained "
                   "on | ms a token a step |", "|---|---|---|---|---|", f"| {wall:.1f} | "
                   f"{training:.1f} | {STEPS} | {tokens} | {1000 * training / tokens:.3f} |")
    if record:
        report.record(RECORDS[questions_only])
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""How fast does bpe.train learn a tokenizer? A benchmark script, not a test.

    python3 bench_bpe.py            1 MB of text to 512 tokens (a few minutes: the baseline is slow)
    python3 bench_bpe.py --quick    100 kB to 300 tokens
    python3 bench_bpe.py --record   also write the output to bench-bpe.txt, quoted in the README

The text is generated from a fixed seed: sentences of made-up lowercase words whose frequencies fall off
like a natural language's, so that every run trains on the same million characters. It times bpe.train
against `train_by_recounting`, the straightforward trainer below, checks that both learn the same merges,
and prints the speedup.
"""

import os
import random
import sys
import time
from collections import Counter

from bpe import Tokenizer, chunks, merge_pair, train
from recorded import OneLineParser, Report

SEED = 7
RECORD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-bpe.txt")


def train_by_recounting(text, vocab_size):
    """The straightforward trainer, written for clarity: before every merge it counts every adjacent pair
    in every chunk of the text again. Same rules as bpe.train, and so the same merges."""
    alphabet = sorted(set(text))
    ids = {ch: i for i, ch in enumerate(alphabet)}
    vocab = list(alphabet)
    words = [[ids[ch] for ch in chunk] for chunk in chunks(text)]
    merges, passed_over = [], set()
    while len(vocab) < vocab_size:
        counts = Counter(pair for word in words for pair in zip(word, word[1:]) if pair not in passed_over)
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))
        joined = vocab[pair[0]] + vocab[pair[1]]
        if joined in ids:
            passed_over.add(pair)
            continue
        ids[joined] = len(vocab)
        words = [merge_pair(word, pair, len(vocab)) for word in words]
        vocab.append(joined)
        merges.append((vocab[pair[0]], vocab[pair[1]]))
    return Tokenizer(alphabet, merges)


def corpus(size, seed=SEED):
    """size characters of seeded pseudo-English: 3000 made-up words, the n-th most common drawn with
    weight 1/n, in sentences of 4 to 14 words ending in ".", "!" or "?", with a newline now and then."""
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["th", "sh", "an", "er", "in", "on"]
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3))) for _ in range(3000)})
    rng.shuffle(words)
    weights = [1 / n for n in range(1, len(words) + 1)]
    parts, length = [], 0
    while length < size:
        sentence = " ".join(rng.choices(words, weights, k=rng.randint(4, 14))) + rng.choice(".!?")
        sentence += "\n" if rng.random() < 0.1 else " "
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts)[:size]


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main(argv=None):
    parser = OneLineParser(description="Time bpe.train against a trainer that recounts every pair.")
    parser.add_argument("--record", action="store_true", help="also write the output to bench-bpe.txt, which the README quotes")
    parser.add_argument("--quick", action="store_true", help="100 kB to 300 tokens")
    args = parser.parse_args(argv)
    size, vocab_size = (100_000, 300) if args.quick else (1_000_000, 512)

    text = corpus(size)
    fast_s, fast = timed(train, text, vocab_size)
    slow_s, slow = timed(train_by_recounting, text, vocab_size)
    if fast.merges != slow.merges:
        print("error: the two trainers learned different merges", file=sys.stderr)
        return 1
    report = Report()
    report.say(f"{size:,} characters to {vocab_size} tokens ({len(fast.alphabet)} characters, {len(fast.merges)} merges)")
    report.say(f"bpe.train:            {fast_s:8.2f} s")
    report.say(f"recounting baseline:  {slow_s:8.2f} s")
    report.say(f"speedup:              {slow_s / fast_s:8.1f}×")
    if args.record:
        report.record(RECORD_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())

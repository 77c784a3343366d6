"""How fast does bpe.train learn a tokenizer, and bpe encode a long word? A benchmark, not a test.

    python3 -m benchmarks.bench_bpe [--quick] [--record] [--corpus PATH] [--rust]

It times bpe.train, a recount of the distinct chunks, bpe.train_plain (1 MB only) and, with
--rust, HuggingFace `tokenizers` (one thread with RAYON_NUM_THREADS=1; this folder never needs
it), checks that they learn the same merges, and encodes a word of 1,000,000 letters.
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, Report, guarded
import importlib.util
import os
import sys
import time

from benchmarks.reference import best_of, corpus
from bpe import recount_merges, train, train_plain, word_counts
from common.safe_io import read_text

RECORD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-bpe.txt")
ALPHABET = set("\n !,.?abcdefghijklmnopqrstuvwxyz")     # the lesson's tokenizer's 32 characters
RUST_PATTERN = r" ?[a-z]+|[^a-z]"                          # bpe.chunks, for text in ALPHABET
RUNS = 5             # bpe.train and the Rust trainer: the best of this many runs


def text_of(path):
    """The text of a file, or of a folder's .txt files, lower-cased and filtered to ALPHABET."""
    files = [path] if not os.path.isdir(path) else sorted(
        os.path.join(folder, name) for folder, _, names in os.walk(path) for name in names
        if name.endswith(".txt"))
    text = "".join(read_text(name, limit=2 ** 30) for name in files).lower()
    return "".join(ch for ch in text if ch in ALPHABET)


def train_distinct_recount(text, vocab_size):
    """bpe.train_plain's loop over the distinct chunks, each counted with its frequency."""
    alphabet = sorted(set(text))
    ids = {ch: i for i, ch in enumerate(alphabet)}
    chunk_freqs = word_counts(text)
    words = [[ids[ch] for ch in chunk] for chunk in chunk_freqs]
    return recount_merges(alphabet, words, list(chunk_freqs.values()), vocab_size)


def train_rust(text, vocab_size):
    """(seconds, its tokens) of HuggingFace tokenizers' BPE trainer, fed the text line by line."""
    from tokenizers import Regex, Tokenizer as RustTokenizer, models, pre_tokenizers, trainers
    tok = RustTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(RUST_PATTERN), behavior="isolated")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, min_frequency=0)
    lines = text.splitlines(keepends=True)
    start = time.perf_counter()
    tok.train_from_iterator(lines, trainer)
    return time.perf_counter() - start, set(tok.get_vocab())


def main(argv=None):
    parser = OneLineParser(description="Time bpe.train against slower trainers and the Rust one.")
    parser.add_argument("--corpus", metavar="PATH", help="train on this text (a file or a folder "
                        "of .txt files) instead of the seeded one")
    parser.add_argument("--rust", action="store_true", help="also time HuggingFace tokenizers")
    parser.add_argument("--record", action="store_true",
                        help="also write the output to bench-bpe.txt")
    parser.add_argument("--quick", action="store_true", help="100 kB to 300 tokens only")
    args = parser.parse_args(argv)
    if args.quick and args.record:
        parser.error("--record keeps the full run the README quotes: drop --quick")
    return guarded(lambda: run(args, argv))


def run(args, argv):
    if args.rust and importlib.util.find_spec("tokenizers") is None:
        raise ValueError("--rust needs HuggingFace tokenizers in this Python: run it from a "
                         "scratch virtual environment that has it (pip install tokenizers)")
    sizes = [(100_000, 300)] if args.quick else [(1_000_000, 512), (5_000_000, 1024)]
    report = Report()
    source = text_of(args.corpus) if args.corpus else corpus(max(size for size, _ in sizes))
    described = (f"{args.corpus}, lower-cased and filtered to the lesson's alphabet" if args.corpus
                 else "reference.corpus, its default seed")
    threads = os.environ.get("RAYON_NUM_THREADS")
    python = "VENV/bin/python" if args.rust else "python3"    # VENV: one that has tokenizers
    report.say("command: " + " ".join(([f"RAYON_NUM_THREADS={threads}"] if threads else [])
                                      + [python, "-m", "benchmarks.bench_bpe"]
                                      + (sys.argv[1:] if argv is None else argv)))
    report.say(f"corpus: {described}; Python {sys.version.split()[0]}")
    for size, vocab_size in sizes:
        text = source[:size]
        if len(text) < size:
            raise ValueError(f"the corpus has {len(source):,} characters, fewer than {size:,}")
        fast_s, fast = best_of(RUNS, train, text, vocab_size)
        distinct_s, distinct = best_of(1, train_distinct_recount, text, vocab_size)
        if distinct != fast.merges:
            raise ValueError("bpe.train and the distinct recount learned different merges")
        report.say("", f"{size:,} characters to {vocab_size} tokens ({len(fast.alphabet)} "
                   f"characters, {len(fast.merges)} merges)",
                   f"bpe.train:                {fast_s:8.2f} s",
                   f"distinct recount:         {distinct_s:8.2f} s  "
                   f"({distinct_s / fast_s:.1f}× slower)")
        if size <= 1_000_000:
            plain_s, plain = best_of(1, train_plain, text, vocab_size)
            if plain.merges != fast.merges:
                raise ValueError("bpe.train and bpe.train_plain learned different merges")
            report.say(f"bpe.train_plain:          {plain_s:8.2f} s  "
                       f"({plain_s / fast_s:.1f}× slower)")
        if args.rust:
            rust_s, rust_vocab = min(train_rust(text, vocab_size) for _ in range(RUNS))
            same = "the same vocabulary" if rust_vocab == set(fast.vocab) else (
                f"a vocabulary that differs in {len(rust_vocab ^ set(fast.vocab))} tokens")
            report.say(f"Rust tokenizers, 1 thread:{rust_s:8.2f} s  (bpe.train is "
                       f"{rust_s / fast_s:.2f}× its speed; {same})")
    if not args.quick:
        tok = train(source[:5_000_000], 1500)
        word = "".join(ch for ch in source if ch.isalpha())[:1_000_000]
        encode_s, ids = best_of(1, tok.encode, word)
        report.say("", f"encode a word of {len(word):,} letters, no space, with "
                   f"{len(tok.vocab)} tokens: {encode_s:.2f} s ({len(ids):,} ids)")
    if args.record:
        report.record(RECORD_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

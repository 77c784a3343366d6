"""How fast is the layer, and how does it grow? A benchmark script, not a test.

    python3 -m benchmarks.bench_attention [--quick] [--record]    --record: bench-attention.txt

It times forward + backward of attention.py against the lesson's listing (`reference.listing`)
at T = 6 and, d_model 64 and d_head 16, at T = 16 to 512, and the KV cache (kv_cache.steps)
against attention_forward on every prefix; each pair must agree bit for bit. The first line
gives the machine's pace: multiply-adds per second of one long fsum(map(mul, a, b)).
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, Report, guarded
import math
import os
import random
import statistics
import sys
import time
import tracemalloc
from operator import mul

from attention import attention_backward, attention_forward, init_attention
from benchmarks.reference import best_of, listing
from kv_cache.step import cache_multiply_adds, recompute_multiply_adds, steps

D_MODEL, D_HEAD = 64, 16
RECORD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-attention.txt")


def fsum_rate(n=4096, repeats=200):
    """Multiply-adds per second of fsum(map(mul, a, b)) on long vectors, the best of 5 turns."""
    rng = random.Random(0)
    a, b = [rng.uniform(-1, 1) for _ in range(n)], [rng.uniform(-1, 1) for _ in range(n)]
    best, _ = best_of(5, lambda: [math.fsum(map(mul, a, b)) for _ in range(repeats)])
    return n * repeats / best


def inputs(T):
    rng = random.Random(T)
    params = init_attention(D_MODEL, D_HEAD, seed=T)
    x = [[rng.uniform(-1, 1) for _ in range(D_MODEL)] for _ in range(T)]
    d_out = [[rng.uniform(-1, 1) for _ in range(D_MODEL)] for _ in range(T)]
    return params, x, d_out


def layer_pass(params, x, d_out):
    cache = attention_forward(params, x)
    grads, d_x = attention_backward(params, x, cache, d_out)
    return cache["out"], grads, d_x


def listing_pass(params, x, d_out):
    out, _, grads, d_x = listing(params, x, "causal", d_out)
    return out, grads, d_x


def measure_lesson_size(passes=500, pairs=15):
    """T = 6, d_model 4, d_head 2: the median seconds of a pass, timed in turns of passes (the
    layer, then the listing), and the median of the turns' ratios: a busy moment slows both."""
    rng = random.Random(6)
    params = init_attention(4, 2, seed=11)
    x, d_out = ([[round(rng.uniform(-1, 1), 2) for _ in range(4)] for _ in range(6)]
                for _ in range(2))
    if layer_pass(params, x, d_out) != listing_pass(params, x, d_out):
        raise ValueError("at the lesson's size, attention.py and the listing disagree")

    def turn(one):
        start = time.perf_counter()
        for _ in range(passes):
            one(params, x, d_out)
        return (time.perf_counter() - start) / passes

    times = [(turn(layer_pass), turn(listing_pass)) for _ in range(pairs)]
    return {"layer": statistics.median(layer for layer, _ in times),
            "listing": statistics.median(listing for _, listing in times),
            "speedup": statistics.median(listing / layer for layer, listing in times)}


def measure(T):
    args = inputs(T)
    repeats = 5 if T <= 64 else 3
    layer_s, layer_result = best_of(repeats, layer_pass, *args)
    listing_s, listing_result = best_of(repeats, listing_pass, *args)
    if layer_result != listing_result:
        raise ValueError(f"T={T}: attention.py and the listing disagree")
    tracemalloc.start()
    try:
        layer_pass(*args)
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20       # MiB
    finally:
        tracemalloc.stop()
    return {"T": T, "layer": layer_s, "listing": listing_s, "peak": peak}


def measure_cache(T):
    params, x, _ = inputs(T)
    cache_s, cache_rows = best_of(5, lambda: [step["out"] for step in steps(params, x)])
    recompute_s, recompute_rows = best_of(3 if T <= 64 else 1, lambda: [
        attention_forward(params, x[:t + 1])["out"][t] for t in range(len(x))])
    if cache_rows != recompute_rows:
        raise ValueError(f"T={T}: the cache and the recomputed prefixes disagree")
    return {"T": T, "cache": cache_s, "recompute": recompute_s,
            "cache_count": cache_multiply_adds(T, D_MODEL, D_HEAD),
            "recompute_count": recompute_multiply_adds(T, D_MODEL, D_HEAD)}


def exponent(a, b, key):
    """How a measurement grows from row a to row b: the power of T it follows."""
    return math.log(b[key] / a[key]) / math.log(b["T"] / a["T"])


def main(argv=None):
    parser = OneLineParser(description="Time attention.py against the lesson's listing, and the "
                                       "cache of keys and values against recomputing.")
    parser.add_argument("--record", action="store_true",
                        help="also write the output to bench-attention.txt (the README quotes it)")
    parser.add_argument("--quick", action="store_true",
                        help="a short run: T = 16, 64, 128, and the cache at T = 16, 32, 64")
    args = parser.parse_args(argv)
    if args.quick and args.record:
        parser.error("--record keeps the full run the README quotes: drop --quick")
    return guarded(lambda: run((16, 64, 128) if args.quick else (16, 64, 256, 512),
                               (16, 32, 64) if args.quick else (64, 128, 256, 512), args.record))


def run(sizes, cache_sizes, record):
    report = Report()
    report.say(f"d_model {D_MODEL}, d_head {D_HEAD}, forward + backward, causal mask; "
               f"Python {sys.version.split()[0]}; "
               f"pure-Python fsum dot product: {fsum_rate() / 1e6:.1f} M multiply-adds/s", "")
    lesson = measure_lesson_size()
    report.say("at the lesson's size (T = 6, d_model 4, d_head 2), one forward + backward pass:",
               "", "| attention.py µs | listing µs | speedup |", "|---|---|---|",
               f"| {lesson['layer'] * 1e6:.1f} | {lesson['listing'] * 1e6:.1f} | "
               f"{lesson['speedup']:.2f}× |", "", f"d_model {D_MODEL}, d_head {D_HEAD}:", "",
               "| T | attention.py s | listing s | speedup | peak MiB |", "|---|---|---|---|---|")
    rows = []
    for row in map(measure, sizes):
        rows.append(row)
        report.say(f"| {row['T']} | {row['layer']:.4f} | {row['listing']:.4f} | "
                   f"{row['listing'] / row['layer']:.2f}× | {row['peak']:.2f} |")
    report.say("", f"growth exponent from T={rows[-2]['T']} to T={rows[-1]['T']}: "
               f"{exponent(rows[-2], rows[-1], 'layer'):.2f} (2 is quadratic in T)", "")
    report.say(f"the cache of keys and values: T positions one at a time, d_model {D_MODEL}, "
               f"d_head {D_HEAD}, causal mask;", "cache = attention_step on each new position, "
               "recompute = attention_forward on every prefix", "",
               "| T | cache s | recompute s | speedup | cache multiply-adds | "
               "recompute multiply-adds | count ratio |", "|---|---|---|---|---|---|---|")
    cache_rows = []
    for row in map(measure_cache, cache_sizes):
        cache_rows.append(row)
        report.say(f"| {row['T']} | {row['cache']:.4f} | {row['recompute']:.4f} | "
                   f"{row['recompute'] / row['cache']:.1f}× | {row['cache_count']:,} | "
                   f"{row['recompute_count']:,} | "
                   f"{row['recompute_count'] / row['cache_count']:.1f}× |")
    report.say("", "growth exponents (1 is linear in T, 2 quadratic, 3 cubic):")
    for a, b in zip(cache_rows, cache_rows[1:]):
        report.say(f"from T={a['T']} to {b['T']}: cache {exponent(a, b, 'cache'):.2f} "
                   f"(count {exponent(a, b, 'cache_count'):.2f}), recompute "
                   f"{exponent(a, b, 'recompute'):.2f} "
                   f"(count {exponent(a, b, 'recompute_count'):.2f})")
    if record:
        report.record(RECORD_PATH)
    return 0

if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""How fast is the layer, and how does it grow? A benchmark script, not a test.

    python3 bench_attention.py            T = 16, 64, 256, 512, 1024 (about a minute or two)
    python3 bench_attention.py --quick    T = 16, 64, 128 (a few seconds)
    python3 bench_attention.py --record   also write the output to bench-attention.txt (the README
                                          quotes it)

For each T, with d_model 64 and d_head 16, it times one forward plus backward pass of attention.py,
which computes only the pairs the causal mask keeps, and of `dense_reference` from reference.py,
which evaluates the same equations computing every pair; both give bit-identical results, which it
checks. Columns:

  causal s, dense s   seconds for forward + backward (the best of a few runs for small T)
  speedup             dense s / causal s
  work ratio          multiply-adds of the dense evaluation / those of the causal one: the part of
                      the speedup that skipping explains; the rest is the inner loop (map and fsum
                      in C here, a Python generator in the plain dense evaluation)
  exponent            growth of the causal time, fitted from the two largest T: t ∝ T^exponent
  peak MiB            peak memory of the causal pass, from tracemalloc: the (T, T) scores, weights
                      and their gradients make it O(T²)
  fsum share          the layer's multiply-adds per second as a share of what one long pure-Python
                      fsum(map(mul, a, b)) reaches: the interpreter's limit for an exact dot product
"""

import math
import os
import random
import sys
import time
import tracemalloc
from math import fsum
from operator import mul

from attention import attention_backward, attention_forward, init_attention
from cli import OneLineParser, Report, guarded
from reference import dense_reference

D_MODEL, D_HEAD = 64, 16
RECORD_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-attention.txt")


def multiply_adds(T, causal):
    """The multiply-adds of one forward + backward pass. The projections (x·Wq, x·Wk, x·Wv,
    mixed·Wo, and for each of the four its two backward products) cost 12·T·d_model·d_head either
    way. The six (T, T) products (scores, mixture, d_weights, d_v, d_q, d_k) cost d_head per pair:
    T² pairs dense, T(T+1)/2 causal. The softmax backward's Σ a·da costs T² either way."""
    pairs = T * (T + 1) // 2 if causal else T * T
    return 12 * T * D_MODEL * D_HEAD + 6 * pairs * D_HEAD + T * T


def fsum_rate(n=4096, repeats=200):
    """Multiply-adds per second of fsum(map(mul, a, b)) on long vectors."""
    rng = random.Random(0)
    a, b = [rng.uniform(-1, 1) for _ in range(n)], [rng.uniform(-1, 1) for _ in range(n)]
    best = math.inf
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            fsum(map(mul, a, b))
        best = min(best, time.perf_counter() - start)
    return n * repeats / best


def inputs(T):
    rng = random.Random(T)
    params = init_attention(D_MODEL, D_HEAD, seed=T)
    x = [[rng.uniform(-1, 1) for _ in range(D_MODEL)] for _ in range(T)]
    d_out = [[rng.uniform(-1, 1) for _ in range(D_MODEL)] for _ in range(T)]
    return params, x, d_out


def causal_pass(params, x, d_out):
    cache = attention_forward(params, x)
    grads, d_x = attention_backward(params, x, cache, d_out)
    return cache["out"], grads, d_x


def dense_pass(params, x, d_out):
    out, _, grads, d_x = dense_reference(params, x, "causal", d_out)
    return out, grads, d_x


def best_time(run, args, repeats):
    best, result = math.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run(*args)
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(run, args):
    tracemalloc.start()
    try:
        run(*args)
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def measure(T):
    args = inputs(T)
    repeats = 5 if T <= 64 else 1
    causal_s, causal_result = best_time(causal_pass, args, repeats)
    dense_s, dense_result = best_time(dense_pass, args, repeats)
    if causal_result != dense_result:
        raise SystemExit(f"error: T={T}: the causal and dense passes disagree")
    return {"T": T, "causal": causal_s, "dense": dense_s, "peak": peak_mib(causal_pass, args)}


def main(argv=None):
    parser = OneLineParser(description="Time the causal layer against the dense evaluation.")
    parser.add_argument("--record", action="store_true",
                        help="also write the output to bench-attention.txt (the README quotes it)")
    parser.add_argument("--quick", action="store_true", help="T = 16, 64, 128 only")
    args = parser.parse_args(argv)
    sizes = (16, 64, 128) if args.quick else (16, 64, 256, 512, 1024)

    report = Report()
    rate = fsum_rate()
    report.say(f"d_model {D_MODEL}, d_head {D_HEAD}, forward + backward; "
               f"Python {sys.version.split()[0]}; "
               f"pure-Python fsum dot product: {rate / 1e6:.1f} M multiply-adds/s")
    report.say()
    report.say("| T | causal s | dense s | speedup | work ratio | peak MiB | fsum share |")
    report.say("|---|---|---|---|---|---|---|")
    rows = []
    for T in sizes:
        row = measure(T)
        rows.append(row)
        share = multiply_adds(T, causal=True) / row["causal"] / rate
        report.say(f"| {T} | {row['causal']:.4f} | {row['dense']:.4f} | "
                   f"{row['dense'] / row['causal']:.2f}× | "
                   f"{multiply_adds(T, False) / multiply_adds(T, True):.2f} | "
                   f"{row['peak']:.2f} | {share:.0%} |")
    (T1, t1), (T2, t2) = [(r["T"], r["causal"]) for r in rows[-2:]]
    report.say()
    report.say(f"growth exponent from T={T1} to T={T2}: "
               f"{math.log(t2 / t1) / math.log(T2 / T1):.2f} (2 is quadratic in T)")
    if args.record:
        report.record(RECORD_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))

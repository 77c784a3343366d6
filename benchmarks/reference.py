"""What the tests and the benchmarks share, and nothing a learner's run needs.

`listing(params, x, mask, d_out)`: the layer and its backward pass as the lesson's listing writes
them, a generator of products inside each fsum, every pair computed; one thing corrected: the
"zero" mode's future scores are constants and send no gradient. attention.py must agree with it
bit for bit (test_properties.py). `corpus(size, seed)`: seeded pseudo-English for the tokenizer.
`best_of(runs, fn, *args)`: the benchmarks' clock.
"""

import math
import random
import time
from math import fsum


def listing(params, x, mask, d_out):
    """(out, weights, grads, d_x): the lesson's layer and its gradients, every pair computed."""
    def matmul(a, b):
        if len(a[0]) != len(b):
            raise ValueError(f"matmul needs (n, m)·(m, p), got {len(a[0])} and {len(b)}")
        b_t = transpose(b)
        return [[fsum(p * q for p, q in zip(row, col)) for col in b_t] for row in a]

    def transpose(a):
        return [list(col) for col in zip(*a)]

    def softmax_row(row):
        top = max(s for s in row if s != -math.inf)
        exps = [0.0 if s == -math.inf else math.exp(s - top) for s in row]
        total = fsum(exps)
        return [e / total for e in exps]

    Wq, Wk, Wv, Wo = params["Wq"], params["Wk"], params["Wv"], params["Wo"]
    T, d_head = len(x), len(Wq[0])
    q, k, v = matmul(x, Wq), matmul(x, Wk), matmul(x, Wv)
    scale = 1 / math.sqrt(d_head)
    scores = [[s * scale for s in row] for row in matmul(q, transpose(k))]
    if mask != "none":          # the future: −∞, or the "zero" mode's bug, 0.0
        future = -math.inf if mask == "causal" else 0.0
        scores = [[s if j <= i else future for j, s in enumerate(row)]
                  for i, row in enumerate(scores)]
    weights = [softmax_row(row) for row in scores]
    mixed = matmul(weights, v)
    out = matmul(mixed, Wo)

    grads = {"Wo": matmul(transpose(mixed), d_out)}
    d_mixed = matmul(d_out, transpose(Wo))
    d_weights = matmul(d_mixed, transpose(v))
    d_v = matmul(transpose(weights), d_mixed)
    d_scores = []
    for i in range(T):
        a, da = weights[i], d_weights[i]
        a_da = fsum(a_j * da_j for a_j, da_j in zip(a, da))
        # the correction: a future score of the "zero" mode is a constant, not a function of q, k
        d_scores.append([0.0 if mask != "none" and j > i else a[j] * (da[j] - a_da) * scale
                         for j in range(T)])
    d_q = matmul(d_scores, k)
    d_k = matmul(transpose(d_scores), q)
    x_t = transpose(x)
    grads["Wq"], grads["Wk"], grads["Wv"] = matmul(x_t, d_q), matmul(x_t, d_k), matmul(x_t, d_v)
    paths = [matmul(d_q, transpose(Wq)), matmul(d_k, transpose(Wk)), matmul(d_v, transpose(Wv))]
    d_x = [[fsum(p[i][c] for p in paths) for c in range(len(x[0]))] for i in range(T)]
    return out, weights, grads, d_x


def corpus(size, seed=7):
    """size characters of seeded pseudo-English: 3000 made-up words, the n-th drawn with weight
    1/n, in sentences of 4 to 14 words, a newline now and then."""
    rng = random.Random(seed)
    syllables = ([c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"]
                 + ["th", "sh", "an", "er", "in", "on"])
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
                    for _ in range(3000)})
    rng.shuffle(words)
    weights = [1 / n for n in range(1, len(words) + 1)]
    parts, length = [], 0
    while length < size:
        sentence = " ".join(rng.choices(words, weights, k=rng.randint(4, 14))) + rng.choice(".!?")
        sentence += "\n" if rng.random() < 0.1 else " "
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts)[:size]


def best_of(runs, fn, *args):
    """(the fastest of runs runs of fn(*args), the least disturbed, in seconds; the last result)."""
    best, result = math.inf, None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn(*args)
        best = min(best, time.perf_counter() - start)
    return best, result

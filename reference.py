"""The lesson's layer evaluated the plain way, every pair computed: the reference attention.py must
match bit for bit.

attention.py computes only the pairs a row reaches; `dense_reference` computes every pair (i, j),
even where the mask throws it away, with index loops and no shortcut. Every sum is math.fsum,
correctly rounded, so the terms attention.py leaves out (exact zeros) change no bit and the two
agree exactly. test_properties.py checks that on random shapes; bench_attention.py times the two.
"""

import math
import random
from math import fsum


def dense_reference(params, x, mask, d_out):
    """The layer and its gradients with every pair computed. Returns (out, weights, grads, d_x)."""
    def mm(a, b):
        return [[fsum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))]
                for i in range(len(a))]

    def tr(a):
        return [[a[i][j] for i in range(len(a))] for j in range(len(a[0]))]

    Wq, Wk, Wv, Wo = params["Wq"], params["Wk"], params["Wv"], params["Wo"]
    T, scale = len(x), 1 / math.sqrt(len(Wq[0]))
    masked = [[mask != "none" and j > i for j in range(T)] for i in range(T)]
    q, k, v = mm(x, Wq), mm(x, Wk), mm(x, Wv)
    dots = mm(q, tr(k))
    fill = 0.0 if mask == "zero" else -math.inf
    scores = [[fill if masked[i][j] else dots[i][j] * scale for j in range(T)] for i in range(T)]
    weights = []
    for row in scores:
        top = max(row)
        exps = [math.exp(s - top) for s in row]
        total = fsum(exps)
        weights.append([e / total for e in exps])
    mixed = mm(weights, v)
    out = mm(mixed, Wo)

    grads = {"Wo": mm(tr(mixed), d_out)}
    d_mixed = mm(d_out, tr(Wo))
    d_weights = mm(d_mixed, tr(v))
    d_v = mm(tr(weights), d_mixed)
    d_scores = []
    for i in range(T):
        a_da = fsum(weights[i][j] * d_weights[i][j] for j in range(T))
        d_scores.append([0.0 if masked[i][j] else weights[i][j] * (d_weights[i][j] - a_da)
                         for j in range(T)])
    d_dots = [[g * scale for g in row] for row in d_scores]
    d_q, d_k = mm(d_dots, k), mm(tr(d_dots), q)
    grads["Wq"], grads["Wk"], grads["Wv"] = mm(tr(x), d_q), mm(tr(x), d_k), mm(tr(x), d_v)
    paths = [mm(d_q, tr(Wq)), mm(d_k, tr(Wk)), mm(d_v, tr(Wv))]
    d_x = [[fsum(paths[n][i][c] for n in range(3)) for c in range(len(x[0]))] for i in range(T)]
    return out, weights, grads, d_x


def corpus(size, seed=7):
    """size characters of seeded pseudo-English: 3000 made-up words, the n-th most common drawn with
    weight 1/n, in sentences of 4 to 14 words ending in ".", "!" or "?", with a newline now and
    then."""
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

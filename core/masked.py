"""The middle of attention.py's layer (scores, weights, mixed and their gradients) over a mask of
any shape: what Lab 06, the KV cache and the training model call.

    attention_core(q, k, v, allowed, blocked_score)   raw_scores, scores, weights and mixed
    attention_core_backward(cache, d_mixed)           (d_q, d_k, d_v)

q is (T, d), k (S, d), v (S, d_v) and allowed (T, S): allowed[i][j] is True when query i may
attend to source j (the polarity of PyTorch's boolean `attn_mask`). A blocked score is
blocked_score, −∞ for a correct mask (the "zero" bug passes 0.0). The lines are attention.py's, in
its order, so every number is bit for bit the layer's (tests/test_properties.py keeps it so). Both
functions are unchecked, and so are the helpers they call (attention.unchecked): their callers
check what comes in at their own doors.
"""

import math
from math import fsum
from operator import mul

from attention import unchecked


def attention_core(q, k, v, allowed, blocked_score=-math.inf):
    """raw_scores (T, S) before the mask, scores (T, S) as masked, weights (T, S) and mixed
    (T, d_v) of q (T, d), k (S, d), v (S, d_v) and allowed (T, S), under attention_forward's
    names, as a dict with q, k, v, allowed, blocked_score and scale too."""
    scale = 1 / math.sqrt(len(q[0]))
    raw_scores = [[s * scale for s in row] for row in unchecked.matmul(q, unchecked.transpose(k))]
    scores = [[s if ok else blocked_score for s, ok in zip(row, ok_row)]
              for row, ok_row in zip(raw_scores, allowed)]
    weights = [unchecked.softmax_row(row) for row in scores]
    mixed = unchecked.matmul(weights, v)
    return {"q": q, "k": k, "v": v, "allowed": allowed, "blocked_score": blocked_score,
            "scale": scale, "raw_scores": raw_scores, "scores": scores, "weights": weights,
            "mixed": mixed}


def attention_core_backward(cache, d_mixed):
    """(d_q, d_k, d_v) of q's, k's and v's shapes, from the cache attention_core returned and
    d_mixed (T, d_v) = dLoss/d(mixed)."""
    q, k, v, allowed, weights, scale = (cache[name] for name in
                                        ("q", "k", "v", "allowed", "weights", "scale"))
    d_weights = unchecked.matmul(d_mixed, unchecked.transpose(v))
    d_v = unchecked.matmul(unchecked.transpose(weights), d_mixed)
    d_scores = []
    for a_row, da_row in zip(weights, d_weights):
        a_da = fsum(map(mul, a_row, da_row))
        d_scores.append([a * (da - a_da) for a, da in zip(a_row, da_row)])
    # a blocked score is a constant (−∞, or the bug's 0.0), not a function of q or k: no gradient
    d_raw_scores = [[d if ok else 0.0 for d, ok in zip(row, ok_row)]
                    for row, ok_row in zip(d_scores, allowed)]
    d_qkT = [[d * scale for d in row] for row in d_raw_scores]      # dLoss/d(q·kᵀ)
    d_q = unchecked.matmul(d_qkT, k)
    d_k = unchecked.matmul(unchecked.transpose(d_qkT), q)
    return d_q, d_k, d_v

"""One causal self-attention head, forward and backward, written out with lists of lists.

For an input x of T rows (one per position) and d_model columns:

    q = x·Wq,  k = x·Wk,  v = x·Wv                  each (T, d_head)
    scores  = q·kᵀ · scale, −∞ where j > i          (T, T), scale = 1/√d_head
    weights = softmax_row of each row of scores      (T, T), later positions exactly 0.0
    mixed   = weights·v                              (T, d_head)
    out     = mixed·Wo                               (T, d_model)

attention_backward walks them in reverse. Every sum is math.fsum, correctly rounded. Each public
function checks at its door (common/checks.py) and calls its private twin (matmul calls _matmul);
the layer checks its input once, at its first line. Left out: batches (a loop over sequences),
bias, dropout, normalization, residuals. Standard library only.
"""

import math
import random
from math import fsum
from operator import mul
from types import SimpleNamespace

from common import checks

MASK_MODES = ("causal", "none", "zero")
# how attention_backward's refusal of an edited cache ends: Lab 06's head takes edited matrices
EDITED_CACHE_ADVICE = ("To see what an edited q, k, v or mask does, hand the edited matrices to "
                       "lab06's attend(q, k, v, allowed), and its attend_backward gives their "
                       "gradients")


# ---- list-of-lists helpers ---------------------------------------------------------------------

def shape(t):
    """The sizes of a nested list, outermost first.

    >>> shape([[1, 2, 3], [4, 5, 6]])
    (2, 3)
    """
    sizes, seen = [], set()
    while isinstance(t, list) and t:
        if id(t) in seen:       # c = []; c.append(c): each t[0] is c again, without end
            raise ValueError("shape needs nested lists, got a list that holds itself")
        seen.add(id(t))
        sizes.append(len(t))
        t = t[0]
    return tuple(sizes + [0] * isinstance(t, list))


def _matmul(a, b):
    """matmul without its checks; a sum past float range raises ValueError naming both shapes."""
    b_cols = list(zip(*b))
    try:
        product = [[fsum(map(mul, a_row, b_col)) for b_col in b_cols] for a_row in a]
        if checks.finite(product):
            return product
    except (OverflowError, ValueError):     # fsum's words for a sum past float range, inf − inf
        pass
    raise checks.matmul_overflow(a, b)      # it came out ±inf, or fsum refused it


def matmul(a, b):
    """(n, m)·(m, p) -> (n, p), one fsum per output cell. Raises ValueError naming both shapes
    when the inner sizes differ or a sum passes float range.

    >>> matmul([[1, 2], [3, 4]], [[5], [6]])
    [[17.0], [39.0]]
    """
    checks.check_matmul(a, b)
    return _matmul(a, b)


def _transpose(a):
    return [list(col) for col in zip(*a)]


def transpose(a):
    """(n, m) -> (m, n).

    >>> transpose([[1, 2, 3]])
    [[1], [2], [3]]
    """
    checks.check_transpose(a)
    return _transpose(a)


def _add(*matrices):
    """add without its checks. A sum past float range raises ValueError."""
    try:
        return [[fsum(entries) for entries in zip(*rows)] for rows in zip(*matrices)]
    except OverflowError:                   # fsum's words for a sum past float range
        raise checks.add_overflow(matrices) from None


def add(*matrices):
    """The entrywise sum of matrices of one shape, each entry one fsum.

    >>> add([[1, 2]], [[10, 20]], [[100, 200]])
    [[111.0, 222.0]]
    """
    checks.check_add(matrices)
    return _add(*matrices)


def init_attention(d_model, d_head, seed):
    """Wq, Wk, Wv of (d_model, d_head) and Wo of (d_head, d_model), drawn in that order, row by row,
    as round(uniform(-0.5, 0.5), 2) from random.Random(seed), seed an int."""
    checks.check_made("Wq, Wk, Wv and Wo", 4, d_model=d_model, d_head=d_head)
    checks.check_seed(seed)
    rng = random.Random(seed)

    def draw(rows, cols):
        return [[round(rng.uniform(-0.5, 0.5), 2) for _ in range(cols)] for _ in range(rows)]

    return {"Wq": draw(d_model, d_head), "Wk": draw(d_model, d_head), "Wv": draw(d_model, d_head),
            "Wo": draw(d_head, d_model)}


# ---- softmax and the mask -----------------------------------------------------------------------

def _softmax_row(row):
    top = max(row)
    exps = [math.exp(s - top) for s in row]
    total = fsum(exps)
    return [e / total for e in exps]


def softmax_row(row):
    """Softmax of one row of scores: the largest score is subtracted before exp, so a score of 1e6
    does not overflow, and an entry of −∞ becomes exactly 0.0 (exp(−∞) = 0).

    >>> softmax_row([0.0, 0.0, -math.inf])
    [0.5, 0.5, 0.0]
    """
    checks.check_scores_row(row)
    return _softmax_row(row)


def causal_mask(T):
    """(T, T) allowed matrix, True where j ≤ i: position i may attend to positions 0…i, and the
    future (j > i) is blocked.

    >>> causal_mask(3)
    [[True, False, False], [True, True, False], [True, True, True]]
    """
    checks.check_length(T)
    return [[True] * (i + 1) + [False] * (T - 1 - i) for i in range(T)]   # row i: 0…i, not later


# the private twins, for callers whose doors checked what they compute on (core/, the KV cache)
unchecked = SimpleNamespace(matmul=_matmul, transpose=_transpose, softmax_row=_softmax_row)


# ---- the forward pass ---------------------------------------------------------------------------

@checks.named_by_the_first_product
def attention_forward(params, x, mask="causal"):
    """Run the layer on x (T, d_model). Returns every intermediate under its own name: q, k, v
    (T, d_head); raw_scores (T, T) before the mask; scores (T, T) as masked, −∞ where excluded;
    weights (T, T); mixed (T, d_head); out (T, d_model); scale; the mode as "mask"; and "seal",
    fingerprints that attention_backward checks the cache against (not for reading).

    mask is one of MASK_MODES: "causal" (correct), "none" (no mask: the future leaks), "zero" (the
    common bug: future scores 0.0 instead of −∞, so the future still gets weight). Raises
    ValueError or TypeError naming what is wrong (common/README.md tables them).
    """
    checks.check_forward(params, x, mask, MASK_MODES)
    Wq, Wk, Wv, Wo = params["Wq"], params["Wk"], params["Wv"], params["Wo"]
    q, k, v = _matmul(x, Wq), _matmul(x, Wk), _matmul(x, Wv)
    d_head = len(Wq[0])
    scale = 1 / math.sqrt(d_head)
    raw_scores = [[s * scale for s in row] for row in _matmul(q, _transpose(k))]
    allowed = causal_mask(len(x))   # position i reads 0…i: a later column j > i is blocked
    if mask == "causal":            # a blocked score is −∞, and its weight exactly 0.0
        scores = [[s if ok else -math.inf for s, ok in zip(row, ok_row)]
                  for row, ok_row in zip(raw_scores, allowed)]
    elif mask == "zero":            # the bug: exp(0.0 − max) is not 0, so the future gets weight
        scores = [[s if ok else 0.0 for s, ok in zip(row, ok_row)]
                  for row, ok_row in zip(raw_scores, allowed)]
    else:                           # "none": nothing is masked, the future leaks
        scores = raw_scores
    weights = [_softmax_row(row) for row in scores]
    mixed = _matmul(weights, v)
    out = _matmul(mixed, Wo)
    return checks.sealed({"q": q, "k": k, "v": v, "scale": scale, "raw_scores": raw_scores,
                          "scores": scores, "weights": weights, "mixed": mixed, "out": out,
                          "mask": mask}, params, x)


# ---- the backward pass, walking the forward in reverse -----------------------------------------

def attention_backward(params, x, cache, d_out):
    """Gradients for one forward pass: d_out (T, d_model) is dLoss/d(out), cache what
    attention_forward returned for (params, x). Returns (grads, d_x): grads has Wq, Wk, Wv, Wo and
    d_x is (T, d_model). Raises ValueError for a d_out not of out's shape or not finite, a cache
    not made by attention_forward for these params and x, or a gradient past float range."""
    checks.check_backward(params, x, cache, d_out, EDITED_CACHE_ADVICE)
    Wq, Wk, Wv, Wo = params["Wq"], params["Wk"], params["Wv"], params["Wo"]
    q, k, v, weights, mixed, scale = (cache[name] for name in
                                      ("q", "k", "v", "weights", "mixed", "scale"))
    # forward: out = mixed·Wo
    d_Wo = _matmul(_transpose(mixed), d_out)
    d_mixed = _matmul(d_out, _transpose(Wo))
    # forward: mixed = weights·v
    d_weights = _matmul(d_mixed, _transpose(v))
    d_v = _matmul(_transpose(weights), d_mixed)
    # forward: weights_i = softmax_row(scores_i); per row, d_scores = a·(da − Σ a·da)
    d_scores = []
    for a_row, da_row in zip(weights, d_weights):
        a_da = fsum(map(mul, a_row, da_row))
        d_scores.append([a * (da - a_da) for a, da in zip(a_row, da_row)])
    # forward: scores = raw_scores with the blocked entries replaced. A blocked score is a
    # constant (−∞, or the bug's 0.0), not a function of q or k: it gets no gradient.
    # With −∞ its weight a is 0 and so is its d_scores already; the bug's 0.0 has a > 0.
    if cache["mask"] == "none":
        d_raw_scores = d_scores
    else:
        d_raw_scores = [[d if ok else 0.0 for d, ok in zip(row, ok_row)]
                        for row, ok_row in zip(d_scores, causal_mask(len(x)))]
    # forward: raw_scores = (q·kᵀ) · scale
    d_qkT = [[d * scale for d in row] for row in d_raw_scores]      # dLoss/d(q·kᵀ)
    d_q = _matmul(d_qkT, k)
    d_k = _matmul(_transpose(d_qkT), q)
    # forward: q = x·Wq, k = x·Wk, v = x·Wv; x reaches the output along all three paths
    x_T = _transpose(x)
    grads = {"Wq": _matmul(x_T, d_q), "Wk": _matmul(x_T, d_k), "Wv": _matmul(x_T, d_v),
             "Wo": d_Wo}
    d_x = _add(_matmul(d_q, _transpose(Wq)), _matmul(d_k, _transpose(Wk)),
               _matmul(d_v, _transpose(Wv)))
    return grads, d_x

"""One causal self-attention head, forward and backward, written out with lists of lists.

For an input x of T rows (one per position) and d_model columns:

    q = x·Wq,  k = x·Wk,  v = x·Wv                      each (T, d_head)
    scores  = q·kᵀ · scale, scale = 1/√d_head           (T, T), −∞ where j > i
    weights = softmax_row of each row of scores          (T, T), later positions exactly 0.0
    mixed   = weights·v                                  (T, d_head)
    out     = mixed·Wo                                   (T, d_model)

The file reads in the lesson's order: list helpers, softmax_row, the masks, the core (scores,
weights, mixed, and its backward), then the lesson's layer. Standard library only.

What it adds to the lesson's listing, without hiding a step:
  - a mask is a (T, S) matrix `allowed`: allowed[i][j] is True when query i may attend to source j
    (the polarity of PyTorch's boolean `attn_mask`). A blocked pair is never computed: its score
    is −∞, its weight exactly 0.0, and every sum stops at the last source a row reaches (0…i
    under the causal mask);
  - the "zero" bug's backward is exact: its 0.0 scores are constants, no gradient to q or k;
  - every sum is math.fsum, correctly rounded, so no value depends on the order of summation and
    leaving out a zero term changes no bit;
  - each public entry point checks its input once (checks.py) and raises ValueError or TypeError
    naming what was expected and what came.

It leaves out batches (a batch is a loop over sequences), bias, dropout, normalization and
residuals. Run the lesson with `python3 trace_attention.py`.
"""

import math
import random
from math import fsum
from operator import mul

from checks import (check_backward, check_head, check_head_backward, check_layer_input,
                    check_masked_softmax, check_matmul, check_product, check_rectangular,
                    check_sizes, check_stages, inputs_of, softmax_error)

MASK_MODES = ("causal", "none", "zero")
NEG_INF = -math.inf


# ---- list-of-lists helpers -------------------------------------------------------------------

def shape(t):
    """The sizes of a nested list, outermost first.

    >>> shape([[1, 2, 3], [4, 5, 6]])
    (2, 3)
    """
    sizes = []
    while isinstance(t, list):
        sizes.append(len(t))
        if not t:
            break
        t = t[0]
    return tuple(sizes)


def transpose(a):
    """(n, m) -> (m, n).

    >>> transpose([[1, 2, 3]])
    [[1], [2], [3]]
    """
    check_rectangular("transpose", a)
    return [list(col) for col in zip(*a)]


def dot(a, b):
    """Σ a[n]·b[n], correctly rounded; when one list is shorter, the sum stops with it.

    >>> dot([1, 2, 3], [1, 1, 1])
    6.0
    >>> dot([1, 2], [1, 1, 1])
    3.0

    A sum that overflows is NaN, as in IEEE arithmetic (fsum raises instead); the public entry
    points then name the stage that overflowed.
    """
    try:
        return fsum(map(mul, a, b))
    except (OverflowError, ValueError):  # fsum's "intermediate overflow", or inf − inf
        return math.nan


def matmul(a, b):
    """(n, m)·(m, p) -> (n, p). Raises ValueError naming both shapes when the inner sizes differ,
    or when a product overflows.

    >>> matmul([[1, 2], [3, 4]], [[5], [6]])
    [[17.0], [39.0]]
    """
    check_matmul(a, b)
    b_cols = transpose(b)
    return check_product(a, b, [[dot(a_row, b_col) for b_col in b_cols] for a_row in a])


# ---- softmax -----------------------------------------------------------------------------------

def softmax_row(row):
    """Softmax of one row of scores: the largest score is subtracted before exp, so a score of 1e6
    does not overflow, and an entry of −∞ becomes exactly 0.0 (exp(−∞) = 0).

    >>> softmax_row([0.0, 0.0, -math.inf])
    [0.5, 0.5, 0.0]

    Raises ValueError unless the scores are finite or −∞, at least one of them finite.
    """
    top = max(row)
    exps = [math.exp(s - top) for s in row]
    total = fsum(exps)
    if not math.isfinite(total):    # a NaN, a +∞, or a row of −∞ alone: no softmax to take
        raise softmax_error(row)
    return [e / total for e in exps]


def masked_softmax(scores, allowed):
    """Lab 06's name for the same softmax: a blocked source (allowed False) becomes −∞ first.

    >>> masked_softmax([1.0, 1.0, 5.0], [True, True, False])
    [0.5, 0.5, 0.0]

    Raises ValueError unless scores and allowed are lists of one length, allowed holds bools with at
    least one True, and every allowed score is finite; TypeError for a score that is not a number.
    """
    check_masked_softmax(scores, allowed)
    return softmax_row([s if ok else NEG_INF for s, ok in zip(scores, allowed)])


# ---- masks -------------------------------------------------------------------------------------

def causal_mask(T):
    """(T, T) allowed matrix: position i sees positions 0…i.

    >>> causal_mask(3)
    [[True, False, False], [True, True, False], [True, True, True]]
    """
    return [[j <= i for j in range(T)] for i in range(T)]


def no_mask(T, S):
    """(T, S) allowed matrix with nothing blocked."""
    return [[True] * S for _ in range(T)]


def reach(scores_row):
    """How many entries of a row of scores a sum must read: up to its last score that is not −∞.
    Under the causal mask row i reaches i + 1: llm.c's `for (t2 = 0; t2 <= t; t2++)`.

    >>> reach([0.5, -math.inf, 0.25, -math.inf, -math.inf])
    3
    """
    n = len(scores_row)
    while n > 1 and scores_row[n - 1] == NEG_INF:
        n -= 1
    return n


# ---- the core: scores, weights, mixed ----------------------------------------------------------

def attention_core(q, k, v, allowed, blocked_score=NEG_INF):
    """Scaled dot-product attention after projection, unchecked: the layer calls it with what it has
    just built, and `attend` calls it after checking its input.

    q (T, d), k (S, d), v (S, d_v), allowed (T, S) of bool. Returns a dict:
      scores   (T, S)   q_i·k_j · scale where allowed[i][j], blocked_score elsewhere
      weights  (T, S)   softmax_row of each row of scores
      mixed    (T, d_v) weights·v
      and q, k, v, allowed, blocked_score, which the backward needs.

    blocked_score is −∞ for a correct mask; a finite one (the "zero" bug passes 0.0) still
    enters the softmax, so the blocked source gets weight. A blocked pair's score is never computed;
    to see every score before a mask, pass no_mask(T, S).
    """
    scale = 1 / math.sqrt(len(q[0]))
    scores = [[dot(q_i, k_j) * scale if ok else blocked_score for k_j, ok in zip(k, allowed_i)]
              for q_i, allowed_i in zip(q, allowed)]
    weights = [softmax_row(row) for row in scores]
    # row i mixes only the values it reaches, 0…i under the causal mask: dot stops at the shorter
    a_reached, v_cols = [a_i[:reach(s_i)] for a_i, s_i in zip(weights, scores)], transpose(v)
    mixed = [[dot(a_i, v_col) for v_col in v_cols] for a_i in a_reached]
    return {"q": q, "k": k, "v": v, "allowed": allowed, "blocked_score": blocked_score,
            "scores": scores, "weights": weights, "mixed": mixed}


def attention_core_backward(head, d_mixed):
    """Gradients of attention_core: head is what it returned, d_mixed (T, d_v) is dLoss/d(mixed).
    Returns (d_q, d_k, d_v). Walks the core in reverse; sums run only over the pairs the forward
    reached (row i over sources 0…i, source j over queries j…T−1, under the causal mask)."""
    q, k, v, allowed = head["q"], head["k"], head["v"], head["allowed"]
    scores, weights = head["scores"], head["weights"]
    scale = 1 / math.sqrt(len(q[0]))
    # Source j is read by queries j…T−1 under the causal mask: the end of column j. Reversed,
    # those come first, reached_by[j] of them, and dot stops at the shorter list.
    reached_by = [reach(col[::-1]) for col in transpose(scores)]

    # forward: mixed = weights·v
    d_weights = [[dot(dm_i, v_j) if s != NEG_INF else 0.0 for v_j, s in zip(v, s_i)]
                 for dm_i, s_i in zip(d_mixed, scores)]
    a_cols = [col[::-1][:n] for col, n in zip(transpose(weights), reached_by)]
    d_mixed_cols = [col[::-1] for col in transpose(d_mixed)]
    d_v = [[dot(a_col, dm_col) for dm_col in d_mixed_cols] for a_col in a_cols]

    # forward: weights_i = softmax_row(scores_i). Per row, d_scores = a·(da − Σ a·da); a
    # blocked score, and the "zero" bug's constant 0.0, has no gradient.
    d_scores = []
    for a_i, da_i, allowed_i in zip(weights, d_weights, allowed):
        a_da = dot(a_i, da_i)
        d_scores.append([a * (da - a_da) if ok else 0.0 for a, da, ok in zip(a_i, da_i, allowed_i)])

    # forward: scores = raw_scores · scale, raw_scores = q·kᵀ
    d_raw_scores = [[g * scale for g in row] for row in d_scores]
    g_rows = [g_i[:reach(s_i)] for g_i, s_i in zip(d_raw_scores, scores)]
    k_cols = transpose(k)
    d_q = [[dot(g_i, k_col) for k_col in k_cols] for g_i in g_rows]
    g_cols = [col[::-1][:n] for col, n in zip(transpose(d_raw_scores), reached_by)]
    q_cols = [col[::-1] for col in transpose(q)]
    d_k = [[dot(g_col, q_col) for q_col in q_cols] for g_col in g_cols]
    return d_q, d_k, d_v


# ---- the lesson's layer ------------------------------------------------------------------------

def init_attention(d_model, d_head, seed):
    """Wq, Wk, Wv of (d_model, d_head) and Wo of (d_head, d_model), drawn in that order, row by row,
    as round(uniform(-0.5, 0.5), 2) from random.Random(seed)."""
    check_sizes(d_model=d_model, d_head=d_head)
    rng = random.Random(seed)

    def draw(rows, cols):
        return [[round(rng.uniform(-0.5, 0.5), 2) for _ in range(cols)] for _ in range(rows)]

    return {"Wq": draw(d_model, d_head), "Wk": draw(d_model, d_head), "Wv": draw(d_model, d_head),
            "Wo": draw(d_head, d_model)}


def attention_forward(params, x, mask="causal"):
    """Run the layer on x (T, d_model). Returns every intermediate under its own name:
    q, k, v (T, d_head); scores (T, T) as masked, −∞ where excluded; weights (T, T);
    mixed (T, d_head); out (T, d_model); the mode as "mask"; allowed and blocked_score; and a copy
    of params and x as "inputs", by which attention_backward knows the cache is theirs.

    mask is one of MASK_MODES: "causal" (correct), "none" (no mask: the future leaks), "zero" (the
    common bug: future scores set to 0.0 instead of −∞, so the future still gets weight). Raises
    ValueError for an unknown mode, an empty sequence, rows of the wrong width, non-finite numbers
    or misfitting params, and TypeError for a value of the wrong kind.
    """
    if mask not in MASK_MODES:
        raise ValueError(f"mask must be one of {MASK_MODES}, got {mask!r}")
    check_layer_input(params, x)     # empty sequence, rows of the wrong width, misfitting params
    T = len(x)
    q, k, v = matmul(x, params["Wq"]), matmul(x, params["Wk"]), matmul(x, params["Wv"])
    allowed = no_mask(T, T) if mask == "none" else causal_mask(T)
    blocked_score = 0.0 if mask == "zero" else NEG_INF    # the bug: exp(0.0) = 1 is not a mask
    head = attention_core(q, k, v, allowed, blocked_score)   # scores, weights, mixed
    out = matmul(head["mixed"], params["Wo"])
    return check_stages({**head, "mask": mask, "out": out, "inputs": inputs_of(params, x)})


def attention_backward(params, x, cache, d_out):
    """Gradients for one forward pass: d_out (T, d_model) is dLoss/d(out), cache what
    attention_forward returned for (params, x). Returns (grads, d_x): grads has Wq, Wk, Wv, Wo and
    d_x is (T, d_model). Raises ValueError when d_out does not have out's shape or is not finite, or
    the cache is not one attention_forward returned for this x."""
    check_backward(params, x, cache, d_out)
    # forward: out = mixed·Wo
    d_Wo = matmul(transpose(cache["mixed"]), d_out)
    d_mixed = matmul(d_out, transpose(params["Wo"]))
    # forward: scores, weights, mixed from q, k, v
    d_q, d_k, d_v = attention_core_backward(cache, d_mixed)
    # forward: q = x·Wq, k = x·Wk, v = x·Wv; x reaches the output along all three paths
    x_t = transpose(x)
    grads = {"Wq": matmul(x_t, d_q), "Wk": matmul(x_t, d_k), "Wv": matmul(x_t, d_v), "Wo": d_Wo}
    paths = [matmul(d_q, transpose(params["Wq"])), matmul(d_k, transpose(params["Wk"])),
             matmul(d_v, transpose(params["Wv"]))]
    d_x = [[fsum(parts) for parts in zip(*rows)] for rows in zip(*paths)]
    check_stages({**grads, "d_x": d_x})
    return grads, d_x


# ---- the core at the door: Lab 06's entry points -----------------------------------------------

def attend(q, k, v, allowed, blocked_score=NEG_INF):
    """attention_core with its input checked: the entry point of Lab 06 and of experiments.

    Raises ValueError for a ragged, empty or non-finite matrix, q and k widths that differ, k and v
    counts that differ, a mask of the wrong size or with a non-bool entry, a row with every source
    blocked, a blocked_score that is neither −∞ nor finite, or a score that overflows.
    """
    check_head(q, k, v, allowed, blocked_score)
    return check_stages(attention_core(q, k, v, allowed, blocked_score))


def attend_backward(head, d_mixed):
    """attention_core_backward with its input checked: head is what attend returned, d_mixed
    (T, d_v). Returns (d_q, d_k, d_v)."""
    check_head_backward(head, d_mixed)
    d_q, d_k, d_v = attention_core_backward(head, d_mixed)
    check_stages({"d_q": d_q, "d_k": d_k, "d_v": d_v})
    return d_q, d_k, d_v


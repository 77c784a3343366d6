"""One causal self-attention head, forward and backward, written out with lists of lists.

For an input x of T rows (one per position) and d_model columns:

    q = x·Wq,  k = x·Wk,  v = x·Wv                      each (T, d_head)
    scores  = q·kᵀ · scale, scale = 1/√d_head           (T, T), −∞ where j > i
    weights = softmax_row of each row of scores          (T, T), later positions exactly 0.0
    mixed   = weights·v                                  (T, d_head)
    out     = mixed·Wo                                   (T, d_model)

The file reads in the lesson's order: the list helpers, softmax_row, the mask, the forward pass,
the backward pass; then the lesson's next step, the layer one position at a time with a cache of
keys and values (attention_step); then Lab 06's entry points to the same core. Standard library
only.

What it adds to the lesson's listing, without hiding a step:
  - the mask is a (T, S) matrix `allowed`: allowed[i][j] is True when query i may attend to source
    j (the polarity of PyTorch's boolean `attn_mask`). Where it is False the score is
    blocked_score, −∞ (0.0 in the "zero" bug), and the weight exactly 0.0. The scores, weights
    and mixture live in one core, `attention_core`, which Lab 06 calls with masks of its own;
  - the "zero" bug's backward is exact: its 0.0 scores are constants, no gradient to q or k;
  - every sum is math.fsum, correctly rounded, so no value depends on the order of summation;
  - each public function checks what comes in at its first line (checks.py) and raises ValueError
    or TypeError naming what was expected and what came. The list helpers are public too, so the
    layer's own calls to them pass their doors as well: passes of C, whose share of the time falls
    as the matrices grow (about 40% at the lesson's 6 tokens, 6% at T = 256 and d_model 64).

It leaves out batches (a batch is a loop over sequences), bias, dropout, normalization and
residuals. Run the lesson with `python3 trace_attention.py`.
"""

import math
import random
from math import fsum
from operator import mul

import checks

MASK_MODES = ("causal", "none", "zero")


# ---- list-of-lists helpers ---------------------------------------------------------------------

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


def matmul(a, b):
    """(n, m)·(m, p) -> (n, p), one fsum per output cell. Raises ValueError naming both shapes
    when the inner sizes differ or a sum could go beyond float range, TypeError for an entry
    that is not a number.

    >>> matmul([[1, 2], [3, 4]], [[5], [6]])
    [[17.0], [39.0]]
    """
    checks.check_matmul(a, b)
    b_cols = transpose(b)
    return [[fsum(map(mul, a_row, b_col)) for b_col in b_cols] for a_row in a]


def add(*matrices):
    """The entrywise sum of matrices of one shape, each entry one fsum. Raises ValueError naming
    the shapes when they differ or the sum could go beyond float range.

    >>> add([[1, 2]], [[10, 20]], [[100, 200]])
    [[111.0, 222.0]]
    """
    checks.check_add(matrices)
    return [[fsum(entries) for entries in zip(*rows)] for rows in zip(*matrices)]


def transpose(a):
    """(n, m) -> (m, n).

    >>> transpose([[1, 2, 3]])
    [[1], [2], [3]]
    """
    checks.check_rows("transpose", a)
    return [list(col) for col in zip(*a)]


def init_attention(d_model, d_head, seed):
    """Wq, Wk, Wv of (d_model, d_head) and Wo of (d_head, d_model), drawn in that order, row by row,
    as round(uniform(-0.5, 0.5), 2) from random.Random(seed)."""
    checks.check_sizes(d_model=d_model, d_head=d_head)
    rng = random.Random(seed)

    def draw(rows, cols):
        return [[round(rng.uniform(-0.5, 0.5), 2) for _ in range(cols)] for _ in range(rows)]

    return {"Wq": draw(d_model, d_head), "Wk": draw(d_model, d_head), "Wv": draw(d_model, d_head),
            "Wo": draw(d_head, d_model)}


# ---- softmax and the mask -----------------------------------------------------------------------

def softmax_row(row):
    """Softmax of one row of scores: the largest score is subtracted before exp, so a score of 1e6
    does not overflow, and an entry of −∞ becomes exactly 0.0 (exp(−∞) = 0).

    >>> softmax_row([0.0, 0.0, -math.inf])
    [0.5, 0.5, 0.0]

    Raises ValueError unless the scores are finite or −∞, at least one of them finite.
    """
    checks.check_scores_row(row)
    top = max(row)
    exps = [math.exp(s - top) for s in row]
    total = fsum(exps)
    return [e / total for e in exps]


def causal_mask(T):
    """(T, T) allowed matrix: position i may attend to positions 0…i.

    >>> causal_mask(3)
    [[True, False, False], [True, True, False], [True, True, True]]
    """
    checks.check_sizes(T=T)
    return [[j <= i for j in range(T)] for i in range(T)]


# ---- the forward pass: attention_core is its middle (scores, weights, mixed), attention_forward
#      puts q, k, v before it and out after it ----------------------------------------------------

def attention_core(q, k, v, allowed, blocked_score=-math.inf):
    """scores, weights and mixed from q (T, d), k (S, d), v (S, d_v) and allowed (T, S), unchecked:
    the layer, attention_step and `attend` call it with what they have checked, the colour
    stories' model (colour_stories.py) with what its own matmuls made. A blocked score is
    blocked_score: −∞ for a correct mask; the "zero" bug passes 0.0, which still gets weight.
    Returns a dict with q, k, v, allowed, blocked_score, scale and scores (T, S), weights (T, S),
    mixed (T, d_v); in the layer S = T and d = d_v = d_head."""
    scale = 1 / math.sqrt(len(q[0]))
    raw_scores = matmul(q, transpose(k))
    # the mask: where allowed is False (j > i under the causal mask), blocked_score
    scores = [[s * scale if ok else blocked_score for s, ok in zip(raw_i, allowed_i)]
              for raw_i, allowed_i in zip(raw_scores, allowed)]
    weights = [softmax_row(row) for row in scores]
    mixed = matmul(weights, v)
    return {"q": q, "k": k, "v": v, "allowed": allowed, "blocked_score": blocked_score,
            "scale": scale, "scores": scores, "weights": weights, "mixed": mixed}


def attention_forward(params, x, mask="causal"):
    """Run the layer on x (T, d_model). Returns every intermediate under its own name: q, k, v
    (T, d_head); scores (T, T) as masked, −∞ where excluded; weights (T, T); mixed (T, d_head);
    out (T, d_model); the mode as "mask"; allowed and blocked_score; and "seal", by which
    attention_backward knows the cache is theirs and unchanged.

    mask is one of MASK_MODES: "causal" (correct), "none" (no mask: the future leaks), "zero" (the
    common bug: future scores set to 0.0 instead of −∞, so the future still gets weight). Raises
    ValueError for an unknown mode, an empty sequence, rows of the wrong width, non-finite numbers,
    misfitting params or a result too large for floats; TypeError for a value of the wrong kind.
    """
    checks.check_forward(params, x, mask)
    T = len(x)
    q, k, v = matmul(x, params["Wq"]), matmul(x, params["Wk"]), matmul(x, params["Wv"])
    allowed = [[True] * T for _ in range(T)] if mask == "none" else causal_mask(T)
    blocked_score = 0.0 if mask == "zero" else -math.inf   # the bug: exp(0.0) = 1 is no mask
    cache = attention_core(q, k, v, allowed, blocked_score)   # scores, weights, mixed: above
    out = matmul(cache["mixed"], params["Wo"])
    # the cache, with a seal: the backward pass refuses it if it or params or x change
    return checks.sealed({**cache, "out": out, "mask": mask}, params, x)


# ---- the backward pass, walking the forward in reverse -----------------------------------------

def attention_core_backward(cache, d_mixed):
    """Gradients of attention_core: cache is what it returned, d_mixed (T, d_v) is dLoss/d(mixed).
    Returns (d_q, d_k, d_v) of q's, k's and v's shapes. Unchecked, as attention_core."""
    q, k, v, allowed, weights, scale = (cache[name] for name in
                                        ("q", "k", "v", "allowed", "weights", "scale"))
    # forward: mixed = weights·v
    d_weights = matmul(d_mixed, transpose(v))
    d_v = matmul(transpose(weights), d_mixed)
    # forward: weights_i = softmax_row(scores_i). Per row, d_scores = a·(da − Σ a·da), times
    # scale for scores = q·kᵀ·scale. A blocked score, and the "zero" bug's 0.0, gets none.
    d_scores = []
    for a_i, da_i, allowed_i in zip(weights, d_weights, allowed):
        a_da = fsum(map(mul, a_i, da_i))
        d_scores.append([a * (da - a_da) * scale if ok else 0.0
                         for a, da, ok in zip(a_i, da_i, allowed_i)])
    # forward: scores = q·kᵀ·scale
    d_q = matmul(d_scores, k)
    d_k = matmul(transpose(d_scores), q)
    return d_q, d_k, d_v


def attention_backward(params, x, cache, d_out):
    """Gradients for one forward pass: d_out (T, d_model) is dLoss/d(out), cache what
    attention_forward returned for (params, x). Returns (grads, d_x): grads has Wq, Wk, Wv, Wo and
    d_x is (T, d_model). Raises ValueError when d_out does not have out's shape or is not finite,
    or the cache is not what attention_forward returned for these params and x."""
    checks.check_backward(params, x, cache, d_out)
    # forward: out = mixed·Wo
    d_Wo = matmul(transpose(cache["mixed"]), d_out)
    d_mixed = matmul(d_out, transpose(params["Wo"]))
    # forward: scores, weights, mixed = attention_core(q, k, v, ...)
    d_q, d_k, d_v = attention_core_backward(cache, d_mixed)
    # forward: q = x·Wq, k = x·Wk, v = x·Wv; x reaches the output along all three paths
    x_t = transpose(x)
    grads = {"Wq": matmul(x_t, d_q), "Wk": matmul(x_t, d_k), "Wv": matmul(x_t, d_v), "Wo": d_Wo}
    d_x = add(matmul(d_q, transpose(params["Wq"])), matmul(d_k, transpose(params["Wk"])),
              matmul(d_v, transpose(params["Wv"])))
    return grads, d_x


# ---- one position at a time: the layer with a cache of keys and values -----------------------

def attention_step(params, x_t, kv):
    """Run the layer on one new position t: x_t is its input row (d_model numbers), kv the cache
    {"k": [...], "v": [...]} of the positions before it, {"k": [], "v": []} at the start. Appends
    this position's key and value to kv and returns its row of every intermediate: q, k, v and
    mixed (d_head each); scores and weights (t + 1 each: positions 0…t); out (d_model).

    x_t goes through the layer's lines as a one-row x, so q, k, v, scores, weights, mixed and out
    are one-row matrices here, and the step returns their row. Row t of the causal mask allows
    positions 0…t and nothing later, and the cache holds exactly those, so no earlier row ever
    changes and none is recomputed. Each number is `==` to row t of attention_forward on x[:t + 1],
    or on the whole x (whose row t has 0.0 after t): the same fsum products, in the same order.

    >>> params = init_attention(d_model=4, d_head=2, seed=11)
    >>> kv = {"k": [], "v": []}
    >>> [round(w, 4) for w in attention_step(params, [-0.75, 0.28, 0.69, 0.22], kv)["weights"]]
    [1.0]
    >>> [round(w, 4) for w in attention_step(params, [0.47, 0.13, -0.97, 0.42], kv)["weights"]]
    [0.5164, 0.4836]
    >>> len(kv["k"]), len(kv["v"])
    (2, 2)

    Each step seals kv (kv["seal"]). Raises ValueError for an x_t of the wrong width or with a
    non-finite number, misfitting params, a kv that this function did not build for these params
    or that was changed since, or a result too large for floats (kv is then as it was); TypeError
    for a value of the wrong kind.
    """
    checks.check_step(params, x_t, kv)
    t = len(kv["k"])                  # this position: kv holds the keys and values of 0…t-1
    q, k, v = matmul([x_t], params["Wq"]), matmul([x_t], params["Wk"]), matmul([x_t], params["Wv"])
    allowed = [[True] * (t + 1)]      # row t of causal_mask: 0…t-1 and t itself, nothing later
    row = attention_core(q, kv["k"] + k, kv["v"] + v, allowed)   # scores, weights, mixed
    out = matmul(row["mixed"], params["Wo"])
    kv["k"].append(k[0])              # only now: a step that raises leaves kv as it was
    kv["v"].append(v[0])
    checks.seal_kv(kv, params)
    return {"q": q[0], "k": k[0], "v": v[0], "scores": row["scores"][0],
            "weights": row["weights"][0], "mixed": row["mixed"][0], "out": out[0]}


# ---- Lab 06: the same core, with a mask of your own (the layer does not use these) ---------------

def masked_softmax(scores, allowed):
    """Lab 06's name for the same softmax: a blocked source (allowed False) becomes −∞ first.

    >>> masked_softmax([1.0, 1.0, 5.0], [True, True, False])
    [0.5, 0.5, 0.0]
    """
    checks.check_masked_softmax(scores, allowed)
    return softmax_row([s if ok else -math.inf for s, ok in zip(scores, allowed)])


def attend(q, k, v, allowed, blocked_score=-math.inf):
    """attention_core with its input checked: the entry point of Lab 06 and of experiments.
    Raises ValueError for a ragged, empty or non-finite matrix, q and k widths that differ, k and v
    counts that differ, a mask of the wrong size or with a non-bool entry, a row with every source
    blocked, a blocked_score that is neither −∞ nor finite, or a score that overflows."""
    checks.check_head(q, k, v, allowed, blocked_score)
    cache = attention_core(*checks.copies(q, k, v, allowed), blocked_score)
    return checks.sealed(cache)


def attend_backward(cache, d_mixed):
    """attention_core_backward with its input checked: cache is what attend returned, d_mixed
    (T, d_v). Returns (d_q, d_k, d_v)."""
    checks.check_core_backward(cache, d_mixed)
    return attention_core_backward(cache, d_mixed)

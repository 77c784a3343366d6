"""One causal self-attention head, forward and backward, written out with lists of lists.

For an input x of T rows (one per position) and d_model columns:

    q = x·Wq,  k = x·Wk,  v = x·Wv                      each (T, d_head)
    scores  = q·kᵀ / √d_head, −∞ where j > i             (T, T)
    weights = softmax of each row of scores              (T, T), later positions exactly 0.0
    mixed   = weights·v                                  (T, d_head)
    out     = mixed·Wo                                   (T, d_model)

The mechanism after projection is one core, `attend(q, k, v, allowed)`, shared by the lesson's layer and by
Lab 06: `allowed[i][j]` is True when query i may attend to source j (the polarity of the boolean
`attn_mask` of PyTorch's scaled_dot_product_attention). A blocked score is −∞ before the softmax and its
weight is exactly 0.0; the work follows the mask, so a blocked pair is never computed at all.

Every sum is `math.fsum`, correctly rounded, so no value depends on the order of summation and skipping a
zero term changes no bit. One head, no batch (a batch is a loop over sequences), no bias, dropout,
normalization or residual. Run the lesson with `python3 trace_attention.py`.
"""

import math
import random
from itertools import chain, compress
from math import fsum
from operator import mul

MASK_MODES = ("causal", "none", "zero")
NEG_INF = -math.inf


# ---- list-of-lists helpers ----------------------------------------------------------------------------

def shape(t):
    """The sizes of a nested list, outermost first: shape([[1, 2, 3], [4, 5, 6]]) -> (2, 3)."""
    sizes = []
    while isinstance(t, list):
        sizes.append(len(t))
        if not t:
            break
        t = t[0]
    return tuple(sizes)


def transpose(a):
    """(n, m) -> (m, n)."""
    return [list(col) for col in zip(*a)]


def dot(a, b):
    """Σ a[n]·b[n], correctly rounded. Raises ValueError when the sum overflows."""
    try:
        return fsum(map(mul, a, b))
    except (OverflowError, ValueError):  # fsum's "intermediate overflow" or an inf − inf
        raise ValueError("a sum of products overflowed: these numbers are too large for floats") from None


def matmul(a, b, spans=None):
    """(n, m)·(m, p) -> (n, p). Raises ValueError naming both shapes when the inner sizes differ.

    With spans, a list of one (first, stop) per row of a, row i sums only over the inner positions
    first ≤ p < stop: the caller knows the terms outside are zeros, and fsum makes leaving them out exact.
    matmul([[1, 2, 3]], [[1], [1], [1]], spans=[(0, 2)]) -> [[3]].
    """
    inner = {len(row) for row in a}
    if len(inner) != 1 or inner.pop() != len(b) or len({len(row) for row in b}) > 1:
        raise ValueError(f"matmul needs (n, m)·(m, p), got {_shape_text(a)}·{_shape_text(b)}")
    cols = transpose(b)
    if spans is None:
        return [[dot(row, col) for col in cols] for row in a]
    return [[dot(row[first:stop], col[first:stop]) for col in cols] for row, (first, stop) in zip(a, spans)]


def _shape_text(a):
    """How an error message shows what came: (2, 3) for a matrix, (2, 3/4) for a ragged one, else its type."""
    if not isinstance(a, list):
        return type(a).__name__
    widths = sorted({len(row) for row in a}) if all(isinstance(r, list) for r in a) else ["?"]
    return f"({len(a)}, {'/'.join(map(str, widths)) or 0})"


# ---- checks at the boundary ---------------------------------------------------------------------------

_PLAIN_NUMBERS = {float, int}


def check_matrix(name, m, cols=None, label=None):
    """Return (rows, cols) of a non-empty rectangular list of lists of finite numbers, or raise.

    `cols` is the width the caller expects; `label` names the rows in the width message
    ("each input row must have 4 numbers, got 3 in row 2"). Raises TypeError for a value of the wrong kind
    and ValueError for an empty, ragged or non-finite matrix.
    """
    if _plain_matrix(m, cols):
        return len(m), len(m[0])
    if not isinstance(m, list):
        raise TypeError(f"{name} must be a list of rows, got {type(m).__name__}")
    if not m:
        raise ValueError(f"{name} is an empty sequence: expected at least one row")
    for i, row in enumerate(m):
        if not isinstance(row, list):
            raise TypeError(f"{name}[{i}] must be a list of numbers, got {type(row).__name__}")
    if cols is None:
        cols = len(m[0])
    if cols == 0:
        raise ValueError(f"{name} rows are empty: expected at least one number per row")
    for i, row in enumerate(m):
        if len(row) != cols:
            raise ValueError(f"each {label or name} row must have {cols} numbers, got {len(row)} in row {i}")
        for j, value in enumerate(row):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name}[{i}][{j}] must be a number, got {type(value).__name__} {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name}[{i}][{j}] must be a finite number, got {value!r}")
    return len(m), cols


def _plain_matrix(m, cols):
    """The common case, settled in one pass: a non-empty list of equal rows of finite ints and floats.
    Anything else goes through check_matrix's checks one by one, for the message."""
    if type(m) is not list or not m or set(map(type, m)) != {list}:
        return False
    widths = set(map(len, m))
    values = list(chain.from_iterable(m))
    return (widths == {cols if cols is not None else len(m[0])} and 0 not in widths
            and set(map(type, values)) <= _PLAIN_NUMBERS and math.isfinite(sum(values)))


def check_allowed(allowed, rows, cols):
    """Raise ValueError unless allowed is a (rows, cols) matrix of bools with a True in every row."""
    if not isinstance(allowed, list) or len(allowed) != rows or any(
            not isinstance(r, list) or len(r) != cols for r in allowed):
        raise ValueError(f"allowed must be a ({rows}, {cols}) matrix of bools, one row per query and one "
                         f"column per source, got {_shape_text(allowed)}")
    for i, row in enumerate(allowed):
        if set(map(type, row)) != {bool}:
            j, entry = next((j, entry) for j, entry in enumerate(row) if type(entry) is not bool)
            raise ValueError(f"allowed[{i}][{j}] must be True or False, got {type(entry).__name__} {entry!r}")
        if not any(row):
            raise ValueError(f"query {i} may attend to no source: allowed[{i}] is all False, expected at least "
                             f"one True (there is no fallback)")


# ---- the attention core -------------------------------------------------------------------------------

def causal_mask(T):
    """(T, T) allowed matrix: position i sees positions 0…i."""
    return [[j <= i for j in range(T)] for i in range(T)]


def no_mask(T, S):
    """(T, S) allowed matrix with nothing blocked."""
    return [[True] * S for _ in range(T)]


def masked_softmax(scores, allowed):
    """Softmax of one row over the allowed sources; a blocked source gets exactly 0.0.

    The largest allowed score is subtracted before exp, so a score of 1e6 does not overflow:
    masked_softmax([0.0, 1000.0, 5.0], [True, True, False]) -> [exp(-1000)/…, 1.0, 0.0].
    Raises ValueError when nothing is allowed or an allowed score is not finite.
    """
    kept = list(compress(scores, allowed))
    if not kept:
        raise ValueError("softmax of a row with every source blocked: expected at least one allowed score")
    if not math.isfinite(sum(kept)):  # a sum of finite scores may overflow too: look at each one
        for j, (s, ok) in enumerate(zip(scores, allowed)):
            if ok and not math.isfinite(s):
                raise ValueError(f"score {j} must be finite where allowed, got {s!r}")
    top = max(kept)
    exps = [math.exp(s - top) if ok else 0.0 for s, ok in zip(scores, allowed)]
    total = fsum(exps)
    return [e / total for e in exps]


def attend(q, k, v, allowed, blocked_score=NEG_INF):
    """Scaled dot-product attention after projection: the core that both labs call.

    q (T, d), k (S, d), v (S, d_v), allowed (T, S) of bool. Returns a dict:
      scores   (T, S)   q_i·k_j / √d where allowed[i][j], blocked_score elsewhere
      weights  (T, S)   softmax of each row of scores
      mixed    (T, d_v) weights·v
      plus what `attend_backward` needs (q, k, v, allowed, blocked_score).

    A blocked pair's score is never computed (that is the work the mask saves); to see every scaled score
    before a mask, call attend with no_mask(T, S), as Lab 06 does for its "scores".
    blocked_score is −∞ for a correct mask. Any finite value (the lesson's "zero" bug passes 0.0) is a
    constant score that still enters the softmax: its source is not blocked at all, only made blind to q·k.
    Raises ValueError for a ragged, empty or non-finite matrix, q and k widths that differ, k and v counts
    that differ, a mask of the wrong size or with a non-bool entry, a row with every source blocked, or a
    score that overflows.
    """
    T, d = check_matrix("q", q)
    S, d_k = check_matrix("k", k)
    S_v, d_v = check_matrix("v", v)
    if d_k != d:
        raise ValueError(f"query and key widths must match: q is ({T}, {d}), k is ({S}, {d_k})")
    if S_v != S:
        raise ValueError(f"keys and values must be as many: k has {S} rows, v has {S_v}")
    check_allowed(allowed, T, S)
    if not (blocked_score == NEG_INF or math.isfinite(blocked_score)):
        raise ValueError(f"blocked_score must be -inf or a finite number, got {blocked_score!r}")

    scores = _dots_where(q, k, allowed, blocked_score, math.sqrt(d))
    for i, row in enumerate(scores):
        for j, s in enumerate(row):
            if allowed[i][j] and not math.isfinite(s):
                raise ValueError(f"score [{i}][{j}] overflowed to {s}: q and k are too large for floats")
    in_softmax = _in_softmax(allowed, blocked_score)
    weights = [masked_softmax(row, ok) for row, ok in zip(scores, in_softmax)]
    mixed = matmul(weights, v, spans=spans(in_softmax))
    return {"q": q, "k": k, "v": v, "allowed": allowed, "blocked_score": blocked_score,
            "scores": scores, "weights": weights, "mixed": mixed}


def attend_backward(head, d_mixed):
    """Gradients of attend: head is what attend returned, d_mixed (T, d_v). Returns (d_q, d_k, d_v).

    Walks attend in reverse. A blocked pair has no weight and no gradient; under a finite blocked_score the
    pair has a weight, so its value gets gradient, but its score is a constant and passes none to q or k.
    """
    q, k, v, allowed, weights = head["q"], head["k"], head["v"], head["allowed"], head["weights"]
    in_softmax = _in_softmax(allowed, head["blocked_score"])

    # forward: mixed = weights·v
    d_weights = _dots_where(d_mixed, v, in_softmax, 0.0, 1.0)
    d_v = matmul(transpose(weights), d_mixed, spans=spans(transpose(in_softmax)))

    # forward: weights_i = softmax(scores_i); per row d_scores = a·(da − Σ a·da). A blocked score, or a
    # constant one, has no gradient.
    d_scores = []
    for a, da, ok in zip(weights, d_weights, allowed):
        a_da = dot(a, da)
        d_scores.append([a_j * (da_j - a_da) if ok_j else 0.0 for a_j, da_j, ok_j in zip(a, da, ok)])

    # forward: scores = q·kᵀ / √d where allowed
    sqrt_d = math.sqrt(len(q[0]))
    d_dots = [[g / sqrt_d for g in row] for row in d_scores]
    d_q = matmul(d_dots, k, spans=spans(allowed))
    d_k = matmul(transpose(d_dots), q, spans=spans(transpose(allowed)))
    return d_q, d_k, d_v


def spans(allowed):
    """For each row, the (first, stop) range from its first to its last allowed entry: the work a row needs.
    For a causal mask, position i sees 0…i: spans(causal_mask(3)) -> [(0, 1), (0, 2), (0, 3)]."""
    result = []
    for row in allowed:
        first = row.index(True) if True in row else 0
        stop = len(row) - row[::-1].index(True) if True in row else 0
        result.append((first, stop))
    return result


def _dots_where(a, b, allowed, fill, divisor):
    """(T, S): a_i·b_j / divisor where allowed[i][j], fill elsewhere; a pair outside the row's span is
    never computed."""
    out = []
    for a_i, ok_row, (first, stop) in zip(a, allowed, spans(allowed)):
        row = [fill] * len(ok_row)
        row[first:stop] = [dot(a_i, b_j) / divisor if ok else fill
                           for b_j, ok in zip(b[first:stop], ok_row[first:stop])]
        out.append(row)
    return out


def _in_softmax(allowed, blocked_score):
    """Which scores enter each row's softmax: the allowed ones, or all of them when blocked scores are finite."""
    return allowed if blocked_score == NEG_INF else no_mask(len(allowed), len(allowed[0]))


# ---- the lesson's layer -------------------------------------------------------------------------------

def init_attention(d_model, d_head, seed):
    """Wq, Wk, Wv of (d_model, d_head) and Wo of (d_head, d_model), drawn in that order, row by row,
    as round(uniform(-0.5, 0.5), 2) from random.Random(seed)."""
    for name, value in (("d_model", d_model), ("d_head", d_head)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    rng = random.Random(seed)

    def draw(rows, cols):
        return [[round(rng.uniform(-0.5, 0.5), 2) for _ in range(cols)] for _ in range(rows)]

    return {"Wq": draw(d_model, d_head), "Wk": draw(d_model, d_head), "Wv": draw(d_model, d_head),
            "Wo": draw(d_head, d_model)}


def check_params(params):
    """Return (d_model, d_head) of a params dict, or raise naming the missing or misfitting matrix."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict with Wq, Wk, Wv and Wo, got {type(params).__name__}")
    missing = [name for name in ("Wq", "Wk", "Wv", "Wo") if name not in params]
    if missing:
        raise ValueError(f"params must have Wq, Wk, Wv and Wo, missing {', '.join(missing)}")
    d_model, d_head = check_matrix("Wq", params["Wq"])
    for name in ("Wk", "Wv"):
        if shape(params[name]) != (d_model, d_head):
            raise ValueError(f"{name} must be (d_model, d_head) = ({d_model}, {d_head}) like Wq, "
                             f"got {_shape_text(params[name])}")
        check_matrix(name, params[name], cols=d_head)
    if shape(params["Wo"]) != (d_head, d_model):
        raise ValueError(f"Wo must be (d_head, d_model) = ({d_head}, {d_model}), got {_shape_text(params['Wo'])}")
    check_matrix("Wo", params["Wo"], cols=d_model)
    return d_model, d_head


def attention_forward(params, x, mask="causal"):
    """Run the layer on x (T, d_model). Returns every intermediate under its own name:

    q, k, v (T, d_head); scores (T, T) as masked, −∞ where excluded; weights (T, T); mixed (T, d_head);
    out (T, d_model); the mode as "mask"; and what attention_backward needs (q, k, v, allowed,
    blocked_score).

    mask is one of MASK_MODES: "causal" (correct), "none" (no mask: the future leaks), "zero" (the common
    bug: future scores set to 0.0 instead of −∞, so the future still gets weight). Raises ValueError for an
    unknown mode, an empty sequence, rows of the wrong width, non-finite numbers or misfitting params, and
    TypeError for a value of the wrong kind.
    """
    if mask not in MASK_MODES:
        raise ValueError(f"mask must be one of {MASK_MODES}, got {mask!r}")
    d_model, _ = check_params(params)
    T, _ = check_matrix("x", x, cols=d_model, label="input")
    q, k, v = matmul(x, params["Wq"]), matmul(x, params["Wk"]), matmul(x, params["Wv"])
    allowed = no_mask(T, T) if mask == "none" else causal_mask(T)
    head = attend(q, k, v, allowed, blocked_score=0.0 if mask == "zero" else NEG_INF)
    out = matmul(head["mixed"], params["Wo"])
    return {**head, "mask": mask, "out": out}


def attention_backward(params, x, cache, d_out):
    """Gradients for one forward pass: d_out (T, d_model) is dLoss/d(out), cache what attention_forward
    returned for (params, x). Returns (grads, d_x): grads has Wq, Wk, Wv, Wo, d_x is (T, d_model).
    Raises ValueError when d_out does not have out's shape or is not finite."""
    d_model, _ = check_params(params)
    T, _ = check_matrix("x", x, cols=d_model, label="input")
    if not isinstance(cache, dict) or any(name not in cache for name in ("q", "weights", "mixed", "allowed")):
        raise ValueError("cache must be the dict attention_forward returned for these params and x")
    if len(cache["q"]) != T:
        raise ValueError(f"cache is for {len(cache['q'])} positions, x has {T}")
    check_matrix("d_out", d_out, cols=d_model, label="d_out")
    if len(d_out) != T:
        raise ValueError(f"d_out must have one row per position ({T}, {d_model}), got {len(d_out)} rows")

    # forward: out = mixed·Wo
    grads = {"Wo": matmul(transpose(cache["mixed"]), d_out)}
    d_mixed = matmul(d_out, transpose(params["Wo"]))
    d_q, d_k, d_v = attend_backward(cache, d_mixed)
    # forward: q = x·Wq, k = x·Wk, v = x·Wv; x reaches the output along all three paths
    xt = transpose(x)
    grads["Wq"], grads["Wk"], grads["Wv"] = matmul(xt, d_q), matmul(xt, d_k), matmul(xt, d_v)
    paths = [matmul(d, transpose(params[name])) for d, name in ((d_q, "Wq"), (d_k, "Wk"), (d_v, "Wv"))]
    d_x = [[fsum(parts) for parts in zip(*rows)] for rows in zip(*paths)]
    return {name: grads[name] for name in ("Wq", "Wk", "Wv", "Wo")}, d_x

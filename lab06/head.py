"""Lab 06's core, with a mask of your own: the lab's names for attention over an explicit
boolean mask, each checked at its door, then computed by core/masked.py's lines.

    masked_softmax(scores, allowed)            one row's softmax, a blocked source (False) −∞ first
    attend(q, k, v, allowed, blocked_score)    raw_scores, scores, weights and mixed of q (T, d),
                                               k (S, d), v (S, d_v) and allowed (T, S)
    attend_backward(cache, d_mixed)            (d_q, d_k, d_v) of what attend returned
    attention(Q, K, V, allowed)                the lab's names for attend's: scores (before the
                                               mask), masked_scores, weights and output

allowed[i][j] is True when query i may attend to source j: the polarity of PyTorch's boolean
`attn_mask` (and the opposite of nn.MultiheadAttention's masks).
"""

import math

from attention import EDITED_CACHE_ADVICE, softmax_row
from common.checks import (PLAIN_NUMBERS, check_matrix, check_number, check_positions,
                           check_sealed, kind, sealed, shape_text)
from core.masked import attention_core, attention_core_backward


def masked_softmax(scores, allowed):
    """Lab 06's name for the same softmax: a blocked source (allowed False) becomes −∞ first.

    >>> masked_softmax([1.0, 1.0, 5.0], [True, True, False])
    [0.5, 0.5, 0.0]
    """
    _check_masked_softmax(scores, allowed)
    return softmax_row([s if ok else -math.inf for s, ok in zip(scores, allowed)])


def attend(q, k, v, allowed, blocked_score=-math.inf):
    """attention_core with its input checked: the entry point of Lab 06 and of experiments.
    Raises ValueError for a ragged, empty or non-finite matrix, q and k widths that differ, k and v
    counts that differ, a mask of the wrong size or with a non-bool entry, a row with every source
    blocked, a blocked_score that is neither −∞ nor finite, or a score that overflows."""
    _check_head(q, k, v, allowed, blocked_score)
    # the cache owns copies: an edit of the caller's lists after attend changes no gradient
    cache = attention_core(*([list(row) for row in m] for m in (q, k, v, allowed)), blocked_score)
    return sealed(cache)


def attend_backward(cache, d_mixed):
    """attention_core_backward with its input checked: cache is what attend returned, d_mixed
    (T, d_v). Returns (d_q, d_k, d_v)."""
    _check_attend_backward(cache, d_mixed)
    return attention_core_backward(cache, d_mixed)


def attention(Q, K, V, allowed):
    """The lab's head under the lab's (and the scaffold's) names: a dict of "scores" (T, S),
    Q·Kᵀ/√d before the mask (attend's "raw_scores"); "masked_scores" (T, S), −∞ where blocked
    (attend's "scores"); "weights" (T, S); "output" (T, d_v) (attend's "mixed"). Raises as attend
    does.

    >>> head = attention([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0], [4.0]],
    ...                  [[True, False], [True, True]])
    >>> head["masked_scores"][0], head["output"][0]
    ([0.7071067811865475, -inf], [2.0])
    """
    cache = attend(Q, K, V, allowed)
    return {"scores": cache["raw_scores"], "masked_scores": cache["scores"],
            "weights": cache["weights"], "output": cache["mixed"]}


# ---- the checks at the doors above, and lab.py's of a mask --------------------------------------

_ATTEND_KEYS = ("q", "k", "v", "allowed", "blocked_score", "scale", "raw_scores", "scores",
                "weights", "mixed")


def _check_bools(name, row):
    """Raise ValueError unless every entry of row is True or False (not 1, 0 or a string)."""
    if set(map(type, row)) != {bool}:
        j, entry = next((j, e) for j, e in enumerate(row) if type(e) is not bool)
        raise ValueError(f"{name}[{j}] must be True or False, got {type(entry).__name__} {entry!r}")


def check_allowed(allowed, rows, cols):
    """Raise ValueError unless allowed is a (rows, cols) matrix of bools, a True in every row."""
    if type(allowed) is not list or len(allowed) != rows or any(
            type(r) is not list or len(r) != cols for r in allowed):
        raise ValueError(f"allowed must be a ({rows}, {cols}) matrix of bools, one row per query "
                         f"and one column per source, got {shape_text(allowed)}")
    for i, row in enumerate(allowed):
        _check_bools(f"allowed[{i}]", row)
        if not any(row):
            raise ValueError(f"allowed[{i}] is all False: that query may attend to no source; "
                             f"expected at least one True in every row (there is no fallback)")


def _check_masked_softmax(scores, allowed):
    """masked_softmax's door: two lists of one non-zero length, bools, finite allowed scores."""
    for name, value in (("scores", scores), ("allowed", allowed)):
        if type(value) is not list:
            raise TypeError(f"masked_softmax needs {name} as a list, got {type(value).__name__}")
    if not scores or len(scores) != len(allowed):
        raise ValueError(f"masked_softmax needs scores and allowed of one non-zero length, got "
                         f"{len(scores)} scores and {len(allowed)} mask entries")
    _check_bools("allowed", allowed)
    if not any(allowed):
        raise ValueError("softmax of a row with every source blocked: expected at least one "
                         "allowed score")
    for j, (s, ok) in enumerate(zip(scores, allowed)):
        if ok:
            check_number(f"score {j + 1}", s, "finite where allowed")


def _check_head(q, k, v, allowed, blocked_score):
    """attend's door: q (T, d), k (S, d), v (S, d_v), allowed (T, S) of bools, blocked_score −∞ or
    a finite number."""
    T, d = check_matrix("q", q)
    S, d_k = check_matrix("k", k)
    S_v, _ = check_matrix("v", v)
    check_positions(max(T, S))          # the scores and weights are (T, S)
    if d_k != d:
        raise ValueError(f"query and key widths must match: q is ({T}, {d}), k is ({S}, {d_k})")
    if S_v != S:
        raise ValueError(f"keys and values must be as many: k has {S} rows, v has {S_v}")
    check_allowed(allowed, T, S)
    if type(blocked_score) not in PLAIN_NUMBERS:
        raise TypeError(f"blocked_score must be -inf or a finite number, got "
                        f"{kind(blocked_score)}")
    if blocked_score != -math.inf:
        check_number("blocked_score", blocked_score, "-inf or a finite number")


def _check_attend_backward(cache, d_mixed):
    """attend_backward's door: a cache attend returned, unchanged since, and d_mixed of its
    mixed's shape."""
    check_sealed(cache, _ATTEND_KEYS, "attend", EDITED_CACHE_ADVICE)
    T, d_v = len(cache["mixed"]), len(cache["mixed"][0])
    check_matrix("d_mixed", d_mixed, cols=d_v, label="d_mixed")
    if len(d_mixed) != T:
        raise ValueError(f"d_mixed must have one row per query ({T}, {d_v}), "
                         f"got {len(d_mixed)} rows")

"""Lab 06's core, with a mask of your own: attention over an explicit boolean mask (T, S), each
door checked, then computed by core/masked.py's lines: masked_softmax (one row), attend and
attend_backward (the core's names), attention (the lab's and the scaffold's names). allowed[i][j]
is True when query i may attend to source j: the polarity of PyTorch's boolean `attn_mask` (and
the opposite of nn.MultiheadAttention's masks).
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
    """attention_core of q (T, d), k (S, d), v (S, d_v) and allowed (T, S), checked at the door.
    Raises ValueError for a ragged, empty or non-finite matrix, sizes that do not fit, a mask entry
    not a bool, an all-False row, a score that overflows, a blocked_score not −∞ or finite."""
    _check_head(q, k, v, allowed, blocked_score)
    # the cache owns copies: an edit of the caller's lists after attend changes no gradient
    cache = attention_core(*([list(row) for row in m] for m in (q, k, v, allowed)), blocked_score)
    return sealed(cache)


def attend_backward(cache, d_mixed):
    """(d_q, d_k, d_v) of what attend returned (cache) and d_mixed (T, d_v), checked."""
    _check_attend_backward(cache, d_mixed)
    return attention_core_backward(cache, d_mixed)


def attention(Q, K, V, allowed):
    """attend under the lab's (and the scaffold's) names: "scores" (T, S) before the mask,
    "masked_scores" (T, S), −∞ where blocked, "weights" (T, S) and "output" (T, d_v).

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
        raise TypeError(f"blocked_score must be -inf or a finite number, got {kind(blocked_score)}")
    if blocked_score != -math.inf:
        check_number("blocked_score", blocked_score, "-inf or a finite number")


def _check_attend_backward(cache, d_mixed):
    check_sealed(cache, _ATTEND_KEYS, "attend", EDITED_CACHE_ADVICE)
    T, d_v = len(cache["mixed"]), len(cache["mixed"][0])
    check_matrix("d_mixed", d_mixed, cols=d_v, label="d_mixed")
    if len(d_mixed) != T:
        raise ValueError(f"d_mixed must have one row per query ({T}, {d_v}), "
                         f"got {len(d_mixed)} rows")

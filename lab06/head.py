"""Lab 06's core, with a mask of your own: the lab's names for attention over an explicit
boolean mask, each checked at its door, then computed by core/masked.py's lines.

    masked_softmax(scores, allowed)            one row's softmax, a blocked source (False) −∞ first
    attend(q, k, v, allowed, blocked_score)    scores, weights and mixed of q (T, d), k (S, d),
                                               v (S, d_v) and allowed (T, S)
    attend_backward(cache, d_mixed)            (d_q, d_k, d_v) of what attend returned
    attention(Q, K, V, allowed)                the lab's names for attend's: scores (before the
                                               mask), masked_scores, weights and output

allowed[i][j] is True when query i may attend to source j: the polarity of PyTorch's boolean
`attn_mask` (and the opposite of nn.MultiheadAttention's masks).
"""

import math

from attention import softmax_row
from common import checks
from core.masked import attention_core, attention_core_backward


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


def attention(Q, K, V, allowed):
    """The lab's head under the lab's (and the scaffold's) names: a dict of "scores" (T, S),
    Q·Kᵀ/√d before the mask; "masked_scores" (T, S), −∞ where blocked (attend's "scores"); "weights"
    (T, S); "output" (T, d_v) (attend's "mixed"). Raises as attend does.

    >>> head = attention([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0]], [[2.0], [4.0]],
    ...                  [[True, False], [True, True]])
    >>> head["masked_scores"][0], head["output"][0]
    ([0.7071067811865475, -inf], [2.0])
    """
    cache = attend(Q, K, V, allowed)
    nothing_blocked = [[True] * len(K) for _ in Q]
    return {"scores": attend(Q, K, V, nothing_blocked)["scores"],
            "masked_scores": cache["scores"], "weights": cache["weights"],
            "output": cache["mixed"]}

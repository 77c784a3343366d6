"""Lab 06's grader, the mistakes learners make: for each intermediate of a head (q (T, d), k (S, d),
v (S, d_v), allowed (T, S)), (mistake, make) pairs, make() the numbers that mistake gives, for
diagnose (compare.py); and hints for what a call raised: "<problem>; this looks like: <mistake>".
"""

import math

from attention import causal_mask, matmul, transpose
from lab06 import lab as lab06
from lab06.compare import is_number, like, number_text
from lab06.head import attend, masked_softmax

HINT = "; this looks like: "


def hinted(problem, mistake):
    """problem, with the mistake it looks like after HINT; problem alone when either is None."""
    return f"{problem}{HINT}{mistake}" if problem and mistake else problem


def _scales(q, k, v):
    """(mistake, divisor) for each scale a learner divides Q·Kᵀ by instead of √d."""
    T, S, d, d_v, d_model = len(q), len(k), len(q[0]), len(v[0]), len(lab06.X[0])
    keys = "the number of keys" + (" (and of queries)" if T == S else "")
    return [(f"the scores are not scaled: divide Q·Kᵀ by √d = √{d}, the width of Q and K", 1.0),
            (f"the scores are multiplied by √d = √{d}, not divided by it", 1 / math.sqrt(d)),
            (f"the scores are divided by d = {d}, not by √d", d),
            (f"the scores are divided by √{S}, {keys}, not by √d = √{d}, the width of Q and K",
             math.sqrt(S))] + [
            (f"the scores are divided by √{T}, the number of queries, not by √d = √{d}, the width "
             f"of Q and K", math.sqrt(T))] * (T != S) + [       # a head that is not square
            (f"the scores are divided by √{d_v}, the width of V, not by √d = √{d}, the width of Q "
             f"and K", math.sqrt(d_v)),
            (f"the scores are divided by √{d_model}, the width of the lab's X or a number written "
             f"in, not by √d = √{d}, the width of this head's Q and K", math.sqrt(d_model))]


def score_mistakes(q, k, v):
    """(mistake, make) for the scores before the mask, of q (T, d), k (S, d) and v (S, d_v)."""
    product = matmul(q, transpose(k))
    return [(mistake, lambda by=by: [[s / by for s in row] for row in product])
            for mistake, by in _scales(q, k, v)]


def answer_mistakes(q, k, v, allowed):
    """(mistake, part, make) for the mistakes the whole answer shows, at its first wrong part."""
    d = len(q[0])
    scaled_up = [[x * math.sqrt(d) for x in row] for row in q]      # scores of Q·Kᵀ unscaled
    return [
        ("the scores are transposed: row i holds query i's scores, Q·Kᵀ and not K·Qᵀ", "scores",
         lambda: [[s / math.sqrt(d) for s in row] for row in matmul(k, transpose(q))]),
        (f"the scale is applied after the softmax: divide the scores by √{d} before it, not the "
         f"weights", "weights",
         lambda: [[w / math.sqrt(d) for w in row] for row in attend(scaled_up, k, v,
                                                                     allowed)["weights"]]),
    ]


TRANSPOSED = "the mask is read as allowed[j][i]: the row is the query, the column the source"
INVERTED = "the mask's polarity is inverted: allowed[i][j] True means query i MAY read source j"
DIGITS_LOST = ("the weights lose digits near −1e10: the difference of two numbers near 1e10 (a "
               "score less a log-sum-exp, say) keeps only about 6 digits; subtract the largest "
               "allowed score first, then divide each exp by their sum")
ZERO_FILL = "blocked scores are set to 0.0 instead of −∞: exp(0) = 1 still gives them weight"
FINITE_FILL = ("a blocked score stood in for by a finite number (such as −1e9), which wins once "
               "the allowed scores are lower still (right near −1e8, wrong near −1e10): use −∞")
HIGH_FILL = ("blocked scores are set to 0.0, or to a finite number such as −10000, instead of −∞: "
             "it wins over allowed scores lower than itself (wrong near −1e8 and near −1e10)")


def masked_score_mistakes(scores, allowed):
    """(mistake, make) for the masked scores, from the right scores before the mask."""
    def masked(keep, blocked_value=-math.inf):
        return [[s if keep(i, j) else blocked_value for j, s in enumerate(row)]
                for i, row in enumerate(scores)]
    square = len(scores) == len(scores[0])
    return [(ZERO_FILL, lambda: masked(lambda i, j: allowed[i][j], 0.0)),
            (INVERTED, lambda: masked(lambda i, j: not allowed[i][j])),
            (TRANSPOSED, lambda: masked(lambda i, j: square and allowed[j][i])),
            ("the mask is not applied: a blocked score must be −∞", lambda: scores),
            ("the masked scores were shifted in place: masked_softmax subtracted the row's largest "
             "score from the list it was given, attention's own; work on a copy",
             lambda: [[s - max(t for t, ok in zip(row, oks) if ok) if ok else -math.inf
                       for s, ok in zip(row, oks)] for row, oks in zip(scores, allowed)])]


def finite_stand_in(got, scores, allowed):
    """The mistake when got is scores masked with one finite number (mask inverted too), or None."""
    inverted = _stand_in(got, scores, [[not ok for ok in row] for row in allowed])
    return _stand_in(got, scores, allowed) or (inverted and f"{INVERTED}; and {inverted}")


def _stand_in(got, want, allowed):
    if type(got) is not list or len(got) != len(want) or any(
            type(row) is not list or len(row) != len(want_row) for row, want_row in zip(got, want)):
        return None                       # mismatch has said what came instead
    blocked = [g for got_row, ok_row in zip(got, allowed) for g, ok in zip(got_row, ok_row)
               if not ok]
    if not blocked or not all(is_number(g) and math.isfinite(g) for g in blocked) or \
            len(set(blocked)) != 1 or blocked[0] == 0.0:
        return None

    def allowed_only(matrix):
        return [[x for x, ok in zip(row, ok_row) if ok] for row, ok_row in zip(matrix, allowed)]

    if like(allowed_only(got), allowed_only(want)):
        return (f"a blocked score stood in for by a finite number ({number_text(blocked[0])}) "
                f"instead of −∞: it gets weight once the allowed scores are lower still")
    return None


def weight_mistakes(q, k, v, allowed):
    """(mistake, make) for the weights of a head."""
    d = len(q[0])

    def weights(q=q, allowed=allowed, blocked_score=-math.inf):
        return attend(q, k, v, allowed, blocked_score)["weights"]

    return [
        ("the mask is applied after the softmax and the rows are not renormalised (they sum to "
         "less than 1): softmax over the allowed sources only",
         lambda: lab06.buggy_post_softmax(q, k, v, allowed)[0]),
        ("the mask is not applied: a blocked source must get weight 0.0",
         lambda: weights(allowed=[[True] * len(k) for _ in q])),
        ("the softmax is taken over each column (over the destinations); take it over each row, "
         "over the sources one query may read",
         lambda: lab06.softmax_over_destinations(q, k, v, allowed)[0]),
        (ZERO_FILL, lambda: weights(blocked_score=0.0)),
        ("a blocked score stood in for by a finite number (such as −1e9), which wins once the "
         "allowed scores are lower still: use −∞", lambda: weights(blocked_score=-1e9)),
        (INVERTED, lambda: weights(allowed=[[not ok for ok in row] for row in allowed])),
        (TRANSPOSED, lambda: weights(allowed=transpose(allowed))),
        ("the mask given is ignored for a causal mask of its own: use allowed as it comes",
         lambda: weights(allowed=causal_mask(len(q)))),
    ] + [(f"the softmax is not taken of the scores returned: {mistake}",   # they passed first
          lambda by=by: weights([[x * (math.sqrt(d) / by) for x in row] for row in q]))
         for mistake, by in _scales(q, k, v)]


def output_mistakes(weights, k, v):
    """(mistake, make) for the output, from the right weights."""
    return [("the mixture takes A's columns: z_i = Σ_j a_ij·v_j is A·V, not Aᵀ·V",
             lambda: matmul(transpose(weights), v)),
            ("the weights mix K, not V", lambda: matmul(weights, k))]


def softmax_row_mistakes(scores, allowed):
    """(mistake, make) for masked_softmax's answer on one row, each made a matrix of one row."""
    unmasked = masked_softmax(scores, [True] * len(scores))
    return [("a softmax over every source with the blocked ones zeroed after it: the row is not "
             "renormalised", lambda: [[w if ok else 0.0 for w, ok in zip(unmasked, allowed)]]),
            ("the blocked sources keep their weight: take the softmax over the allowed ones only",
             lambda: [unmasked]),
            (ZERO_FILL, lambda: [masked_softmax(
                [s if ok else 0.0 for s, ok in zip(scores, allowed)], [True] * len(scores))])]


def on_the_lab_head(reply):
    """The hint when attention raises on the lab's own head, which is valid."""
    if reply.kind == "ValueError":
        T, d = len(lab06.X), len(lab06.WQ[0])
        return (f"the lab's head is valid input: is a check wrong, K not transposed (Q·Kᵀ: Q is "
                f"({T}, {d}) and Kᵀ ({d}, {T}); Q·K does not fit), or the mask's polarity "
                f"inverted (allowed[i][j] True means query i MAY read source j)?")
    if reply.error == "ZeroDivisionError":
        return ("a row's sum of exponentials is 0: does the mask block every source of a row "
                "(its polarity inverted?), or exp underflow for every allowed score?")
    return None


def refused_shape(shape, v_width):
    return lambda reply: (f"this head is valid: the mask is (number of queries, number of "
                          f"sources) = {shape} and need not be square, A is {shape} and Z = A·V "
                          f"is {shape}·({shape.split(', ')[1][:-1]}, {v_width}); does a check or "
                          f"a product assume a square head?"
                          if reply.kind not in ("NotImplementedError", "BaseException") else None)


def _not_finite(value):
    """"∞" or "NaN" for the first +∞ or NaN in an answer, else None."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        if found := _not_finite(item):
            return found
    if isinstance(value, float) and (math.isnan(value) or value == math.inf):
        return "NaN" if math.isnan(value) else "∞"
    return None


def _exp_trouble(reply):
    """What the exponentials did, as the error or the answer shows it, in a few words; or None."""
    if reply.error == "OverflowError" or _not_finite(reply.value) == "∞":
        return "an exp overflowed"
    if reply.error == "ZeroDivisionError":
        return "every exp underflowed to 0, and their sum with them"
    if _not_finite(reply.value) == "NaN":
        return "a NaN came out"
    return None


def _when_exp_trouble(hint):
    """The hint for a reply whose exponentials went wrong, {} what they did; else None."""
    return lambda reply: (trouble := _exp_trouble(reply)) and hint.format(trouble)


no_shift = _when_exp_trouble("no shift, or not by the largest allowed score: {}; subtract the "
                             "largest allowed score before exp")
shift_not_largest = _when_exp_trouble("the shift is not the largest allowed score: {}; subtract "
                                      "the largest, 1000 here, so that no exp is above 1")
large_scores = _when_exp_trouble("no shift by the largest allowed score: {} (exp(1000.7) alone "
                                 "overflows)")


def shift_over_blocked(reply):
    if (trouble := _exp_trouble(reply)) and "overflow" in trouble:
        return shift_not_largest(reply)
    if trouble or reply.failure is None:
        return ("the shift is the largest of every score, blocked ones too"
                + (f": {trouble}" if trouble else "") + "; subtract the largest allowed score")
    return None

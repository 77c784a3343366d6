"""Lab 06's grader, the checks: lab_checks(seed) for the lab's head (those the scaffold lists),
experiment_checks(head, changes) for a learner's own; each a (name, check), check(learner) None
when the file passes, else what is wrong and the mistake it looks like. Probe heads (WIDE, ...)
catch what the lab's head cannot; cases drawn afresh from the seed, what a file could know ahead.
"""

import math
import random

from attention import matmul
from lab06 import lab as lab06
from lab06.compare import came, diagnose, dict_problem, like, mismatch, number_text, row_mismatch
from lab06.head import attend, attention, masked_softmax
from lab06.mistakes import (DIGITS_LOST, FINITE_FILL, HIGH_FILL, answer_mistakes, finite_stand_in,
                            hinted, large_scores, masked_score_mistakes, no_shift, on_the_lab_head,
                            output_mistakes, refused_shape, score_mistakes, shift_not_largest,
                            shift_over_blocked, softmax_row_mistakes, weight_mistakes)

ARGUMENTS = {"matmul": ("left", "right"), "masked_softmax": ("scores", "allowed"),
             "attention": ("Q", "K", "V", "allowed")}
SOFTMAX_PROBE = ([0.0, math.log(2), math.log(2)], [True, True, False])   # check 7's row
# arguments of a shape no check asks about: a function that answers them as it answered others
# reads nothing it is given
UNLIKE_ANY = {"matmul": ([[2.0]], [[3.0]]), "masked_softmax": ([5.0], [True]),
              "attention": ([[1.0]], [[1.0]], [[5.0]], [[True]])}


def _edit_problem(function, reply):
    """What a call changed of its caller's arguments, or None: said before its numbers."""
    names = ARGUMENTS[function]
    edited = [names[n] for n in reply.edited if type(n) is int and 0 <= n < len(names)]
    return (f"{function} edited its inputs in place ({', '.join(edited)} changed): work on "
            f"copies" if edited else None)


def _softmax_edits(learner):
    """The hint when masked_softmax edits the row it is given: attention's own rows change too."""
    return _edit_problem("masked_softmax", learner.call("masked_softmax", *SOFTMAX_PROBE)) and (
        "masked_softmax edits the scores it is given (masked_softmax(scores, allowed) changed "
        "scores): the rows attention hands it change with it; work on a copy")


def _same_answer(learner, function, reply):
    """The mistake when reply, a wrong answer, is what function gave its first arguments and gives
    UNLIKE_ANY's too: it answers whatever it is given."""
    first = next((kept for (name, _), kept in learner.kept.items()
                  if name == function and kept.failure is None), reply)
    if first is not reply and first.value == reply.value and \
            learner.call(function, *UNLIKE_ANY[function]).value == reply.value:
        return (f"{function} returns the same answer whatever it is given: compute each answer "
                f"from the arguments of its own call")
    return None


def _product(learner, left, right, want):
    reply = learner.call("matmul", left, right)
    problem = reply.failure or _edit_problem("matmul", reply)
    wrong = not problem and mismatch(reply.value, want, "the product")
    return problem or hinted(wrong, wrong and _same_answer(learner, "matmul", reply))


def _part(learner, args, part, want, mistakes=(), blocked=None, blocked_value=None,
          when_raised=None):
    """One part of attention's answer on args against want: None, or what is wrong and its hint."""
    reply = learner.call("attention", *args)
    if reply.failure:
        return hinted(reply.failure, when_raised and when_raised(reply))
    if problem := _edit_problem("attention", reply) or dict_problem(reply.value):
        return problem
    got = reply.value[part]
    problem = mismatch(got, want, part, blocked, blocked_value)
    mistake = problem and (
        _same_answer(learner, "attention", reply) or _seen_in(reply.value, args)
        or (mistakes(got) if callable(mistakes) else diagnose(got, want, mistakes))
        or _softmax_edits(learner))
    return hinted(problem, mistake)


def _seen_in(answer, args):
    """The mistake of answer_mistakes that attention's whole answer on args shows, or None."""
    for mistake, part, make in answer_mistakes(*args):
        made = make()
        if like(answer[part], made) and not like(attention(*args)[part], made):
            return mistake
    return None


def _row(learner, scores, allowed, want, when_wrong=None):
    """masked_softmax(scores, allowed) against want; when_wrong(reply) names a mistake."""
    reply = learner.call("masked_softmax", scores, allowed)
    problem = reply.failure or _edit_problem("masked_softmax", reply) or row_mismatch(
        reply.value, want, [not ok for ok in allowed])
    mistake = problem and not reply.failure and (
        _same_answer(learner, "masked_softmax", reply)
        or diagnose([reply.value], [want], softmax_row_mistakes(scores, allowed)))
    return hinted(problem, mistake or (when_wrong and when_wrong(reply)))


def _rejects(learner, function, args, what, type_error_too=False):
    """None when function(*args), or each of a list of (label, args), raises ValueError."""
    for label, one in args if isinstance(args, list) else [(None, args)]:
        reply = learner.call(function, *one)
        if reply.kind == "ValueError" or (type_error_too and reply.kind == "TypeError"):
            continue
        case = what + (f" ({label})" if label else "")
        if reply.failure is None:
            return f"expected ValueError for {case}, but it returned {came(reply.value)}"
        if reply.kind in (None, "NotImplementedError", "BaseException"):
            return reply.failure
        return f"expected ValueError for {case}, but {reply.failure}"
    return None


def _unchanged(learner, function, args):
    reply = learner.call(function, *args)
    return reply.failure or _edit_problem(function, reply)


# Probe heads: (q, k, v, allowed), each a mistake's witness.
WIDE = ([[1.0, 0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 0.0, 0.0]],
        [[1.0, 0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 1.0, 0.0],
         [0.0, 0.0, 1.0, 1.0, 1.0]],
        [[float(i)] * 6 for i in range(1, 5)],        # √5, √4 keys, √3 queries, √6 of V, √2 of X
        [[True] * 4] * 3)
NON_SQUARE = ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
              [[2.0, 0.0, 1.0], [0.0, 4.0, 1.0], [1.0, 1.0, 3.0]],   # values 3 wide, Q and K 2
              [[True, True, False], [True, True, True]])
TALL = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
RECTANGLE = [[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]]
MIXED_MASK = [[True, False, True], [False, True, True], [True, True, False]]
FUTURE_ABOVE = ([[1.0], [1.0]], [[0.0], [1000.0]], [[1.0], [2.0]], [[True, False], [True, True]])
NEAR_MINUS_1E10 = ([[-1e5], [-1e5]], [[1e5], [1e5]], [[1.0], [2.0]], [[True, False], [True, True]])
NEAR_MINUS_1E8 = ([[-1e4], [-1e4]], [[1e4], [1e4]], [[1.0], [2.0]], [[True, False], [True, True]])


def _fill_probe(learner):
    """The weights near −1e10, where a blocked score of 0.0 and a fill of −1e9 go equally wrong;
    near −1e8 the fill still loses, which tells them apart."""
    want = _want(NEAR_MINUS_1E10)

    def mistake(got):
        if like(got, want["weights"]) and all(w == 0.0 for row, blocked in zip(got, want["blocked"])
                                              for w, b in zip(row, blocked) if b):
            return DIGITS_LOST        # near, not within 1e-9: digits lost, no mistake of the mask
        if not like(got, attend(*NEAR_MINUS_1E10, blocked_score=0.0)["weights"]):
            return diagnose(got, want["weights"], weight_mistakes(*NEAR_MINUS_1E10))
        return HIGH_FILL if _all_parts(learner, NEAR_MINUS_1E8, parts=["weights"]) else FINITE_FILL

    return _part(learner, NEAR_MINUS_1E10, "weights", want["weights"], mistake, want["blocked"],
                 0.0)


def _want(head_args):
    """attention(q, k, v, allowed) of ours, and where the mask blocks."""
    return {**attention(*head_args), "blocked": [[not ok for ok in row] for row in head_args[3]]}


PARTS = ("scores", "masked_scores", "weights", "output")     # attention's answer, in its order


def _intermediates(args):
    """[(part, want, mistakes, blocked, blocked_value)] for each of PARTS, as _part takes them."""
    q, k, v, allowed = args
    want = _want(args)

    def masked_mistake(got):
        return finite_stand_in(got, want["scores"], allowed) or diagnose(
            got, want["masked_scores"], masked_score_mistakes(want["scores"], allowed))

    return [("scores", want["scores"], score_mistakes(q, k, v), None, None),
            ("masked_scores", want["masked_scores"], masked_mistake, want["blocked"], -math.inf),
            ("weights", want["weights"], weight_mistakes(q, k, v, allowed), want["blocked"], 0.0),
            ("output", want["output"], output_mistakes(want["weights"], k, v), None, None)]


def _all_parts(learner, args, when_raised=None, parts=PARTS):
    """The parts of attention's answer on args, in that order: the first that differs, or None."""
    for part, *judged in _intermediates(args):
        if problem := part in parts and _part(learner, args, part, *judged, when_raised):
            return problem
    return None


def drawn(seed):
    """What one grading draws afresh from seed: a product, a row for masked_softmax and two heads,
    numbers multiples of 1/2 (1/4 in the row), a source allowed in every row; the second head
    larger than any other the grader asks about (up to 12 × 12, 8 wide, numbers to ±12)."""
    rng = random.Random(seed)

    def matrix(rows, columns, top=4):
        return [[rng.randint(-top, top) / 2 for _ in range(columns)] for _ in range(rows)]

    def mask(rows, columns):
        allowed = [[rng.random() < 0.6 for _ in range(columns)] for _ in range(rows)]
        for row in allowed:
            row[rng.randrange(columns)] = True
        return allowed

    n, m, p = (rng.randint(1, 4) for _ in range(3))
    width = rng.randint(2, 5)
    row = ([rng.randint(-8, 8) / 4 for _ in range(width)], mask(1, width)[0])
    heads = []
    for sizes, top in ((((1, 4), (2, 5), (1, 4), (1, 4)), 4),
                       (((9, 12), (7, 12), (6, 8), (2, 8)), 24)):
        T, S, d, d_v = (rng.randint(*size) for size in sizes)
        heads.append((matrix(T, d, top), matrix(S, d, top), matrix(S, d_v, top), mask(T, S)))
    return {"product": (matrix(n, m), matrix(m, p)), "row": row, "heads": heads}


def _afresh(problem, what, seed):
    """problem, said of a case drawn afresh, with the seed that draws it again."""
    return problem and (f"on {what} drawn afresh with seed {seed} (--seed {seed} draws it "
                        f"again): {problem}")


def _drawn_heads(learner, heads, seed):
    for q, k, v, allowed in heads:
        if problem := _all_parts(learner, (q, k, v, allowed)):
            return _afresh(problem, f"a head of {len(q)} quer{'y' if len(q) == 1 else 'ies'} and "
                           f"{len(k)} sources, Q and K {len(q[0])} wide, V {len(v[0])} wide", seed)
    return None


def lab_checks(seed=0):
    """[(name, check)] for the lab's head: the computation in its order, then the interventions, the
    rejections and the optional checks; three also draw cases from seed, named alike for any."""
    q, k, v, allowed = lab = lab06.projected()
    fresh = drawn(seed)
    want = _want(lab)
    ln2 = math.log(2)

    def baseline(part):
        return lambda learner: _all_parts(learner, lab, on_the_lab_head, [part])

    def intervention(change):
        args = lab06._inputs_of(lab06.run(lab06.HEAD, [change]))
        return lambda learner: _all_parts(learner, args)

    def rejects(what, args, type_error_too=False):
        return (f"attention rejects {what}",
                lambda learner: _rejects(learner, "attention", args, what, type_error_too))

    def edited(name, at, value):        # the lab's (Q, K, V, allowed), one entry replaced
        matrices = [[list(row) for row in m] for m in (q, k, v)]
        matrices["QKV".index(name)][at[0]][at[1]] = value
        return (*matrices, allowed)

    def not_finite(name):
        """NaN, ∞ and −∞ in turn, one in each row of Q, K or V: each must be refused."""
        rows = {"Q": q, "K": k, "V": v}[name]
        bad = (math.nan, math.inf, -math.inf)
        return rejects(f"a {dict(Q='query', K='key', V='value')[name]} that is not finite",
                       [(f"{number_text(bad[i % 3])} in {name} row {i + 1}",
                         edited(name, (i, i % len(row)), bad[i % 3]))
                        for i, row in enumerate(rows)])

    def ragged(matrix):                 # a copy, its second row cut to one entry
        return [list(row[:1] if i == 1 else row) for i, row in enumerate(matrix)]

    checks = [
        ("matmul: Q = X·WQ", lambda learner: _product(learner, lab06.X, lab06.WQ, q)),
        ("matmul: K = X·WK", lambda learner: _product(learner, lab06.X, lab06.WK, k)),
        ("matmul: V = X·WV", lambda learner: _product(learner, lab06.X, lab06.WV, v)),
        ("matmul: a (2, 3)·(3, 2) product, then one drawn afresh", lambda learner: _product(
            learner, RECTANGLE, TALL, matmul(RECTANGLE, TALL)) or _afresh(_product(
                learner, *fresh["product"], matmul(*fresh["product"])), "a product", seed)),
        ("baseline scores = Q·Kᵀ/√2, before the mask", baseline("scores")),
        ("baseline masked_scores: −∞ where blocked", baseline("masked_scores")),
        ("masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0], then a row "
         "drawn afresh",
         lambda learner: _row(learner, *SOFTMAX_PROBE, [1 / 3, 2 / 3, 0.0])
         or _afresh(_row(learner, *fresh["row"], masked_softmax(*fresh["row"])), "a row", seed)),
        ("masked_softmax: [−1000, −1000 + ln 2] -> [1/3, 2/3], which needs a shift",
         lambda learner: _row(learner, [-1000.0, -1000.0 + ln2], [True, True],
                              masked_softmax([-1000.0, -1000.0 + ln2], [True, True]), no_shift)),
        ("masked_softmax: [0, 1000] -> [0, 1], which needs the largest allowed score as the shift",
         lambda learner: _row(learner, [0.0, 1000.0], [True, True], [0.0, 1.0], shift_not_largest)),
        ("masked_softmax: [0, ln 2, 1000] with the last blocked -> [1/3, 2/3, 0]",
         lambda learner: _row(learner, [0.0, ln2, 1000.0], [True, True, False],
                              [1 / 3, 2 / 3, 0.0], shift_over_blocked)),
        ("baseline weights: rows sum to 1, exactly 0.0 where blocked", baseline("weights")),
        ("weights with allowed = [[T, F, T], [F, T, T], [T, T, F]]",
         lambda learner: _all_parts(learner, (q, k, v, MIXED_MASK), parts=["weights"])),
        ("weights when a blocked (future) score is 1000 above the allowed one",
         lambda learner: _all_parts(learner, FUTURE_ABOVE, shift_over_blocked, ["weights"])),
        ("weights when every score is near −1e10: a blocked source still gets none", _fill_probe),
        ("baseline output = weights·V", baseline("output")),
        ("scores of a head of 3 queries and 4 keys of width 5: Q·Kᵀ/√5",
         lambda learner: _all_parts(learner, WIDE, refused_shape("(3, 4)", 6), ["scores"])),
        ("a head of 2 queries and 3 sources, then two heads drawn afresh: scores, "
         "masked_scores, weights and output",
         lambda learner: _all_parts(learner, NON_SQUARE, refused_shape("(2, 3)", 3))
         or _drawn_heads(learner, fresh["heads"], seed)),
    ]
    checks += [(f"{lab06.TITLES[key]}, every intermediate", intervention(change))
               for key, change in lab06.INTERVENTIONS.items()]
    checks += [
        ("matmul rejects (1, 3)·(2, 1)", lambda learner: _rejects(
            learner, "matmul", ([[1.0, 2.0, 3.0]], [[1.0], [2.0]]), "inner sizes that differ")),
        ("matmul rejects a ragged matrix", lambda learner: _rejects(
            learner, "matmul", ([[1.0, 2.0], [3.0]], [[1.0], [2.0]]), "a ragged matrix")),
        ("masked_softmax rejects a row with nothing allowed, an empty one too",
         lambda learner: _rejects(
             learner, "masked_softmax", [("both sources blocked", ([1.0, 2.0], [False, False])),
                                         ("no source at all: masked_softmax([], [])", ([], []))],
             "a row with nothing allowed (no fallback is invented)")),
        ("masked_softmax rejects a mask of another length", lambda learner: _rejects(
            learner, "masked_softmax", [("3 scores, 1 mask entry", ([1.0, 2.0, 3.0], [True])),
                                        ("1 score, 2 mask entries", ([1.0], [True, False]))],
            "scores and a mask of different lengths")),
        rejects("a ragged matrix", [("a ragged Q", (ragged(q), k, v, allowed)),
                                    ("a ragged K", (q, ragged(k), v, allowed)),
                                    ("a ragged V", (q, k, ragged(v), allowed))]),
        rejects("an empty matrix", [("no queries", ([], k, v, [])),
                                    ("rows of width 0", ([[]] * 3, [[]] * 3, v, allowed))]),
        rejects("query and key widths that differ", (q, [[1.0, 0.0, 0.0]] * 3, v, allowed)),
        rejects("key and value counts that differ", (q, k, v[:2], allowed)),
        rejects("a mask of the wrong size", [
            ("2 rows for 3 queries", (q, k, v, [[True, False], [True, True]])),
            ("a row of 2 for 3 sources", (q, k, v, [[True, False, False], [True, True],
                                                    [True, True, True]])),
            ("4 rows for 3 queries", (q, k, v, allowed + [[True, True, True]])),
            ("a row of 4 for 3 sources", (q, k, v, [[True, False, False, False],
                                                    [True, True, False], [True, True, True]]))]),
        rejects("a mask entry that is not a bool",
                (q, k, v, [[True, False, False], [1, True, False], [True, True, True]]), True),
        rejects("a row with every source blocked", (q, k, v, [[True, False, False], [False] * 3,
                                                             [True, True, True]])),
        *(not_finite(name) for name in "QKV"),
        rejects("scores that overflow to infinity", ([[1e200, 1e200]] * 3, [[1e200, 1e200]] * 3,
                                                     v, allowed)),
        ("masked_softmax leaves scores and allowed as they were",
         lambda learner: _unchanged(learner, "masked_softmax", SOFTMAX_PROBE)),
        ("attention leaves Q, K, V and allowed as they were",
         lambda learner: _unchanged(learner, "attention", lab)),
        ("the baseline comes out the same when run again", lambda learner: _again(learner, lab)),
        ("optional: adding [1, −2] to every value shifts each output by [1, −2]",
         intervention(lab06.shift_values(lab06.VALUE_SHIFT))),
        ("optional: adding 1000 to every score keeps the weights [1/4, 1/4, 1/2]",
         lambda learner: _row(learner, [s + lab06.SCORE_OFFSET for s in want["scores"][2]],
                              [True] * 3, want["weights"][2], large_scores)),
    ]
    return checks


def _again(learner, args):
    runs = [learner.call("attention", *args, fresh=fresh) for fresh in (False, True)]
    parts = [{part: run.value.get(part) for part in PARTS} if isinstance(run.value, dict)
             else run.value for run in runs]      # a key beyond PARTS is the file's own affair
    return runs[0].failure or runs[1].failure or (None if parts[0] == parts[1] else (
        "a second run gave other numbers: does the function keep state between calls?"))


def experiment_checks(head, changes=()):
    """[(name, check)] for a head of your own and changes of Q, K, V and the mask: the projections,
    then every intermediate of the baseline and after the changes."""
    q, k, v, _ = lab06.projected(head)
    checks = [(f"matmul: {name} = X·W{name}", lambda learner, w=head[f"W{name}"], want=want:
               _product(learner, head["X"], w, want))
              for name, want in (("Q", q), ("K", k), ("V", v)) if name != "V" or "V" not in head]
    runs = [("baseline", lab06.run(head))]
    if changes:
        runs.append((f"after {'; '.join(c.description for c in changes)}",
                     lab06.run(head, changes)))
    titles = {"scores": f"scores = Q·Kᵀ/√{len(q[0])}, before the mask",
              "masked_scores": "masked_scores, −∞ where blocked",
              "weights": "weights, exactly 0.0 where blocked", "output": "output = weights·V"}
    for label, run in runs:
        args = lab06._inputs_of(run)
        checks += [(f"{label}: {titles[part]}",
                    lambda learner, a=args, p=part, j=judged: _part(learner, a, p, *j))
                   for part, *judged in _intermediates(args)]
    return checks

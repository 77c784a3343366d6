"""Lab 06's head and its experiments, the library perturb_attention.py and the grader share; it
prints nothing. The head: X = [[1, 0], [0, 1], [1, 1]], WQ = I, WK = c·I with c = √2·ln 2 (every
score a multiple of ln 2), WV = [[2, 0], [0, 4]], a causal mask; one head, after projection only.
Row indices in the records are 0-based, as the lab's spec fixes them, each list beside its labels
counted from 1 (a₃, z₃); the lab's names (v₂, q₃) and the interventions' positions count from 1.
Each intervention starts from fresh copies of Q, K, V and the mask and changes only what it names;
every number goes through `attend`, the core the lesson's layer uses. lab06.attention gives the
core's numbers the lab's names ("scores" before the mask, "masked_scores", "output").

    projected(head)                   fresh Q, K, V and mask of a head (the lab's by default)
    run(head, changes)                every intermediate of a head after changes, from fresh copies
    baseline(head)                    Q, K, V, scores, masked_scores, weights, output
    buggy_post_softmax(q, k, v, allowed)          the bug's (weights, output)
    softmax_over_destinations(q, k, v, allowed)   the other axis: each column's softmax
    intervene(changes, base, head)    one intervention on fresh copies, compared with the baseline
    lab()                             everything perturb-trace.json records
    read_head(path), with_values(head, values)    a head of your own; values of your own
    ablate_value(j), set_query(i, values), scale_key(j, c), block(i, j), shift_values(shift)
                                      changes of Q, K, V or the mask, positions counted from 1
    offset_scores(i, c), scale_scores(i, c), set_weights(i, weights)
                                      changes of row i's scores or weights
    experiment(head, changes, bugs)   a head, one intervention made of changes, and the bugs

Changes of Q, K, V and the mask come first, in the order given, then attend; a score change redoes
its row's softmax, a weight change the mixture; the bugs follow the first kind alone.
"""

import math
import os
import re
from fractions import Fraction
from math import fsum

from attention import causal_mask, matmul, softmax_row, transpose
from common.checks import MAX_POSITIONS, check_matrix, check_number, float_of, kind, said
from lab06.head import attend, attention, check_allowed, masked_softmax
from common.golden import changed_rows
from common.safe_io import read_json
from common.views import MAX_TOKENS, TOLERANCE, exact_fraction, number, subscript

# kept exact in floating point, not rounded: the scores come out as ln 2 · X·Xᵀ
C = math.sqrt(2) * math.log(2)
X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
WQ = [[1.0, 0.0], [0.0, 1.0]]
WK = [[C, 0.0], [0.0, C]]
WV = [[2.0, 0.0], [0.0, 4.0]]
HEAD = {"X": X, "WQ": WQ, "WK": WK, "WV": WV, "allowed": causal_mask(len(X))}

VALUE_SHIFT = [1.0, -2.0]             # the optional checks: one vector added to every value,
EQUAL_MIXTURE_VALUES = [[2.0, 0.0], [2.0, 0.0], [4.0, 0.0]]    # two maps with one mixture,
EQUAL_MIXTURE_WEIGHTS = ([0.25, 0.25, 0.5], [0.375, 0.125, 0.5])
SCORE_OFFSET = 1000.0                 # and a constant added to every allowed score
DIGITS = 10                           # perturb-trace.json rounds every number to 10 decimals
MAX_WIDTH = MAX_TOKENS                # the widest head read from a file: d_model, d_head, V's
MAX_HEAD_POSITIONS = 128              # its most positions: a dozen (T, T) maps; views: MAX_TOKENS


def projected(head=HEAD):
    """Fresh Q = X·WQ, K = X·WK, V = X·WV (or the head's own "V") and a copy of the allowed mask:
    new lists on every call. The lab's head by default: each (3, 2), and the causal (3, 3) mask.
    Raises ValueError for a head without one of them, and as matmul does."""
    if not isinstance(head, dict):
        raise TypeError(f"a head is a dict with X, WQ, WK, WV (or V) and allowed, got "
                        f"{type(head).__name__}")
    needed = ("X", "WQ", "WK", "V" if "V" in head else "WV", "allowed")
    if any(key not in head for key in needed):
        missing = [key for key in needed if key not in head]
        raise ValueError(f"a head is a dict with X, WQ, WK, WV (or V) and allowed; missing "
                         f"{', '.join(missing)}")
    v = ([list(row) for row in head["V"]] if "V" in head else matmul(head["X"], head["WV"]))
    return (matmul(head["X"], head["WQ"]), matmul(head["X"], head["WK"]), v,
            [list(row) for row in head["allowed"]])


def everything_allowed(q, k):
    """The (T, S) mask that blocks nothing: what a run without a mask attends with."""
    return [[True] * len(k) for _ in q]


def buggy_post_softmax(q, k, v, allowed):
    """The deliberate bug: softmax over every source, then zero the blocked weights without
    renormalizing. Returns (weights, output). The future has already entered each row's
    denominator. Raises ValueError as attend does, for the mask too."""
    check_allowed(allowed, len(q), len(k))
    unmasked_weights = attend(q, k, v, everything_allowed(q, k))["weights"]
    weights = [[w if ok else 0.0 for w, ok in zip(row, allowed_row)]
               for row, allowed_row in zip(unmasked_weights, allowed)]
    return weights, matmul(weights, v)


def softmax_over_destinations(q, k, v, allowed):
    """The softmax taken over the wrong axis: each column's, over the destinations (queries)
    allowed to read that source, so that each column sums to 1 and the rows do not. A source that
    no query may read gets no weight. Returns (weights, output)."""
    masked_scores = attend(q, k, v, allowed)["scores"]
    columns = [masked_softmax(column, ok) if any(ok) else [0.0] * len(column)
               for column, ok in zip(transpose(masked_scores), transpose(allowed))]
    weights = transpose(columns)
    return weights, matmul(weights, v)


BUGS = {"post-softmax": ("buggy_post_softmax", buggy_post_softmax),
        "destinations": ("softmax_over_destinations", softmax_over_destinations)}


def _stage(change):
    return getattr(change, "stage", "inputs")


def checked_changes(changes):
    """changes as a list, each made by one of this module's change builders (ablate_value,
    set_query, scale_key, block, shift_values, offset_scores, set_weights), or a TypeError."""
    if isinstance(changes, (str, bytes, dict)) or not hasattr(changes, "__iter__"):
        raise TypeError(f"changes must be a list of changes, got {type(changes).__name__}")
    changes = list(changes)
    for n, change in enumerate(changes):
        if not callable(change) or not hasattr(change, "description"):
            raise TypeError(f"change {n + 1} must be made by a change builder of lab06 "
                            f"(ablate_value, set_query, ...), got {type(change).__name__}")
    return changes


def run(head=HEAD, changes=()):
    """Every intermediate of a head after changes, from fresh copies: q, k, v, allowed, scores
    (before the mask), masked_scores, weights and output. The changes of Q, K, V and the mask go
    first, in order, then attend; score changes redo their rows' softmax with the core's
    masked_softmax, weight changes the mixture with the core's matmul. Raises TypeError for a
    change that none of this module's change builders made."""
    changes = checked_changes(changes)
    q, k, v, allowed = projected(head)
    inputs = [change for change in changes if _stage(change) == "inputs"]
    for change in inputs:
        change(q, k, v, allowed)
    try:
        head = attention(q, k, v, allowed)
    except ValueError as e:     # a change made a number beyond float range: say which changes
        if not inputs:
            raise
        indexed = re.search(r"\[\d+\]", str(e))      # the door's k[2][0] counts from 0
        raise ValueError(f"after {'; '.join(change.description for change in inputs)}: {e}"
                         + (" (indices from 0)" if indexed else "")) from None
    scores, masked_scores, weights, output = (head[name] for name in
                                              ("scores", "masked_scores", "weights", "output"))
    score_changes = [change for change in changes if _stage(change) == "scores"]
    weight_changes = [change for change in changes if _stage(change) == "weights"]
    if score_changes:
        scores, masked_scores = [list(r) for r in scores], [list(r) for r in masked_scores]
        for change in score_changes:
            change(scores, allowed)
            change(masked_scores, allowed)
        weights = [masked_softmax(row, ok) for row, ok in zip(masked_scores, allowed)]
    if weight_changes:
        weights = [list(row) for row in weights]
        for change in weight_changes:
            change(weights, allowed)
    if score_changes or weight_changes:
        output = matmul(weights, v)
    return {"q": q, "k": k, "v": v, "allowed": allowed, "scores": scores,
            "masked_scores": masked_scores, "weights": weights, "output": output}


def baseline(head=HEAD):
    """Q, K, V, the scores before and after the mask, the weights and the output of a head."""
    first = run(head)
    return {"Q": first["q"], "K": first["k"], "V": first["v"], "scores": first["scores"],
            "masked_scores": first["masked_scores"], "weights": first["weights"],
            "output": first["output"]}


def intervene(changes, base, head=HEAD):
    """Apply changes to fresh copies, run the head, and compare with the baseline (what
    baseline(head) returned)."""
    if not isinstance(base, dict) or "weights" not in base or "output" not in base:
        raise ValueError("base must be what baseline(head) returned, with weights and output")
    after = run(head, changes)
    return with_labels({"weights": after["weights"], "output": after["output"],
                        "weight_rows_changed": changed_rows(base["weights"], after["weights"]),
                        "output_rows_changed": changed_rows(base["output"], after["output"])})


def with_labels(section):
    """section with weight_rows_changed_labels and output_rows_changed_labels beside the 0-based
    rows: the rows the lab's way, a₃ and z₃ counted from 1."""
    for key, letter in (("weight_rows_changed", "a"), ("output_rows_changed", "z")):
        section[key + "_labels"] = [f"{letter}{subscript(i + 1)}" for i in section[key]]
    return section


# ---- changes on any head, positions counted from 1 as the lab counts them --------------------

def _position(n, what):
    """Raise TypeError unless n is an int (not a bool): a position, counted from 1; ValueError for
    one beyond any head's MAX_POSITIONS (its description could not even print it). Whether it is
    a position of the head at hand is the change's to say, when it meets the head."""
    if type(n) is not int:
        raise TypeError(f"{what} must be a position counted from 1, an int, got {kind(n)}")
    if abs(n) > MAX_POSITIONS:
        raise ValueError(f"{what} must be a position of a head, which has at most MAX_POSITIONS "
                         f"= {MAX_POSITIONS}, got {said(n)}")


def _numbers(values, what):
    """Raise unless values is a list of finite numbers (each a float can hold)."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} must be a list of numbers, got {type(values).__name__}")
    for j, value in enumerate(values):
        check_number(f"{what}'s entry {j + 1}", value)


def _index(n, count, what):
    """The 0-based index of position n (counted from 1), or a ValueError counting from 1."""
    if not 1 <= n <= count:
        raise ValueError(f"{what} {n} is not a position of this head: expected 1 to {count}")
    return n - 1


def vector_text(values, shown=lambda x: number(x, 4)):
    """A vector as a view writes it, each number as shown writes it (4 decimals by default).

    >>> vector_text([1.0, 0.375]), vector_text([1.0, 0.375, 2 ** 0.5], short)
    ('[1.0000, 0.3750]', '[1, 3/8, 1.41421]')
    """
    return "[" + ", ".join(shown(v) for v in values) + "]"


def short(x):
    """A number as a change's description writes it: a small fraction where exact, else 6 digits."""
    fraction = exact_fraction(x)
    return f"{x:g}" if fraction is None else str(fraction)


def ablate_value(j):
    """v_j := 0; the weights are not renormalized."""
    _position(j, "the value's position")

    def change(q, k, v, allowed):
        v[_index(j, len(v), "value")] = [0.0] * len(v[0])
    change.description = f"v{subscript(j)} := 0"
    return change


def set_query(i, values):
    """q_i := values; the weights of row i are recomputed."""
    _position(i, "the query's position")
    _numbers(values, "the query")

    def change(q, k, v, allowed):
        if len(values) != len(q[0]):
            raise ValueError(f"query {i} needs {len(q[0])} numbers for this head, "
                             f"got {len(values)}")
        q[_index(i, len(q), "query")] = list(values)
    change.description = f"q{subscript(i)} := {vector_text(values, short)}"
    return change


def scale_key(j, c):
    """k_j := c·k_j."""
    _position(j, "the key's position")
    check_number("the key's factor", c)

    def change(q, k, v, allowed):
        at = _index(j, len(k), "key")
        k[at] = [c * value for value in k[at]]
    change.description = f"k{subscript(j)} := {c:g}·k{subscript(j)}"
    return change


def block(i, j):
    """Query i may no longer read source j; source j stays in the sequence. Raises ValueError
    when that leaves query i no source at all."""
    _position(i, "the query's position")
    _position(j, "the source's position")

    def change(q, k, v, allowed):
        row = _index(i, len(q), "query")
        allowed[row][_index(j, len(k), "source")] = False
        if not any(allowed[row]):
            raise ValueError(f"blocking {i} ↛ {j} leaves query {i} no source to attend to: "
                             f"every row of the mask needs at least one allowed source")
    change.description = f"{i} ↛ {j}"
    return change


def shift_values(shift):
    """v_j := v_j + shift for every j: one vector added to every value, the scores untouched."""
    _numbers(shift, "the shift")

    def change(q, k, v, allowed):
        if len(shift) != len(v[0]):
            raise ValueError(f"the shift needs {len(v[0])} numbers for this head, got {len(shift)}")
        for row in v:
            row[:] = [a + b for a, b in zip(row, shift)]
    change.description = f"every v_j := v_j + {vector_text(shift, short)}"
    return change


MAX_OFFSET = 1e6     # an ulp of 1e6 is 1.2e-10: s + c rounds by less than the lab's 1e-9


def offset_scores(i, c):
    """Add c to every score of row i (a blocked one stays −∞), then take that row's softmax
    again. A stable softmax gives the same weights, up to the rounding of s + c: within the lab's
    TOLERANCE for |c| up to MAX_OFFSET, so a larger c is refused (1e308 would lose the scores)."""
    _position(i, "the row")
    check_number("the offset", c)
    if abs(c) > MAX_OFFSET:
        raise ValueError(f"the offset must be within ±{MAX_OFFSET:g}, got {c:g}: beyond it s + c "
                         f"rounds the scores by more than the lab's {TOLERANCE:g}")

    def change(scores, allowed):
        at = _index(i, len(scores), "row")
        scores[at] = [s + c for s in scores[at]]
    change.stage = "scores"
    change.description = f"row {i}'s scores + {c:g}"
    return change


def scale_scores(i, c):
    """Multiply every score of row i by c (a blocked one stays −∞), then take that row's softmax
    again: unlike an offset, a factor changes the weights (1000 sharpens the row toward its
    largest score)."""
    _position(i, "the row")
    check_number("the factor", c)

    def change(scores, allowed):
        at = _index(i, len(scores), "row")
        scores[at] = [s * c if math.isfinite(s) else s for s in scores[at]]
    change.stage = "scores"
    change.description = f"row {i}'s scores × {c:g}"
    return change


def set_weights(i, weights):
    """a_i := weights after the softmax, a map of your own for row i; the mixture is taken again.
    Raises ValueError for a row of the wrong length, a number that is not finite, a weight below
    0, weights whose sum is not 1 within the lab's TOLERANCE, or a weight on a source the mask
    blocks."""
    _position(i, "the row")
    _numbers(weights, "the weights")
    if any(w < 0 for w in weights) or abs(fsum(weights) - 1) > TOLERANCE:
        raise ValueError(f"the weights must be at least 0 and sum to 1 (within {TOLERANCE:g}), as "
                         f"a softmax's do, got sum {fsum(weights):g} and least "
                         f"{min(weights, default=0):g}")

    def change(all_weights, allowed):
        at = _index(i, len(all_weights), "row")
        if len(weights) != len(all_weights[at]):
            raise ValueError(f"row {i} needs {len(all_weights[at])} weights for this head, "
                             f"got {len(weights)}")
        for j, (w, ok) in enumerate(zip(weights, allowed[at])):
            if w and not ok:
                raise ValueError(f"query {i} may not read source {j + 1}: its weight must be 0, "
                                 f"got {w:g}")
        all_weights[at] = [float(w) for w in weights]
    change.stage = "weights"
    change.description = f"a{subscript(i)} := {vector_text(weights, short)}"
    return change


INTERVENTIONS = {"value_ablation": ablate_value(2), "query_perturbation": set_query(3, [1.0, 0.0]),
                 "connection_removal": block(3, 2), "future_key_perturbation": scale_key(3, 2.0)}
TITLES = {"value_ablation": "Part 2.1, value ablation: v₂ := 0",
          "query_perturbation": "Part 2.2, query perturbation: q₃ := [1, 0]",
          "connection_removal": "Part 2.3, connection removal: 3 ↛ 2",
          "future_key_perturbation": "Part 2.4, future key: k₃ := 2·k₃"}


def lab():
    """Everything the lab records, in the order perturb-trace.json keeps it."""
    first = baseline()
    buggy_weights, buggy_output = buggy_post_softmax(*projected())

    interventions = {name: intervene([change], first) for name, change in INTERVENTIONS.items()}
    doubled = run(HEAD, [INTERVENTIONS["future_key_perturbation"]])
    interventions["future_key_perturbation"]["buggy_output"] = buggy_post_softmax(
        doubled["q"], doubled["k"], doubled["v"], doubled["allowed"])[1]

    # Checks: the same weights with every value shifted; two different maps with one mixture; and
    # the softmax's indifference to a constant added to a row.
    shifted = run(HEAD, [shift_values(VALUE_SHIFT)])
    offset_weights = run(HEAD, [offset_scores(i, SCORE_OFFSET)
                                for i in range(1, len(X) + 1)])["weights"]
    checks = {
        "shared_value_shift": {
            "shift": VALUE_SHIFT,
            "output": shifted["output"],
            "buggy_output": buggy_post_softmax(shifted["q"], shifted["k"], shifted["v"],
                                               shifted["allowed"])[1],
        },
        "equal_mixtures": {
            "values": EQUAL_MIXTURE_VALUES,
            "weights_a": EQUAL_MIXTURE_WEIGHTS[0],
            "weights_b": EQUAL_MIXTURE_WEIGHTS[1],
            "output_a": matmul([EQUAL_MIXTURE_WEIGHTS[0]], EQUAL_MIXTURE_VALUES)[0],
            "output_b": matmul([EQUAL_MIXTURE_WEIGHTS[1]], EQUAL_MIXTURE_VALUES)[0],
        },
        "score_offset": {
            "offset": SCORE_OFFSET,
            "weights": first["weights"],
            "offset_weights": offset_weights,
            "max_difference": max(abs(a - b)
                                  for row_a, row_b in zip(first["weights"], offset_weights)
                                  for a, b in zip(row_a, row_b)),
        },
    }
    return {
        "head": {"X": X, "WQ": WQ, "WK": WK, "WV": WV, "allowed": causal_mask(len(X))},
        "baseline": first,
        "buggy_post_softmax": {"weights": buggy_weights,
                               "row_sums": [fsum(row) for row in buggy_weights],
                               "output": buggy_output},
        "interventions": interventions,
        "checks": checks,
        "baseline_unchanged": baseline() == first,
    }


# ---- experiments of your own: any head, any intervention -------------------------------------

def read_head(path):
    """A head from a JSON file {"X": …, "WQ": …, "WK": …, "WV": …} with an optional
    "allowed" (default: causal). At most MAX_HEAD_POSITIONS positions and widths of at most
    MAX_WIDTH; raises ValueError naming the file and what is wrong, with the lab's rejections."""
    # 1e-400 is refused, not read as 0
    data = read_json(path, "a head", "a JSON object with X, WQ, WK and WV", parse_float=float_of)
    name = os.path.basename(path)
    missing = [key for key in ("X", "WQ", "WK", "WV") if key not in data]
    unknown = sorted(set(data) - {"X", "WQ", "WK", "WV", "allowed"})
    if missing or unknown:
        raise ValueError(f"{name} must have X, WQ, WK, WV and may have allowed; "
                         f"{'missing ' + ', '.join(missing) if missing else ''}"
                         f"{'; ' if missing and unknown else ''}"
                         f"{'unknown ' + ', '.join(unknown) if unknown else ''}")
    try:
        for key in ("X", "WQ", "WK", "WV"):
            rows, cols = check_matrix(key, data[key])
            if rows > (MAX_HEAD_POSITIONS if key == "X" else MAX_WIDTH) or cols > MAX_WIDTH:
                raise ValueError(f"{key} is ({rows}, {cols}): the lab takes heads of at most "
                                 f"{MAX_HEAD_POSITIONS} positions and widths of at most "
                                 f"{MAX_WIDTH}")
        d_model = len(data["X"][0])
        for key in ("WQ", "WK", "WV"):
            if len(data[key]) != d_model:
                rows = len(data[key])
                raise ValueError(f"{key} needs one row per column of X ({d_model}), got {rows} "
                                 f"row{'s' * (rows != 1)}")
        if len(data["WQ"][0]) != len(data["WK"][0]):
            raise ValueError(f"WQ and WK need as many columns (a query meets a key in a dot "
                             f"product), got {len(data['WQ'][0])} and {len(data['WK'][0])}")
        T = len(data["X"])
        head = {key: data[key] for key in ("X", "WQ", "WK", "WV")}
        head["allowed"] = data["allowed"] if "allowed" in data else causal_mask(T)
        check_allowed(head["allowed"], T, T)
        attend(*projected(head))          # the lab's rejections, all at the door
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: {e}") from None
    return head


def with_values(head, values):
    """The head with values of your own: V := values (one row per position) in place of X·WV, for
    the baseline and every change. Raises ValueError when they do not fit the head."""
    rows, cols = check_matrix("V", values)
    if cols > MAX_WIDTH:
        raise ValueError(f"V is ({rows}, {cols}): the lab takes widths of at most {MAX_WIDTH}")
    projected(head)                       # a head with all it needs
    if len(values) != len(head["X"]):
        raise ValueError(f"V needs one row per position of the head ({len(head['X'])}), "
                         f"got {len(values)} rows")
    own = {**head, "V": [[float(x) for x in row] for row in values]}
    attend(*projected(own))               # the lab's rejections, here as for a head file
    return own


def experiment(head, changes=(), bugs=()):
    """The head and its baseline; with changes (ablate_value, set_query, scale_key, block,
    shift_values, offset_scores, set_weights), the one intervention they make together; with bugs
    (names in BUGS), each buggy procedure, after the changes of Q, K, V and the mask when there are
    any, with the rows that changed from the same procedure on the unchanged head."""
    changes = checked_changes(changes)
    if isinstance(bugs, str) or any(bug not in BUGS for bug in bugs):
        raise ValueError(f"bugs must be a list of names from {', '.join(BUGS)}, got {bugs!r}")
    base = baseline(head)
    result = {"head": head, "baseline": base}
    after = run(head, changes)
    if changes:
        result["intervention"] = intervene(changes, base, head)
        result["intervention"]["changes"] = [change.description for change in changes]
        result["intervention"]["buggy_output"] = buggy_post_softmax(
            after["q"], after["k"], after["v"], after["allowed"])[1]
    for bug in bugs:
        key, procedure = BUGS[bug]
        weights, output = procedure(*projected(head))
        section = {"weights": weights, "row_sums": [fsum(row) for row in weights]}
        if bug == "destinations":
            section["column_sums"] = [fsum(column) for column in transpose(weights)]
        section["output"] = output
        if changes:
            new_weights, new_output = procedure(after["q"], after["k"], after["v"],
                                                after["allowed"])
            section = {"changes": result["intervention"]["changes"], "weights": new_weights,
                       "row_sums": [fsum(row) for row in new_weights]}
            if bug == "destinations":
                section["column_sums"] = [fsum(column) for column in transpose(new_weights)]
            section.update({"output": new_output, "baseline_weights": weights,
                            "baseline_output": output,
                            "weight_rows_changed": changed_rows(weights, new_weights),
                            "output_rows_changed": changed_rows(output, new_output)})
            with_labels(section)
        result[key] = section
    return result


# ---- what a view shows -------------------------------------------------------------------------

BUG_TITLES = {"post-softmax": "buggy: softmax, then zero the future",
              "destinations": "buggy: softmax over the destinations (each column)"}


def position_labels(T):
    """x₁ … x_T: positions counted from 1, as the lab counts them."""
    return [f"x{subscript(i + 1)}" for i in range(T)]


def _blocked(allowed):
    return [[not ok for ok in row] for row in allowed]


def cases(result, head=HEAD, changes=()):
    """Each map a view shows, as a dict: key (baseline, an intervention's name, intervention, or a
    bug's name as --bug takes it), changes (what was applied to fresh copies), title, subtitle,
    scores (masked; None for a bug), weights, output, hatched (blocked by the mask), zeroed (set to
    0 after the softmax), the rows of A and Z that changed, and before (the case it is compared
    with, or None). For the lab's result, or an experiment's with the changes it made; the views of
    perturb_attention.py and explorer.py show them."""
    if not isinstance(result, dict) or not isinstance(result.get("baseline"), dict):
        raise ValueError("result must be what lab06.lab() or lab06.experiment() returned")
    base = result["baseline"]
    labels = position_labels(len(base["weights"]))

    def z_changed(rows):
        return f"Z changed at {', '.join(labels[i] for i in rows)}" if rows else "Z unchanged"

    found = [{"key": "baseline", "changes": [], "title": "baseline", "subtitle": "",
              "scores": base["masked_scores"],
              "weights": base["weights"], "output": base["output"],
              "hatched": _blocked(run(head)["allowed"]), "zeroed": None, "weight_rows": [],
              "output_rows": [], "before": None}]
    if "interventions" in result:
        runs = [(key, TITLES[key], [INTERVENTIONS[key]], result["interventions"][key])
                for key in TITLES]
    elif "intervention" in result:
        runs = [("intervention", "; ".join(result["intervention"]["changes"]), list(changes),
                 result["intervention"])]
    else:
        runs = []
    for key, title, its_changes, its_run in runs:
        after = run(head, its_changes)
        found.append({"key": key, "changes": its_changes, "title": title,
                      "subtitle": z_changed(its_run["output_rows_changed"]),
                      "scores": after["masked_scores"], "weights": its_run["weights"],
                      "output": its_run["output"], "hatched": _blocked(after["allowed"]),
                      "zeroed": None, "weight_rows": its_run["weight_rows_changed"],
                      "output_rows": its_run["output_rows_changed"], "before": found[0]})
    allowed = _blocked(run(head, changes)["allowed"])
    for bug, (key, _) in BUGS.items():
        if key not in result:
            continue
        bug_run = result[key]
        subtitle = f"row sums {vector_text(bug_run['row_sums'])}"
        if "column_sums" in bug_run:
            subtitle = f"column sums {vector_text(bug_run['column_sums'])}; " + subtitle
        title, before = BUG_TITLES[bug], None
        if "changes" in bug_run:
            title += f", after {'; '.join(bug_run['changes'])}"
            subtitle += f"; {z_changed(bug_run['output_rows_changed'])}"
            before = {"scores": None, "weights": bug_run["baseline_weights"],
                      "output": bug_run["baseline_output"]}
        zeroed = bug == "post-softmax"
        found.append({"key": bug, "changes": list(changes), "title": title,
                      "subtitle": subtitle, "scores": None,
                      "weights": bug_run["weights"], "output": bug_run["output"],
                      "hatched": [[False] * len(row) for row in allowed] if zeroed else allowed,
                      "zeroed": allowed if zeroed else None,
                      "weight_rows": bug_run.get("weight_rows_changed", []),
                      "output_rows": bug_run.get("output_rows_changed", []), "before": before})
    return found

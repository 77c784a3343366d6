"""Lab 06's head and its experiments; it prints nothing. The head: X = [[1, 0], [0, 1], [1, 1]],
WQ = I, WK = c·I with c = √2·ln 2 (every score a multiple of ln 2), WV = [[2, 0], [0, 4]], a causal
mask; one head, after projection only. A run starts from fresh copies of Q, K, V and the mask, makes
its changes (positions counted from 1) around one call of `attend`, the core the lesson's layer
uses, and is passed along, never run again: lab() and experiment() return a record beside its runs,
and cases() makes the views' maps of them. Row indices in a record are 0-based, as the lab's spec
fixes them, each list beside its labels counted from 1 (a₃, z₃).
"""

import math
import os
import re

from attention import causal_mask, matmul, transpose
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
    """Fresh Q = X·WQ, K = X·WK, V = X·WV (or the head's own "V"), each (T, d), and a copy of the
    (T, T) mask. Raises ValueError for a head without one of them, and as matmul does."""
    if not isinstance(head, dict):
        raise TypeError(f"a head is a dict with X, WQ, WK, WV (or V) and allowed, got "
                        f"{type(head).__name__}")
    if missing := [key for key in ("X", "WQ", "WK", "V" if "V" in head else "WV", "allowed")
                   if key not in head]:
        raise ValueError(f"a head is a dict with X, WQ, WK, WV (or V) and allowed; missing "
                         f"{', '.join(missing)}")
    v = ([list(row) for row in head["V"]] if "V" in head else matmul(head["X"], head["WV"]))
    return (matmul(head["X"], head["WQ"]), matmul(head["X"], head["WK"]), v,
            [list(row) for row in head["allowed"]])


def buggy_post_softmax(q, k, v, allowed):
    """The deliberate bug: softmax over every source, then zero the blocked weights without
    renormalizing, so the future has entered each row's denominator. Returns (weights, output).
    Raises ValueError as attend does, for the mask too."""
    check_allowed(allowed, len(q), len(k))
    unmasked_weights = attend(q, k, v, [[True] * len(k) for _ in q])["weights"]
    weights = [[w if ok else 0.0 for w, ok in zip(row, allowed_row)]
               for row, allowed_row in zip(unmasked_weights, allowed)]
    return weights, matmul(weights, v)


def softmax_over_destinations(q, k, v, allowed):
    """(weights, output) of the softmax over the wrong axis: each column's, over the queries allowed
    to read that source, so columns, not rows, sum to 1; a source no query reads gets no weight."""
    masked_scores = attend(q, k, v, allowed)["scores"]
    weights = transpose([masked_softmax(column, ok) if any(ok) else [0.0] * len(column)
                         for column, ok in zip(transpose(masked_scores), transpose(allowed))])
    return weights, matmul(weights, v)


# --bug's names: (the record's key, the procedure, a view's title)
BUGS = {"post-softmax": ("buggy_post_softmax", buggy_post_softmax,
                         "buggy: softmax, then zero the future"),
        "destinations": ("softmax_over_destinations", softmax_over_destinations,
                         "buggy: softmax over the destinations (each column)")}


def checked_changes(changes):
    """changes as a list, each made by one of this module's change builders, or a TypeError."""
    if isinstance(changes, (str, bytes, dict)) or not hasattr(changes, "__iter__"):
        raise TypeError(f"changes must be a list of changes, got {type(changes).__name__}")
    changes = list(changes)
    for n, change in enumerate(changes):
        if not callable(change) or not hasattr(change, "description"):
            raise TypeError(f"change {n + 1} must be made by a change builder of lab06 "
                            f"(ablate_value, set_query, ...), got {type(change).__name__}")
    return changes


def run(head=HEAD, changes=()):
    """q, k, v, allowed, scores (before the mask), masked_scores, weights and output of a head after
    changes, from fresh copies: Q, K, V and mask changes first, then score changes, then weight
    changes (the bugs see the first kind alone). Raises TypeError for a change no builder made."""
    changes = checked_changes(changes)
    q, k, v, allowed = projected(head)
    inputs = [c for c in changes if getattr(c, "stage", "inputs") == "inputs"]
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
    score_changes = [c for c in changes if getattr(c, "stage", "inputs") == "scores"]
    weight_changes = [c for c in changes if getattr(c, "stage", "inputs") == "weights"]
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
    return _baseline_of(run(head))


def _baseline_of(first):
    return {"Q": first["q"], "K": first["k"], "V": first["v"],
            **{key: first[key] for key in ("scores", "masked_scores", "weights", "output")}}


def _compared(base, after):
    """after's weights and output, and the 0-based rows that changed from base, labelled (a₃)."""
    section = {"weights": after["weights"], "output": after["output"],
               "weight_rows_changed": changed_rows(base["weights"], after["weights"]),
               "output_rows_changed": changed_rows(base["output"], after["output"])}
    for key, letter in (("weight_rows_changed", "a"), ("output_rows_changed", "z")):
        section[key + "_labels"] = [f"{letter}{subscript(i + 1)}" for i in section[key]]
    return section


def _inputs_of(after):
    return after["q"], after["k"], after["v"], after["allowed"]


# ---- changes on any head, positions counted from 1 as the lab counts them --------------------

def _position(n, what):
    if type(n) is not int:
        raise TypeError(f"{what} must be a position counted from 1, an int, got {kind(n)}")
    if abs(n) > MAX_POSITIONS:
        raise ValueError(f"{what} must be a position of a head, which has at most MAX_POSITIONS "
                         f"= {MAX_POSITIONS}, got {said(n)}")


def _numbers(values, what):
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


def _change(change, description, stage="inputs"):
    """change, with the description a view prints and its stage: "inputs" (change(q, k, v,
    allowed)), "scores" (change(scores, allowed)) or "weights" (change(weights, allowed))."""
    change.description, change.stage = description, stage
    return change


def ablate_value(j):
    """v_j := 0; the weights are not renormalized."""
    _position(j, "the value's position")

    def change(q, k, v, allowed):
        v[_index(j, len(v), "value")] = [0.0] * len(v[0])
    return _change(change, f"v{subscript(j)} := 0")


def set_query(i, values):
    """q_i := values; the weights of row i are recomputed."""
    _position(i, "the query's position")
    _numbers(values, "the query")

    def change(q, k, v, allowed):
        if len(values) != len(q[0]):
            raise ValueError(f"query {i} needs {len(q[0])} numbers for this head, "
                             f"got {len(values)}")
        q[_index(i, len(q), "query")] = list(values)
    return _change(change, f"q{subscript(i)} := {vector_text(values, short)}")


def scale_key(j, c):
    """k_j := c·k_j."""
    _position(j, "the key's position")
    check_number("the key's factor", c)

    def change(q, k, v, allowed):
        at = _index(j, len(k), "key")
        k[at] = [c * value for value in k[at]]
    return _change(change, f"k{subscript(j)} := {c:g}·k{subscript(j)}")


def block(i, j):
    """Query i may no longer read source j; ValueError when that leaves query i no source at all."""
    _position(i, "the query's position")
    _position(j, "the source's position")

    def change(q, k, v, allowed):
        row = _index(i, len(q), "query")
        allowed[row][_index(j, len(k), "source")] = False
        if not any(allowed[row]):
            raise ValueError(f"blocking {i} ↛ {j} leaves query {i} no source to attend to: "
                             f"every row of the mask needs at least one allowed source")
    return _change(change, f"{i} ↛ {j}")


def shift_values(shift):
    """v_j := v_j + shift for every j: one vector added to every value, the scores untouched."""
    _numbers(shift, "the shift")

    def change(q, k, v, allowed):
        if len(shift) != len(v[0]):
            raise ValueError(f"the shift needs {len(v[0])} numbers for this head, got {len(shift)}")
        for row in v:
            row[:] = [a + b for a, b in zip(row, shift)]
    return _change(change, f"every v_j := v_j + {vector_text(shift, short)}")


MAX_OFFSET = 1e6     # an ulp of 1e6 is 1.2e-10: s + c rounds by less than the lab's 1e-9


def offset_scores(i, c):
    """Add c to every score of row i (a blocked one stays −∞), then take its softmax again: the
    same weights, within TOLERANCE for |c| up to MAX_OFFSET; a larger c is refused."""
    _position(i, "the row")
    check_number("the offset", c)
    if abs(c) > MAX_OFFSET:
        raise ValueError(f"the offset must be within ±{MAX_OFFSET:g}, got {c:g}: beyond it s + c "
                         f"rounds the scores by more than the lab's {TOLERANCE:g}")

    def change(scores, allowed):
        at = _index(i, len(scores), "row")
        scores[at] = [s + c for s in scores[at]]
    return _change(change, f"row {i}'s scores + {c:g}", "scores")


def scale_scores(i, c):
    """Multiply every score of row i by c (a blocked one stays −∞), then take its softmax again."""
    _position(i, "the row")
    check_number("the factor", c)

    def change(scores, allowed):
        at = _index(i, len(scores), "row")
        scores[at] = [s * c if math.isfinite(s) else s for s in scores[at]]
    return _change(change, f"row {i}'s scores × {c:g}", "scores")


def set_weights(i, weights):
    """a_i := weights after the softmax, a map of your own for row i; the mixture is taken again.
    Raises ValueError for a row of the wrong length, a number that is not finite, a weight below
    0, a sum that is not 1 within TOLERANCE, or a weight on a source the mask blocks."""
    _position(i, "the row")
    _numbers(weights, "the weights")
    if any(w < 0 for w in weights) or abs(math.fsum(weights) - 1) > TOLERANCE:
        raise ValueError(f"the weights must be at least 0 and sum to 1 (within {TOLERANCE:g}), as "
                         f"a softmax's do, got sum {math.fsum(weights):g} and least "
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
    return _change(change, f"a{subscript(i)} := {vector_text(weights, short)}", "weights")


INTERVENTIONS = {"value_ablation": ablate_value(2), "query_perturbation": set_query(3, [1.0, 0.0]),
                 "connection_removal": block(3, 2), "future_key_perturbation": scale_key(3, 2.0)}
TITLES = {"value_ablation": "Part 2.1, value ablation: v₂ := 0",
          "query_perturbation": "Part 2.2, query perturbation: q₃ := [1, 0]",
          "connection_removal": "Part 2.3, connection removal: 3 ↛ 2",
          "future_key_perturbation": "Part 2.4, future key: k₃ := 2·k₃"}


class Record(dict):
    """What lab() and experiment() return: the record (what --json prints) and, recorded nowhere,
    runs (each case's run, baseline first, by key) and the experiment's changes."""

    def __init__(self, record, runs, changes=()):
        super().__init__(record)
        self.runs, self.changes = runs, list(changes)


def _bug_section(bug, after):
    """A bug of BUGS on a run's q, k, v and mask: its weights, row (and column) sums and output."""
    weights, output = BUGS[bug][1](*_inputs_of(after))
    section = {"weights": weights, "row_sums": [math.fsum(row) for row in weights]}
    if bug == "destinations":
        section["column_sums"] = [math.fsum(column) for column in transpose(weights)]
    section["output"] = output
    return section


def lab():
    """Everything the lab records, in the order perturb-trace.json keeps it."""
    runs = {"baseline": run()}
    runs.update({name: run(HEAD, [change]) for name, change in INTERVENTIONS.items()})
    first = _baseline_of(runs["baseline"])
    interventions = {name: _compared(first, runs[name]) for name in INTERVENTIONS}
    interventions["future_key_perturbation"]["buggy_output"] = buggy_post_softmax(
        *_inputs_of(runs["future_key_perturbation"]))[1]

    shifted = run(HEAD, [shift_values(VALUE_SHIFT)])
    offset_weights = run(HEAD, [offset_scores(i, SCORE_OFFSET)
                                for i in range(1, len(X) + 1)])["weights"]
    a, b = EQUAL_MIXTURE_WEIGHTS
    checks = {
        "shared_value_shift": {"shift": VALUE_SHIFT, "output": shifted["output"],
                               "buggy_output": buggy_post_softmax(*_inputs_of(shifted))[1]},
        "equal_mixtures": {"values": EQUAL_MIXTURE_VALUES, "weights_a": a, "weights_b": b,
                           "output_a": matmul([a], EQUAL_MIXTURE_VALUES)[0],
                           "output_b": matmul([b], EQUAL_MIXTURE_VALUES)[0]},
        "score_offset": {"offset": SCORE_OFFSET, "weights": first["weights"],
                         "offset_weights": offset_weights,
                         "max_difference": max(abs(x - y) for row_x, row_y in zip(
                             first["weights"], offset_weights) for x, y in zip(row_x, row_y))}}
    return Record({
        "head": {"X": X, "WQ": WQ, "WK": WK, "WV": WV, "allowed": causal_mask(len(X))},
        "baseline": first, "buggy_post_softmax": _bug_section("post-softmax", runs["baseline"]),
        "interventions": interventions, "checks": checks,
        "baseline_unchanged": baseline() == first,     # a run again, from fresh copies
    }, runs)


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
        wrong = [f"{word} {', '.join(keys)}" for word, keys in (("missing", missing),
                                                               ("unknown", unknown)) if keys]
        raise ValueError(f"{name} must have X, WQ, WK, WV and may have allowed; {'; '.join(wrong)}")
    try:
        for key in ("X", "WQ", "WK", "WV"):
            rows, cols = check_matrix(key, data[key])
            if rows > (MAX_HEAD_POSITIONS if key == "X" else MAX_WIDTH) or cols > MAX_WIDTH:
                raise ValueError(f"{key} is ({rows}, {cols}): the lab takes heads of at most "
                                 f"{MAX_HEAD_POSITIONS} positions and widths of at most "
                                 f"{MAX_WIDTH}")
        d_model = len(data["X"][0])
        for key in ("WQ", "WK", "WV"):
            if (rows := len(data[key])) != d_model:
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
    """The head and its baseline; with changes, the one intervention they make together; with bugs
    (names in BUGS), each buggy procedure, after the changes of Q, K, V and the mask when there are
    any, with the rows that changed from the same procedure on the unchanged head."""
    changes = checked_changes(changes)
    if isinstance(bugs, str) or any(bug not in BUGS for bug in bugs):
        raise ValueError(f"bugs must be a list of names from {', '.join(BUGS)}, got {bugs!r}")
    runs = {"baseline": run(head)}
    result = {"head": head, "baseline": _baseline_of(runs["baseline"])}
    if changes:
        after = runs["intervention"] = run(head, changes)
        buggy = _bug_section("post-softmax", after)
        result["intervention"] = {**_compared(result["baseline"], after),
                                  "changes": [change.description for change in changes],
                                  "buggy_output": buggy["output"]}
    for bug in bugs:
        section = _bug_section(bug, runs["baseline"])
        if changes:
            new = buggy if bug == "post-softmax" else _bug_section(bug, after)
            section = {"changes": result["intervention"]["changes"], **new,
                       "baseline_weights": section["weights"], "baseline_output": section["output"],
                       **_compared(section, new)}       # new's weights and output, in their places
        result[BUGS[bug][0]] = section
    return Record(result, runs, changes)


# ---- what a view shows -------------------------------------------------------------------------

def position_labels(T):
    """x₁ … x_T: positions counted from 1, as the lab counts them."""
    return [f"x{subscript(i + 1)}" for i in range(T)]


def cases(result):
    """Each map a view shows, made of the runs of result (what lab() or experiment() returned):
    key (baseline, an intervention's name, intervention, or a bug's name as --bug takes it),
    changes, run, title, subtitle, scores (masked; None for a bug), weights, output, hatched
    (blocked by the mask), zeroed (set to 0 after the softmax), weight_rows and output_rows (the
    rows of A and Z that changed), and before (the case it is compared with, or None)."""
    if not isinstance(result, Record):
        raise ValueError("result must be what lab06.lab() or lab06.experiment() returned")
    labels = position_labels(len(result["baseline"]["weights"]))

    def z_changed(rows):
        return f"Z changed at {', '.join(labels[i] for i in rows)}" if rows else "Z unchanged"

    def case(key, changes, after, title, subtitle, section, before):
        blocked = [[not ok for ok in row] for row in after["allowed"]]
        zeroed = blocked if key == "post-softmax" else None
        return {"key": key, "changes": changes, "run": after, "title": title, "subtitle": subtitle,
                "scores": None if key in BUGS else after["masked_scores"],
                "weights": section["weights"], "output": section["output"],
                "hatched": [[False] * len(row) for row in blocked] if zeroed else blocked,
                "zeroed": zeroed, "weight_rows": section.get("weight_rows_changed", []),
                "output_rows": section.get("output_rows_changed", []), "before": before}

    runs = dict(result.runs)
    found = [case("baseline", [], runs.pop("baseline"), "baseline", "", result["baseline"], None)]
    for key, after in runs.items():             # each intervention, in the record's order
        section = result["interventions"][key] if key in TITLES else result["intervention"]
        found.append(case(key, [INTERVENTIONS[key]] if key in TITLES else result.changes, after,
                          TITLES.get(key) or "; ".join(section["changes"]),
                          z_changed(section["output_rows_changed"]), section, found[0]))
    after = result.runs.get("intervention", result.runs["baseline"])
    for bug, (key, _, title) in BUGS.items():
        if key not in result:
            continue
        section, before = result[key], None
        subtitle = f"row sums {vector_text(section['row_sums'])}"
        if "column_sums" in section:
            subtitle = f"column sums {vector_text(section['column_sums'])}; " + subtitle
        if "changes" in section:
            title += f", after {'; '.join(section['changes'])}"
            subtitle += f"; {z_changed(section['output_rows_changed'])}"
            before = {"scores": None, "weights": section["baseline_weights"],
                      "output": section["baseline_output"]}
        found.append(case(bug, result.changes, after, title, subtitle, section, before))
    return found

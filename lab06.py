"""Lab 06's head and its experiments: compute one tiny attention head exactly, then change one
piece of it at a time. The library that the lab's command line (perturb_attention.py) and its grader
(grade_lab06.py) share; it prints nothing.

The head: three positions of width 2, X = [[1, 0], [0, 1], [1, 1]], WQ = I, WK = c·I with
c = √2·ln 2 (so every score is a multiple of ln 2 and every weight a ratio of powers of 2),
WV = [[2, 0], [0, 4]], and a causal mask. Rows are positions. Row indices in the records are
0-based; the lab's names (v₂, q₃, z₃) and the positions the interventions take count from 1. One
head, after projection only: no bias, dropout, normalization, residual or output projection.

Each intervention starts from fresh copies of the projected Q, K, V and the mask and changes only
what it names: a value (1), a query (2), one connection (3), a future key (4). The deliberately
buggy procedure (softmax over every source, then zero the future without renormalizing) shows that a
lower-triangular matrix of weights does not prove the computation was causal. Every number goes
through `attend`, the core the lesson's layer uses.

The lab's names for the core's: its "scores" are the scores before the mask (raw_scores here: attend
with nothing blocked), its "masked_scores" the core's `scores`, its "output" the core's `mixed`.

    projected(head)                   fresh Q, K, V and mask of a head (the lab's by default)
    baseline(head)                    Q, K, V, scores, masked_scores, weights, output
    buggy_post_softmax(q, k, v, allowed)   the bug's (weights, output)
    intervene(change, base, head)     one intervention on fresh copies, compared with the baseline
    lab()                             everything perturb-trace.json records
    read_head(path)                   a head of your own, from a JSON file
    ablate_value(j), set_query(i, values), scale_key(j, c), block(i, j)
                                      an intervention on any head, positions counted from 1
    experiment(head, changes, bug)    a head, one intervention made of changes, and the bug
    cases(result, head, changes)      each map a view of a result shows, in order
"""

import json
import math
import os
from math import fsum

from attention import attend, causal_mask, masked_softmax, matmul
from checks import check_matrix
from golden import changed_rows
from safe_io import read_text
from views import number

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


def projected(head=HEAD):
    """Fresh Q = X·WQ, K = X·WK, V = X·WV and a copy of the allowed mask: new lists on every
    call. The lab's head by default: each (3, 2), and the causal (3, 3) mask."""
    return (matmul(head["X"], head["WQ"]), matmul(head["X"], head["WK"]),
            matmul(head["X"], head["WV"]), [list(row) for row in head["allowed"]])


def everything_allowed(q, k):
    """The (T, S) mask that blocks nothing: what a run without a mask attends with."""
    return [[True] * len(k) for _ in q]


def buggy_post_softmax(q, k, v, allowed):
    """The deliberate bug: softmax over every source, then zero the blocked weights without
    renormalizing. Returns (weights, output). The future has already entered each row's
    denominator."""
    unmasked_weights = attend(q, k, v, everything_allowed(q, k))["weights"]
    weights = [[w if ok else 0.0 for w, ok in zip(row, allowed_row)]
               for row, allowed_row in zip(unmasked_weights, allowed)]
    return weights, matmul(weights, v)


def baseline(head=HEAD):
    """Q, K, V, the scores before and after the mask, the weights and the output of a head."""
    q, k, v, allowed = projected(head)
    cache = attend(q, k, v, allowed)
    raw_scores = attend(q, k, v, everything_allowed(q, k))["scores"]
    return {"Q": q, "K": k, "V": v, "scores": raw_scores, "masked_scores": cache["scores"],
            "weights": cache["weights"], "output": cache["mixed"]}


def intervene(change, base, head=HEAD):
    """Apply change(q, k, v, allowed) to fresh copies, run attend, and compare with the baseline."""
    q, k, v, allowed = projected(head)
    change(q, k, v, allowed)
    cache = attend(q, k, v, allowed)
    return {"weights": cache["weights"], "output": cache["mixed"],
            "weight_rows_changed": changed_rows(base["weights"], cache["weights"]),
            "output_rows_changed": changed_rows(base["output"], cache["mixed"])}


# ---- interventions on any head, positions counted from 1 as the lab counts them --------------

def subscript(n):
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def _index(n, count, what):
    """The 0-based index of position n (counted from 1), or a ValueError counting from 1."""
    if not 1 <= n <= count:
        raise ValueError(f"{what} {n} is not a position of this head: expected 1 to {count}")
    return n - 1


def ablate_value(j):
    """v_j := 0; the weights are not renormalized."""
    def change(q, k, v, allowed):
        v[_index(j, len(v), "value")] = [0.0] * len(v[0])
    change.description = f"v{subscript(j)} := 0"
    return change


def set_query(i, values):
    """q_i := values; the weights of row i are recomputed."""
    def change(q, k, v, allowed):
        if len(values) != len(q[0]):
            raise ValueError(f"query {i} needs {len(q[0])} numbers for this head, "
                             f"got {len(values)}")
        q[_index(i, len(q), "query")] = list(values)
    change.description = f"q{subscript(i)} := [{', '.join(f'{x:g}' for x in values)}]"
    return change


def scale_key(j, c):
    """k_j := c·k_j."""
    def change(q, k, v, allowed):
        at = _index(j, len(k), "key")
        k[at] = [c * value for value in k[at]]
    change.description = f"k{subscript(j)} := {c:g}·k{subscript(j)}"
    return change


def block(i, j):
    """Query i may no longer read source j; source j stays in the sequence. Raises ValueError
    when that leaves query i no source at all."""
    def change(q, k, v, allowed):
        row = _index(i, len(q), "query")
        allowed[row][_index(j, len(k), "source")] = False
        if not any(allowed[row]):
            raise ValueError(f"blocking {i} ↛ {j} leaves query {i} no source to attend to: "
                             f"every row of the mask needs at least one allowed source")
    change.description = f"{i} ↛ {j}"
    return change


INTERVENTIONS = {"value_ablation": ablate_value(2), "query_perturbation": set_query(3, [1.0, 0.0]),
                 "connection_removal": block(3, 2), "future_key_perturbation": scale_key(3, 2.0)}
TITLES = {"value_ablation": "value ablation: v₂ := 0",
          "query_perturbation": "query perturbation: q₃ := [1, 0]",
          "connection_removal": "connection removal: 3 ↛ 2",
          "future_key_perturbation": "future key: k₃ := 2·k₃"}


def lab():
    """Everything the lab records, in the order perturb-trace.json keeps it."""
    first = baseline()
    buggy_weights, buggy_output = buggy_post_softmax(*projected())

    interventions = {name: intervene(change, first) for name, change in INTERVENTIONS.items()}
    q, k, v, allowed = projected()
    INTERVENTIONS["future_key_perturbation"](q, k, v, allowed)
    interventions["future_key_perturbation"]["buggy_output"] = buggy_post_softmax(
        q, k, v, allowed)[1]

    # Checks: the same weights with every value shifted; two different maps with one mixture; and
    # the softmax's indifference to a constant added to a row.
    q, k, v, allowed = projected()
    shifted = [[a + b for a, b in zip(row, VALUE_SHIFT)] for row in v]
    offset_weights = [masked_softmax([s + SCORE_OFFSET for s in row], ok)
                      for row, ok in zip(first["masked_scores"], allowed)]
    checks = {
        "shared_value_shift": {
            "shift": VALUE_SHIFT,
            "output": attend(q, k, shifted, allowed)["mixed"],
            "buggy_output": buggy_post_softmax(q, k, shifted, allowed)[1],
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
    """A head from a JSON file {"X": …, "WQ": …, "WK": …, "WV": …} with an optional "allowed"
    (default: causal). Any number of positions and any widths that fit; raises ValueError naming
    the file and what is wrong, with the lab's rejections."""
    name = os.path.basename(path)
    try:
        data = json.loads(read_text(path))
    except RecursionError:
        raise ValueError(f"{name} is nested too deeply to be a head") from None
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{name} must hold a JSON object with X, WQ, WK and WV, "
                         f"got {type(data).__name__}")
    missing = [key for key in ("X", "WQ", "WK", "WV") if key not in data]
    unknown = sorted(set(data) - {"X", "WQ", "WK", "WV", "allowed"})
    if missing or unknown:
        raise ValueError(f"{name} must have X, WQ, WK, WV and may have allowed; "
                         f"{'missing ' + ', '.join(missing) if missing else ''}"
                         f"{'; ' if missing and unknown else ''}"
                         f"{'unknown ' + ', '.join(unknown) if unknown else ''}")
    head = {key: data[key] for key in ("X", "WQ", "WK", "WV")}
    head["allowed"] = data.get("allowed", causal_mask(len(data["X"]) if isinstance(data["X"], list)
                                                      else 0))
    try:
        for key in ("X", "WQ", "WK", "WV"):
            check_matrix(key, head[key])
        q, k, v, allowed = projected(head)
        attend(q, k, v, allowed)          # the lab's rejections, all at the door
    except (ValueError, TypeError) as e:
        raise ValueError(f"{name}: {e}") from None
    return head


def experiment(head, changes, bug):
    """The head and its baseline; with changes (from ablate_value, set_query, scale_key, block),
    the one intervention they make together, applied in order to fresh copies; with bug, the buggy
    procedure on the baseline."""
    base = baseline(head)
    result = {"head": head, "baseline": base}
    if changes:
        def change(q, k, v, allowed):
            for one in changes:
                one(q, k, v, allowed)
        result["intervention"] = intervene(change, base, head)
        result["intervention"]["changes"] = [one.description for one in changes]
        q, k, v, allowed = projected(head)
        change(q, k, v, allowed)
        result["intervention"]["buggy_output"] = buggy_post_softmax(q, k, v, allowed)[1]
    if bug:
        weights, output = buggy_post_softmax(*projected(head))
        result["buggy_post_softmax"] = {"weights": weights, "row_sums": [fsum(r) for r in weights],
                                        "output": output}
    return result


# ---- what a view shows -------------------------------------------------------------------------

def position_labels(T):
    """x₁ … x_T: positions counted from 1, as the lab counts them."""
    return [f"x{subscript(i + 1)}" for i in range(T)]


def cases(result, head=HEAD, changes=()):
    """Each map a view shows, as a dict: key (baseline, an intervention's name, intervention or
    bug), change (what was applied to fresh copies, or None), title, subtitle, weights, output,
    hatched (blocked by the mask), zeroed (set to 0 after the softmax), and the rows of A and Z that
    changed from the baseline. For the lab's result, or an experiment's with the changes it made
    (the views of perturb_attention.py and explorer.py show them)."""
    def blocked_after(change=None):
        q, k, v, allowed = projected(head)
        if change:
            change(q, k, v, allowed)
        return [[not ok for ok in row] for row in allowed]

    def combined(q, k, v, allowed):
        for change in changes:
            change(q, k, v, allowed)

    base = result["baseline"]
    T = len(base["weights"])
    found = [{"key": "baseline", "change": None, "title": "baseline", "subtitle": "",
              "weights": base["weights"],
              "output": base["output"], "hatched": blocked_after(), "zeroed": None,
              "weight_rows": [], "output_rows": []}]
    if "interventions" in result:
        runs = [(key, TITLES[key], INTERVENTIONS[key], result["interventions"][key])
                for key in TITLES]
    elif "intervention" in result:
        runs = [("intervention", "; ".join(result["intervention"]["changes"]), combined,
                 result["intervention"])]
    else:
        runs = []
    labels = position_labels(T)
    for key, title, change, run in runs:
        rows = ", ".join(labels[i] for i in run["output_rows_changed"]) or "none"
        found.append({"key": key, "change": change, "title": title,
                      "subtitle": f"Z changed at {rows}", "weights": run["weights"],
                      "output": run["output"], "hatched": blocked_after(change), "zeroed": None,
                      "weight_rows": run["weight_rows_changed"],
                      "output_rows": run["output_rows_changed"]})
    if "buggy_post_softmax" in result:
        bug = result["buggy_post_softmax"]
        found.append({"key": "bug", "change": None, "title": "buggy: softmax, then zero the future",
                      "subtitle": f"row sums {_vector(bug['row_sums'])}", "weights": bug["weights"],
                      "output": bug["output"], "hatched": [[False] * T for _ in range(T)],
                      "zeroed": blocked_after(), "weight_rows": [], "output_rows": []})
    return found


def _vector(values):
    return "[" + ", ".join(number(v, 4) for v in values) + "]"

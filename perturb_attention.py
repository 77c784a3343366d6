"""Lab 06: compute one tiny attention head exactly, then change one piece of it at a time.

    python3 perturb_attention.py            print the lab's trace as JSON
    python3 perturb_attention.py --write    rewrite perturb-trace.json
    python3 perturb_attention.py --check    fail unless perturb-trace.json matches a fresh run
    python3 perturb_attention.py --table    each map as an aligned table, the changed rows marked
    python3 perturb_attention.py --svg FILE the maps side by side as heatmaps

The head: three positions of width 2, X = [[1, 0], [0, 1], [1, 1]], WQ = I, WK = c·I with c = √2·ln 2
(so every score is a multiple of ln 2 and every weight a ratio of powers of 2), WV = [[2, 0], [0, 4]], and a
causal mask. Rows are positions; row indices in the output are 0-based. One head, after projection only: no
bias, dropout, normalization, residual or output projection.

Each intervention starts from fresh copies of the projected Q, K, V and the mask and changes only what it
names: a value (1), a query (2), one connection (3), a future key (4). The deliberately buggy procedure
(softmax over every source, then zero the future without renormalizing) shows that a lower-triangular
matrix of weights does not prove the computation was causal. Every number goes through `attend`, the core
the lesson's layer uses.
"""

import math
import os
import sys
from math import fsum

from attention import attend, causal_mask, masked_softmax, matmul, no_mask
from recorded import (changed_rows, guarded, parse_trace_args, rounded, save_view, show,
                      to_json, trace_parser, write_or_check)
from views import heatmaps_svg, number, panel, text_table

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE_PATH = os.path.join(HERE, "perturb-trace.json")
DIGITS = 10

C = math.sqrt(2) * math.log(2)  # kept exact in floating point, not rounded: scores come out as ln 2 · X·Xᵀ
X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
WQ = [[1.0, 0.0], [0.0, 1.0]]
WK = [[C, 0.0], [0.0, C]]
WV = [[2.0, 0.0], [0.0, 4.0]]
SHIFT = [1.0, -2.0]
EQUAL_MIXTURE_VALUES = [[2.0, 0.0], [2.0, 0.0], [4.0, 0.0]]
EQUAL_MIXTURE_WEIGHTS = ([0.25, 0.25, 0.5], [0.375, 0.125, 0.5])
SCORE_OFFSET = 1000.0


def projected():
    """Fresh Q, K, V (each (3, 2)) and the causal allowed mask (3, 3): new lists on every call."""
    return matmul(X, WQ), matmul(X, WK), matmul(X, WV), causal_mask(len(X))


def buggy_post_softmax(q, k, v, allowed):
    """The deliberate bug: softmax over every source, then zero the blocked weights without renormalizing.
    Returns (weights, output). The future has already entered each row's denominator."""
    unmasked = attend(q, k, v, no_mask(len(q), len(k)))["weights"]
    weights = [[w if ok else 0.0 for w, ok in zip(row, allowed_row)] for row, allowed_row in zip(unmasked, allowed)]
    return weights, matmul(weights, v)


def baseline():
    q, k, v, allowed = projected()
    head = attend(q, k, v, allowed)
    # the scores before the mask are the scores of a run where nothing is blocked
    return {"Q": q, "K": k, "V": v,
            "scores": attend(q, k, v, no_mask(len(q), len(k)))["scores"],
            "masked_scores": head["scores"], "weights": head["weights"], "output": head["mixed"]}


def intervene(change, base):
    """Apply change(q, k, v, allowed) to fresh copies, run attend, and compare with the baseline."""
    q, k, v, allowed = projected()
    change(q, k, v, allowed)
    head = attend(q, k, v, allowed)
    return {"weights": head["weights"], "output": head["mixed"],
            "weight_rows_changed": changed_rows(base["weights"], head["weights"]),
            "output_rows_changed": changed_rows(base["output"], head["mixed"])}


def ablate_value(q, k, v, allowed):
    v[1] = [0.0, 0.0]                      # v₂ := 0; the weights are not renormalized


def perturb_query(q, k, v, allowed):
    q[2] = [1.0, 0.0]                      # q₃ := [1, 0]


def remove_connection(q, k, v, allowed):
    allowed[2][1] = False                  # destination 3 may no longer read source 2; token 2 stays


def double_future_key(q, k, v, allowed):
    k[2] = [2 * value for value in k[2]]   # k₃ := 2·k₃


INTERVENTIONS = {"value_ablation": ablate_value, "query_perturbation": perturb_query,
                 "connection_removal": remove_connection, "future_key_perturbation": double_future_key}


def lab():
    """Everything the lab records, in the order perturb-trace.json keeps it."""
    first = baseline()
    q, k, v, allowed = projected()
    buggy_weights, buggy_output = buggy_post_softmax(q, k, v, allowed)

    interventions = {name: intervene(change, first) for name, change in INTERVENTIONS.items()}
    q, k, v, allowed = projected()
    double_future_key(q, k, v, allowed)
    interventions["future_key_perturbation"]["buggy_output"] = buggy_post_softmax(q, k, v, allowed)[1]

    # Checks: the same weights with every value shifted; two different maps with one mixture; and the
    # softmax's indifference to a constant added to a row.
    q, k, v, allowed = projected()
    shifted = [[a + b for a, b in zip(row, SHIFT)] for row in v]
    offset_weights = [masked_softmax([s + SCORE_OFFSET for s in row], ok)
                      for row, ok in zip(first["masked_scores"], allowed)]
    checks = {
        "shared_value_shift": {
            "shift": SHIFT,
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
            "max_difference": max(abs(a - b) for row_a, row_b in zip(first["weights"], offset_weights)
                                  for a, b in zip(row_a, row_b)),
        },
    }
    return {
        "head": {"X": X, "WQ": WQ, "WK": WK, "WV": WV, "allowed": causal_mask(len(X))},
        "baseline": first,
        "buggy_post_softmax": {"weights": buggy_weights, "row_sums": [fsum(row) for row in buggy_weights],
                               "output": buggy_output},
        "interventions": interventions,
        "checks": checks,
        "baseline_unchanged": baseline() == first,
    }


# ---- views for a person -------------------------------------------------------------------------------

LABELS = ["x₁", "x₂", "x₃"]
TITLES = {"value_ablation": "value ablation: v₂ := 0", "query_perturbation": "query perturbation: q₃ := [1, 0]",
          "connection_removal": "connection removal: 3 ↛ 2", "future_key_perturbation": "future key: k₃ := 2·k₃"}


def maps(result):
    """(title, subtitle, weights, hatched, rows highlighted) for the baseline, each intervention and
    the bug; hatched is True where the mask blocks a pair."""
    def blocked_by(change=None):
        q, k, v, allowed = projected()
        if change:
            change(q, k, v, allowed)
        return [[not ok for ok in row] for row in allowed]

    out = [("baseline", "z₃ = " + _vector(result["baseline"]["output"][2]), result["baseline"]["weights"],
            blocked_by(), [])]
    for key, title in TITLES.items():
        run = result["interventions"][key]
        rows = ", ".join(LABELS[i] for i in run["output_rows_changed"]) or "none"
        out.append((title, f"Z changed at {rows}; z₃ = {_vector(run['output'][2])}",
                    run["weights"], blocked_by(INTERVENTIONS[key]), run["weight_rows_changed"]))
    bug = result["buggy_post_softmax"]
    out.append(("buggy: softmax, then zero the future", f"row sums {_vector(bug['row_sums'])}",
                bug["weights"], blocked_by(), []))
    return out


def _vector(values):
    return "[" + ", ".join(number(v, 4) for v in values) + "]"


def lab_table(result):
    """Each map as an aligned table; rows whose weights changed from the baseline are marked."""
    lines = []
    for title, subtitle, weights, hatched, changed in maps(result):
        shown = [["0" if h else w for w, h in zip(row, h_row)] for row, h_row in zip(weights, hatched)]
        lines += [f"{title} ({subtitle})", text_table(LABELS, LABELS, shown, {i: "◀ changed" for i in changed}), ""]
    lines.append(f"baseline unchanged after all of them: {result['baseline_unchanged']}")
    return "\n".join(lines) + "\n"


def lab_svg(result):
    panels = [panel(title, LABELS, LABELS, weights, hatched, changed, subtitle)
              for title, subtitle, weights, hatched, changed in maps(result)]
    return heatmaps_svg(panels, note="Lab 06: the baseline map beside each intervention's, and the buggy "
                                     "procedure's; outlined rows are the weights that changed from the baseline.")


def main(argv=None):
    parser = trace_parser("Lab 06: compute one attention head, then perturb it.", TRACE_PATH)
    args = parse_trace_args(parser, argv)
    return guarded(lambda: _run(args))


def _run(args):
    result = lab()
    if args.svg is not None:
        save_view(args.svg, lab_svg(result))
    if args.table:
        show(lab_table(result))
    if args.svg is not None or args.table:
        return 0
    return write_or_check(to_json(rounded(result, DIGITS)), TRACE_PATH, args.write, args.check)


if __name__ == "__main__":
    sys.exit(main())

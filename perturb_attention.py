"""Lab 06: compute one tiny attention head exactly, then change one piece of it at a time.

    python3 perturb_attention.py            print the lab's trace as JSON
    python3 perturb_attention.py --write    rewrite perturb-trace.json
    python3 perturb_attention.py --check    fail unless perturb-trace.json matches a fresh run
    python3 perturb_attention.py --table    Q, K, V, S, A and Z, then each change's rows in full
    python3 perturb_attention.py --svg FILE each map with its Z beside it, as heatmaps
    python3 perturb_attention.py --html FILE    an explorer page to open in a browser (explorer.py)
    python3 perturb_attention.py --scaffold tiny_attention.py    a starter file for the lab
    python3 perturb_attention.py --grade tiny_attention.py       check it (grade_lab06.py)
    python3 perturb_attention.py --head FILE [--ablate-value J] [--set-query I=a,b]
                                 [--scale-key J=c] [--block I,J] [--bug post-softmax]
                                            a head and an intervention of your own

The head: three positions of width 2, X = [[1, 0], [0, 1], [1, 1]], WQ = I, WK = c·I with
c = √2·ln 2 (so every score is a multiple of ln 2 and every weight a ratio of powers of 2),
WV = [[2, 0], [0, 4]], and a causal mask. Rows are positions; row indices in the output are
0-based. One head, after projection only: no bias, dropout, normalization, residual or output
projection.

Each intervention starts from fresh copies of the projected Q, K, V and the mask and changes only
what it names: a value (1), a query (2), one connection (3), a future key (4). The deliberately
buggy procedure (softmax over every source, then zero the future without renormalizing) shows that a
lower-triangular matrix of weights does not prove the computation was causal. Every number goes
through `attend`, the core the lesson's layer uses.
"""

import argparse
import os
import sys

import lab06
from cli import guarded, parse_trace_args, save_view, show, trace_parser
from explorer import lab_page
from golden import rounded, to_json, write_or_check
from lab06 import DIGITS, HEAD, cases, position_labels
from views import heatmaps_svg, number, panel, text_table

TRACE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "perturb-trace.json")


# ---- views for a person -----------------------------------------------------------------------

def lab_table(result, head=HEAD, changes=()):
    """The baseline's Q, K, V, S, A and Z as aligned tables, then for each intervention and the
    bug the rows of A and Z that changed, in full."""
    base = result["baseline"]
    labels = position_labels(len(base["Q"]))
    found = cases(result, head, changes)
    lines = ["baseline (rows: positions; A and S columns: the sources attended to)"]
    for name, matrix, columns in (
            ("Q", base["Q"], None), ("K", base["K"], None), ("V", base["V"], None),
            ("S = Q·Kᵀ/√d, −∞ where masked", base["masked_scores"], labels),
            ("A = softmax of each row of S", _shown(found[0]), labels),
            ("Z = A·V", base["output"], None)):
        columns = columns or [str(c + 1) for c in range(len(matrix[0]))]
        lines += [name, text_table(labels, columns, matrix), ""]
    for case in found[1:]:
        lines.append(f"{case['title']} ({case['subtitle']})" if case["subtitle"] else case["title"])
        a_rows, z_rows = case["weight_rows"] or [], case["output_rows"] or []
        if case["zeroed"]:
            a_rows = z_rows = list(range(len(labels)))
        for name, rows, matrix, columns in (("A", a_rows, _shown(case), labels),
                                            ("Z", z_rows, case["output"], None)):
            columns = columns or [str(c + 1) for c in range(len(matrix[0]))]
            if rows:
                lines += [f"  {name}, every row:" if case["zeroed"] else
                          f"  {name}, the rows that changed:",
                          text_table([labels[i] for i in rows], columns, [matrix[i] for i in rows])]
            else:
                lines.append(f"  {name}: no row changed")
        lines.append("")
    if "baseline_unchanged" in result:
        lines.append(f"baseline unchanged after all of them: {result['baseline_unchanged']}")
    return "\n".join(lines).rstrip("\n") + "\n"


def _shown(case):
    """A case's weights for a table: "0" where masked or zeroed, the number elsewhere."""
    marks = case["zeroed"] or case["hatched"]
    return [["0" if m or h else w for w, m, h in zip(row, m_row, h_row)]
            for row, m_row, h_row in zip(case["weights"], marks, case["hatched"])]


def lab_svg(result, head=HEAD, changes=()):
    """A figure of every map, each with its output Z beside it, in rows a README can hold."""
    labels = position_labels(len(result["baseline"]["weights"]))
    panels = [panel(case["title"], labels, labels, case["weights"], case["hatched"],
                    case["weight_rows"], case["subtitle"], zeroed=case["zeroed"],
                    side=("Z", case["output"]), side_highlight=case["output_rows"])
              for case in cases(result, head, changes)]
    return heatmaps_svg(panels, note="Lab 06: A with Z beside it for the baseline and each change; "
                                     "outlined: the rows of A and of Z that changed.")


def main(argv=None):
    parser = trace_parser("Lab 06: compute one attention head, then perturb it. Positions in the "
                          "intervention flags count from 1, as the lab does.", TRACE_PATH)
    parser.add_argument("--scaffold", metavar="FILE",
                        help="write a starter tiny_attention.py to fill in (never overwrites)")
    parser.add_argument("--grade", metavar="FILE",
                        help="check your own tiny_attention.py, one PASS or FAIL line per check")
    parser.add_argument("--head", metavar="FILE",
                        help='a head of your own: JSON {"X": ..., "WQ": ..., "WK": ..., "WV": ...} '
                             'with an optional "allowed" (default causal)')
    parser.add_argument("--ablate-value", metavar="J", type=_ablate_value, action="append",
                        dest="changes", help="v_J := 0 (repeatable)")
    parser.add_argument("--set-query", metavar="I=a,b,...", type=_set_query, action="append",
                        dest="changes", help="q_I := [a, b, ...] (repeatable)")
    parser.add_argument("--scale-key", metavar="J=c", type=_scale_key, action="append",
                        dest="changes", help="k_J := c·k_J (repeatable)")
    parser.add_argument("--block", metavar="I,J", type=_block, action="append",
                        dest="changes", help="query I may no longer read source J (repeatable)")
    parser.add_argument("--bug", choices=["post-softmax"],
                        help="also show the buggy procedure: softmax, then zero the future")
    parser.add_argument("--html", metavar="FILE", help="write the explorer page, one HTML file")
    args = parse_trace_args(parser, argv, other_inputs=(
        "scaffold", "grade", "head", "changes", "bug", "html"))
    if args.scaffold is not None and args.grade is not None:
        parser.error("--scaffold and --grade are two steps: run one, then the other")
    return guarded(lambda: _run(args))


def _flagged(flag, text, change):
    """change, with the flag that asked for it named in its errors: a learner sees which one."""
    def flagged_change(q, k, v, allowed):
        try:
            change(q, k, v, allowed)
        except ValueError as e:
            raise ValueError(f"{flag} {text}: {e}") from None
    flagged_change.description = change.description
    return flagged_change


def _ablate_value(text):
    try:
        return _flagged("--ablate-value", text, lab06.ablate_value(int(text)))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--ablate-value takes a position J such as 2, "
                                         f"got {text!r}") from None


def _set_query(text):
    position, _, values = text.partition("=")
    try:
        change = lab06.set_query(int(position), [float(value) for value in values.split(",")])
    except ValueError:
        raise argparse.ArgumentTypeError(f"--set-query takes I=a,b,... such as 3=1,0, "
                                         f"got {text!r}") from None
    return _flagged("--set-query", text, change)


def _scale_key(text):
    position, _, factor = text.partition("=")
    try:
        change = lab06.scale_key(int(position), float(factor))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--scale-key takes J=c such as 3=2, "
                                         f"got {text!r}") from None
    return _flagged("--scale-key", text, change)


def _block(text):
    try:
        i, j = (int(n) for n in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--block takes I,J such as 3,2, got {text!r}") from None
    return _flagged("--block", text, lab06.block(i, j))


def _run(args):
    if args.scaffold is not None or args.grade is not None:
        import grade_lab06    # here, not at the top: only these two flags need the grader
        if args.scaffold is not None:
            show(grade_lab06.scaffold(args.scaffold) + "\n")
            return 0
        lines, passed = grade_lab06.grade(args.grade)
        show("\n".join(lines) + "\n")
        return 0 if passed else 1
    changes = args.changes or []
    own = args.head is not None or changes or args.bug     # an experiment, not the lab's trace
    head = lab06.read_head(args.head) if args.head is not None else HEAD
    result = lab06.experiment(head, changes, args.bug) if own else lab06.lab()
    if args.svg is not None:
        save_view(args.svg, lab_svg(result, head, changes))
    if args.html is not None:
        save_view(args.html, lab_page(result, head, changes))
    if args.table:
        show(lab_table(result, head, changes))
    if args.svg is not None or args.table or args.html is not None:
        return 0
    json_text = to_json(rounded(result, DIGITS))
    if own:
        show(json_text)
        return 0
    return write_or_check(json_text, TRACE_PATH, args.write, args.check)


if __name__ == "__main__":
    sys.exit(main())

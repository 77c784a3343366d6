"""Lab 06's views for a person: Part 1's tables (--table --baseline), each change's moved rows
(--table with a change flag) and the maps as heatmaps (--svg). Numbers are written as the lab
writes them (lab06/exact.py): a fraction only where it lies within 1e-9 of one with a denominator
of at most 100, scores in ln 2. Positions count from 1. Each view takes what perturb_attention.py
hands it, (result, head, changes); its maps are lab06.lab.cases(result), made of result's own runs.
"""

import math

from attention import shape
from common.golden import changed_rows
from common.views import heatmaps_svg, panel, text_table
from lab06 import lab as lab06
from lab06.exact import in_c, in_ln2, written
from lab06.lab import HEAD, cases, position_labels, subscript, vector_text


def _reads(hatched_row):
    return [j for j, h in enumerate(hatched_row) if not h]


def softmax_sums(case, labels):
    """Each row's allowed sources, exp of each of their scores before any shift, and the sum: the
    softmax's denominator (2, 3 and 8 for the lab's head)."""
    rows = []
    for scores, hatched in zip(case["scores"], case["hatched"]):
        try:
            exps = [math.exp(scores[j]) for j in _reads(hatched)]
            shown = [", ".join(written(e) for e in exps), written(math.fsum(exps))]
        except OverflowError:
            shown = ["beyond float range", "beyond float range: the shift is what makes it work"]
        rows.append([", ".join(labels[j] for j in _reads(hatched))] + shown)
    return text_table(labels, ["reads", "exp of each score", "sum"], rows)


def scaled_values(case, values, labels):
    """z_i = Σ a_ij·v_j written out: each weight times its value vector, then their sum."""
    lines = []
    for i, (weights, hatched, z) in enumerate(zip(case["weights"], case["hatched"],
                                                  case["output"])):
        reads = _reads(hatched)
        terms = " + ".join(f"{written(weights[j])}·{vector_text(values[j], written)}"
                           for j in reads)
        products = " + ".join(vector_text([weights[j] * x for x in values[j]], written)
                              for j in reads)
        lines.append(f"z{subscript(i + 1)} = {terms} = "
                     + (f"{products} = " if len(reads) > 1 else "") + vector_text(z, written))
    return "\n".join(lines)


MAX_DOTS = 25       # the most dot products written out term by term


def dot_products(q, k):
    """Each q_i·k_j written term by term, K's entries in c where they are, and the score
    s_ij = q_i·k_j/√d it gives (before the mask), in ln 2 where it is a multiple of it."""
    d = len(q[0])
    if len(q) * len(k) > MAX_DOTS:
        return [f"({len(q) * len(k)} dot products: written out for heads of at most {MAX_DOTS})"]
    lines = []
    for i, q_row in enumerate(q, 1):
        for j, k_row in enumerate(k, 1):
            terms = " + ".join(f"{in_c(a)}·{in_c(b)}" for a, b in zip(q_row, k_row))
            dot = math.fsum(a * b for a, b in zip(q_row, k_row))
            pair = subscript(i) + ("," if max(i, j) > 9 else "") + subscript(j)     # ₁₀,₃
            lines.append(f"q{subscript(i)}·k{subscript(j)} = {terms} = {in_c(dot)}; "
                         f"s{pair} = {in_c(dot)}/√{d} = {in_ln2(dot / math.sqrt(d))}")
    return lines


def shapes(head, base):
    """One line of shapes: what each matrix of the head is, (rows, columns)."""
    given = ("X", "WQ", "WK", "V" if "V" in head else "WV")
    return ("shapes: " + ", ".join(f"{name} {shape(head[name])}" for name in given) + "; "
            f"Q {shape(base['Q'])}, K {shape(base['K'])}, V {shape(base['V'])};\n        "
            f"S = Q·Kᵀ/√d {shape(base['scores'])} with d = {len(base['Q'][0])}, "
            f"A {shape(base['weights'])}, Z = A·V {shape(base['output'])}")


def _shown(case):
    """A case's weights for a table: "0" where masked or zeroed, the number elsewhere."""
    marks = case["zeroed"] or case["hatched"]       # a case with zeroed entries hatches none
    return [["0" if m else w for w, m in zip(row, m_row)]
            for row, m_row in zip(case["weights"], marks)]


def _fractions(matrix):
    return [[written(w) if isinstance(w, float) else w for w in row] for row in matrix]


def part_one_table(result, head=HEAD):
    """Part 1 on the head before any change: the shapes, c, Q, K (in c), V, each q_i·k_j, S before
    the mask and masked (in ln 2), each row's softmax sum, A (also as fractions), Z and each z_i as
    scaled values; then each bug of result, its A as fractions and its row (and column) sums."""
    base, (first, *bugs) = result["baseline"], cases(result)
    labels = position_labels(len(base["Q"]))

    def table(matrix, columns=None):
        return text_table(labels, columns or [str(c + 1) for c in range(len(matrix[0]))], matrix)

    lines = [
        "Part 1: the head before any change (rows: positions; S and A columns: the sources)",
        shapes(head, base), f"c = √2·ln 2 = {lab06.C!r}, kept exact: written c below", "",
        "Q", table(_fractions(base["Q"])), "",
        "K, its entries as multiples of c where they are",
        table([[in_c(x) for x in row] for row in base["K"]]), "",
        "V", table(_fractions(base["V"])), "",
        "each dot product q_i·k_j, and the score s_ij = q_i·k_j/√d it gives",
        *dot_products(base["Q"], base["K"]), "",
        "S = Q·Kᵀ/√d before the mask, each entry a multiple of ln 2 where it is one",
        table([[in_ln2(x) for x in row] for row in base["scores"]], labels), "",
        "S masked: −∞ where allowed is False",
        table([[in_ln2(x) for x in row] for row in base["masked_scores"]], labels), "",
        "softmax of each row: the sources it reads, exp of each score before any shift, and their "
        "sum", softmax_sums(first, labels), "",
        "A = softmax of each row of S", table(_shown(first), labels), "",
        "A as fractions", table(_fractions(_shown(first)), labels), "",
        "Z = A·V", table(base["output"]), "",
        "z_i = Σ a_ij·v_j over the sources row i reads", scaled_values(first, base["V"], labels),
        ""]
    for case in bugs:
        section = result[lab06.BUGS[case["key"]][0]]
        lines += [case["title"]] + [
            f"  {which} sums: {', '.join(written(x) for x in section[which + '_sums'])}"
            for which in ("row", "column") if which + "_sums" in section] + [
            "  A as fractions:", table(_fractions(_shown(case)), labels),
            "  Z:", table(_fractions(case["output"])), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _moved(name, i, old, new, shown=written):
    """"  z₃: [3/2, 3] → [8/5, 12/5], moved by [1/10, -3/5]": one row before → after."""
    line = f"  {name}{subscript(i + 1)}: {vector_text(old, shown)} → {vector_text(new, shown)}"
    if all(math.isfinite(x) for x in old + new):
        line += f", moved by {vector_text([b - a for a, b in zip(old, new)], shown)}"
    return line


def _changed_rows(case, before):
    """The rows of S, A and Z a case changed, each before → after, and nothing else."""
    lines = []
    if case["scores"] is not None and before["scores"] is not None:
        lines += [_moved("s", i, old, new, in_ln2)
                  for i, (old, new) in enumerate(zip(before["scores"], case["scores"]))
                  if old != new]
    for name, key, rows in (("a", "weights", case["weight_rows"]),
                            ("z", "output", case["output_rows"])):
        if not rows:
            lines.append(f"  {name.upper()}: no row changed")
        lines += [_moved(name, i, before[key][i], case[key][i]) for i in rows]
        if key == "output":
            lines += [f"  z{subscript(i + 1)}: {vector_text(case['output'][i], written)}, unchanged"
                      for i in case["weight_rows"] if i not in rows]
        largest = max((abs(b - a) for i in rows for a, b in
                       zip(before[key][i], case[key][i])), default=0.0)
        if rows and largest < 1e-9:
            lines.append(f"  ({name.upper()} moved by at most {largest:.2g}: rounding alone)")
    return lines


def changes_table(result):
    """Parts 2 and 4: the rows of S, A and Z each intervention and each bug after it changed,
    before → after, and nothing of Part 1's answers."""
    labels = position_labels(len(result["baseline"]["weights"]))
    lines = []
    for case in cases(result)[1:]:
        if case["before"] is None:       # a bug on the unchanged head: Part 1's answer
            continue
        title = f"{case['title']} ({case['subtitle']})"
        lines += [title] if len(title) <= 100 else [case["title"], f"  ({case['subtitle']})"]
        lines += _changed_rows(case, case["before"])
        if case["key"] == "future_key_perturbation" and "buggy_post_softmax" in result:
            old, new = result["buggy_post_softmax"]["output"], \
                result["interventions"][case["key"]]["buggy_output"]
            rows = changed_rows(old, new)
            lines.append(f"  the buggy procedure (softmax, then zero the future) after the same "
                         f"change: Z changed at {', '.join(labels[i] for i in rows) or 'no row'}")
            lines += [_moved("z", i, old[i], new[i]) for i in rows]
        lines.append("")
    if "baseline_unchanged" in result:
        lines.append(f"baseline unchanged after all of them: {result['baseline_unchanged']}")
    return "\n".join(lines).rstrip("\n") + "\n"


def lab_svg(result):
    """A figure of every map, each with its output Z beside it, in rows a README can hold."""
    labels = position_labels(len(result["baseline"]["weights"]))
    panels = [panel(case["title"], labels, labels, case["weights"], case["hatched"],
                    case["weight_rows"], case["subtitle"], zeroed=case["zeroed"],
                    side=("Z", case["output"]), side_highlight=case["output_rows"])
              for case in cases(result)]
    return heatmaps_svg(panels, note="Lab 06: A with Z beside it for the baseline and each change; "
                                     "outlined: the rows of A and of Z that changed.")

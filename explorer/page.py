"""The explorer: one HTML file in which a learner moves through a trace, number by number: the
lesson's (lesson_page) and, from explored and page_html, Lab 06's.

The page shows the weights (T, S) as a heatmap, mixed (T, d_head) beside it, and each cell's
arithmetic with its numbers, computed and formatted here and embedded as JSON: the page's script
computes nothing. Left out: the output projection, the backward pass, the edit of a later token.
"""

import html
import json
import math
import os
from fractions import Fraction

from attention import MASK_MODES, attention_forward, causal_mask
from common import checks
from common.golden import changed_rows
from common.safe_io import read_text
from common.views import (HIGHLIGHT, MAX_DENOMINATOR, MAX_TOKENS, TOLERANCE, colour,
                          exact_fraction, number, subscript, token_labels)

LN2 = math.log(2)
LESSON_MODES = {
    "causal": ("causal mask", "The correct mask: each token reads itself and the tokens before "
                              "it. Hatched cells are masked: score −∞, weight exactly 0."),
    "none": ("no mask", "No mask: every token reads the future too (dashed). The outlined rows "
                        "differ from the causal map."),
    "zero": ("zero-score bug", "The bug: future scores 0.0 instead of −∞, and exp(0.0 − max) "
                               "is no 0, so the future (dashed) still gets weight."),
}


# ---- the fractions behind the lab's floats -----------------------------------------------------

def fraction(value):
    """(text, "=" or "≈") of the small fraction a float is, to the bit or within TOLERANCE; or None.

    >>> fraction(0.25), fraction(1 / 3), fraction(0.1 + 0.2), fraction(math.sqrt(2))
    (('1/4', '='), ('1/3', '='), ('3/10', '≈'), None)
    """
    checks.check_number("fraction's value", value)
    f = exact_fraction(value)
    return None if f is None else (str(f), "=" if float(f) == value else "≈")


def ln2_multiple(score):
    """(text, sign) of a score that is a small nonzero multiple of ln 2, as in fraction, or None.

    >>> ln2_multiple(2 * LN2), ln2_multiple(LN2 * 0.7 / 0.1), ln2_multiple(0.5)
    (('2·ln 2', '='), ('7·ln 2', '≈'), None)
    """
    checks.check_number("ln2_multiple's score", score)
    m = Fraction(score / LN2).limit_denominator(MAX_DENOMINATOR)
    back = float(m) * LN2
    if m == 0 or abs(Fraction(back) - Fraction(score)) > TOLERANCE:
        return None
    return {1: "ln 2", -1: "−ln 2"}.get(m, f"{m}·ln 2"), "=" if back == score else "≈"


# ---- the arithmetic of each cell, as lines of pieces ------------------------------------------
# A line is a list of pieces: a string, or [name, text] for a number the page can point at.

def _shown(name, value, exact=False, of_score=False):
    """The pieces of one substituted number: [name, text], then, when exact, its fraction."""
    pieces = [[name, number(value)]]
    found = exact and math.isfinite(value) and (ln2_multiple if of_score else fraction)(value)
    if found and ("/" in found[0] or "ln" in found[0] or found[1] == "≈"):
        pieces.append(f" ({found[1]} {found[0]})")
    return pieces


def _factor(name, value, exact=False):
    """A number inside a product: in parentheses when negative."""
    return ["(", *_shown(name, value, exact), ")"] if value < 0 else _shown(name, value, exact)


def _vector(name, values, exact=False):
    """The pieces of a row vector, then its fractions when every entry has one."""
    pieces = [[name, "[" + ", ".join(number(v) for v in values) + "]"]]
    found = [fraction(v) for v in values] if exact else []
    if found and all(found) and any("/" in f[0] or f[1] == "≈" for f in found):
        sign = "≈" if any(f[1] == "≈" for f in found) else "="
        pieces.append(f" ({sign} [{', '.join(f[0] for f in found)}])")
    return pieces


def softmax_terms(scores_row):
    """(max, exps, Σ) of one row of scores, the steps softmax_row takes, to the last bit.

    >>> softmax_terms([0.0, math.log(2), -math.inf])
    (0.6931471805599453, [0.5, 1.0, 0.0], 1.5)
    """
    top = max(scores_row)
    exps = [math.exp(s - top) for s in scores_row]
    return top, exps, math.fsum(exps)


def score_terms(q_i, k_j):
    """(products, scale) of one score, the steps attention_core takes, to the last bit."""
    return [a * b for a, b in zip(q_i, k_j)], 1 / math.sqrt(len(q_i))


def _cell_lines(m, i, j, terms, rows, cols, side, exact):
    """How weights[i][j] of the map m comes about, and what it adds to row i of side (mixed, or the
    lab's z); terms is row i's (max, exps, Σ)."""
    top, exps, total = terms
    q, k, v, s = m["q"], m["k"], m["v"], m["scores"][i][j]
    I, J = subscript(i + 1), subscript(j + 1)
    lines = [[f"{rows[i]} (row {i + 1}) attends to {cols[j]} (column {j + 1})"]]
    if m["blocked"][i][j] and s == -math.inf:
        return lines + [
            ["score   s = ", ["score", number(s)], f": the mask blocks this pair, whatever "
                                                    f"q{I}·k{J} is"],
            ["weight  w = exp(−∞ − max) / Σ = ", ["weight", number(m["weights"][i][j])],
             " exactly"],
            [f"into {side}{I}: nothing; 0 × v{J} adds 0"]]
    if m["blocked"][i][j]:
        lines.append(["score   s = ", *_shown("score", s), ": the bug writes this where the mask "
                      f"means −∞, whatever q{I}·k{J} is"])
    else:
        products, scale = score_terms(q[i], k[j])
        d = len(products)
        first, second = [f"score   s = (q{I}·k{J}) × 1/√{d} = ("], ["        = ("]
        for c in range(d):
            plus = [" + "] if c else []
            first += plus + _factor(f"q.{c + 1}", q[i][c]) + [" × "] + _factor(f"k.{c + 1}",
                                                                                 k[j][c])
            second += plus + _factor(f"product.{c + 1}", products[c])
        lines += [first + [") × ", *_shown("scale", scale)],
                  second + [") × ", *_shown("scale", scale), " = ",
                            *_shown("score", s, exact, of_score=True)]]
    w = exps[j] / total
    lines.append(["weight  w = exp(s − max) / Σ = exp(", *_shown("score", s), " − ",
                  *_factor("max", top), ") / ", *_shown("sum", total, exact), " = ",
                  *_shown("exp", exps[j], exact), " / ", *_shown("sum", total, exact), " = ",
                  *_shown("weight" if m["zeroed"] is None else "softmax", w, exact)])
    if m["zeroed"] is not None and m["zeroed"][i][j]:
        lines.append(["then set to 0 after the softmax: w = ", ["weight", number(0.0)],
                      "; the row is not renormalized, and its Σ held the future all the same"])
    weight = m["weights"][i][j]
    lines.append([f"into {side}{I}: w × v{J} = ", *_shown("weight", weight, exact), " × ",
                  *_vector("v", v[j], exact), " = ",
                  *_vector("contribution", [weight * value for value in v[j]], exact)])
    return lines


def _row_lines(m, i, side, exact):
    """Row i as a whole: its weights' sum, and the side row as the sum of what each source adds."""
    weights, v = m["weights"][i], m["v"]
    line = [f"{side}{subscript(i + 1)} = Σ w × v = "]
    for j, s in enumerate(m["scores"][i]):
        if s != -math.inf:
            line += ([" + "] if len(line) > 1 else []) + _vector(
                "term", [weights[j] * value for value in v[j]], exact)
    return [[f"row {i + 1}: Σ w = ", *_shown("row-sum", math.fsum(weights), exact)],
            line + [" = ", *_vector(side, m["mixed"][i], exact)]]


# ---- the maps: the lesson's mask modes ----------------------------------------------------------

def lesson_maps(params, x):
    """One map per mask mode, each from attention_forward(params, x, mode)."""
    maps, T = [], len(x)
    for mode in MASK_MODES:
        run = attention_forward(params, x, mode)
        allowed = [[True] * T for _ in range(T)] if mode == "none" else causal_mask(T)
        title, subtitle = LESSON_MODES[mode]
        maps.append({"key": mode, "title": title, "subtitle": subtitle,
                     **{name: run[name] for name in ("q", "k", "v", "scores", "weights", "mixed")},
                     "blocked": [[not ok for ok in row] for row in allowed],
                     "zeroed": None, "future": mode != "causal"})
    return maps


def explored(maps, rows, cols, side, exact):
    """What the page embeds: each map's numbers (−∞ as None), cells, rows changed from the first
    map, and every cell's and row's arithmetic. A map holds key, title, subtitle, q, k, v and mixed
    (T, d_head), scores, weights and blocked (T, S), zeroed (T, S) or None, and future; side names
    the side matrix and its rows (the lab's ("Z", "z")); exact adds the fractions."""
    modes = []
    for m in maps:
        terms = [softmax_terms(scores_i) for scores_i in m["scores"]]     # row i's (max, exps, Σ)
        modes.append({
            "key": m["key"], "title": m["title"], "subtitle": m["subtitle"],
            **{name: m[name] for name in ("q", "k", "v", "weights", "mixed")},
            "scores": [[None if s == -math.inf else s for s in row] for row in m["scores"]],
            "cells": [[_cell(m, i, j) for j in range(len(cols))] for i in range(len(terms))],
            "side_text": [[number(value) for value in row] for row in m["mixed"]],
            "changed": changed_rows(maps[0]["weights"], m["weights"]),
            "side_changed": changed_rows(maps[0]["mixed"], m["mixed"]),
            "arithmetic": [[_cell_lines(m, i, j, terms[i], rows, cols, side[1], exact)
                            for j in range(len(cols))] for i in range(len(terms))],
            "row_arithmetic": [_row_lines(m, i, side[1], exact) for i in range(len(rows))]})
    return {"rows": rows, "cols": cols, "side": side[0], "modes": modes}


def _cell(m, i, j):
    """One cell as the heatmap shows it: its text, fill, ink, and kind (masked, zeroed, future)."""
    w = m["weights"][i][j]
    masked = m["blocked"][i][j] and m["scores"][i][j] == -math.inf
    zeroed = m["zeroed"] is not None and m["zeroed"][i][j]
    kind = "masked" if masked else "zeroed" if zeroed else "future" if m["future"] and j > i else ""
    return {"text": "0" if masked or zeroed else number(w), "kind": kind,
            "fill": None if masked or zeroed else colour(w),
            "ink": "#333333" if masked or zeroed else ("#ffffff" if w > 0.55 else "#111111")}


# ---- the page ----------------------------------------------------------------------------------

FOLDER = os.path.dirname(os.path.abspath(__file__))
STYLE_PATH = os.path.join(FOLDER, "explorer.css")
SCRIPT_PATH = os.path.join(FOLDER, "explorer.js")     # shows the data's numbers; computes none


def page_html(title, note, command, switch, data):
    """One HTML file: the frame, explorer.css and explorer.js, and data (explored's) as JSON; the
    command named in note is shown as code. Raises OSError or ValueError for an unreadable file."""
    style, script = read_text(STYLE_PATH), read_text(SCRIPT_PATH)
    # a changed row's orange comes before the style: HIGHLIGHT, which the SVG views mark with too
    rows, cols, modes = data["rows"], data["cols"], data["modes"]
    width = len(modes[0]["mixed"][0])
    e = html.escape
    buttons = "".join(f'<button type="button" class="mode" data-mode="{e(m["key"])}" '
                      f'aria-pressed="false">{e(m["title"])}</button>' for m in modes)
    head = ('<tr><th class="corner">rows attend to columns</th>'
            + "".join(f'<th scope="col" class="col" data-col="{j}">{e(c)}</th>'
                      for j, c in enumerate(cols))
            + f'<th></th><th scope="colgroup" colspan="{width}" class="side-head">'
              f'{e(data["side"])}</th></tr>')
    body = "".join(
        f'<tr data-row="{i}"><th scope="row" class="row" data-row="{i}">{e(r)}</th>'
        + "".join(f'<td class="cell" data-row="{i}" data-col="{j}"></td>' for j in range(len(cols)))
        + '<td class="mark"></td>'
        + "".join(f'<td class="side" data-row="{i}" data-col="{c}"></td>' for c in range(width))
        + "</tr>" for i, r in enumerate(rows))
    # "<" inside the JSON would let a token such as "</script>" end the script element
    embedded = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title>
<style>
:root{{--changed:{HIGHLIGHT}}}
{style}</style>
</head>
<body>
<h1>{e(title)}</h1>
<p class="note">{e(note).replace(e(command), f"<code>{e(command)}</code>")}</p>
<nav id="modes" aria-label="{e(switch)}"><span class="switch">{e(switch)}:</span>{buttons}</nav>
<p id="subtitle"></p>{'<button type="button" id="reveal">Reveal this map</button>'
                       if data.get("predict_first") else ""}
<div class="scroll">
<table id="grid" tabindex="0" aria-describedby="help">
<caption>weights: row i's weight on column j, the number in each cell; {e(data["side"])} beside
</caption>
<thead>{head}</thead>
<tbody>{body}</tbody>
</table>
</div>
<p id="status" aria-live="polite"></p>
<section id="arithmetic" aria-live="polite"></section>
<p class="legend"><span class="key" style="background:{colour(0)}"></span><span class="key"
style="background:{colour(0.5)}"></span><span class="key" style="background:{colour(1)}"></span>
weight 0 to 1, its number in the cell.
<span class="key masked"></span> masked: score −∞, weight exactly 0.
<span class="key zeroed"></span> set to 0 after the softmax.
<span class="key future"></span> the future, where a causal model puts no weight.
<span class="key changed"></span> ◀ changed: a row that differs from the
{e(modes[0]["title"])} map.</p>
<p class="help" id="help">Hover a cell to see its arithmetic; click it to lock it, click again or
press Escape to unlock. Tab to the map (or click it), then the arrow keys move the selection and
Enter or Space locks or unlocks it. The address keeps the state, #mode=…&amp;row=…&amp;col=…
(positions from 1): copy it to share what you see.</p>
<script type="application/json" id="explorer-data">{embedded}</script>
<script>
{script}</script>
</body>
</html>
"""


def lesson_page(params, x, tokens, sentence):
    """The lesson's explorer for x (T, d_model) of the tokens of sentence: the three mask modes.
    Raises ValueError unless there is one token per row of x, at most MAX_TOKENS; TypeError."""
    if type(sentence) is not str:
        raise TypeError(f"sentence must be a str, got {checks.kind(sentence)}")
    labels = token_labels(tokens)
    if not 1 <= len(x) <= MAX_TOKENS or len(labels) != len(x):
        raise ValueError(f"the explorer takes 1 to {MAX_TOKENS} positions, one token each; got "
                         f"{len(x)} rows of x and {len(labels)} tokens")
    note = ("Every number on this page was computed in Python by attention_forward (attention.py) "
            "and written in by trace_attention.py --html; the page's script only shows them. "
            "Untrained, seeded weights; positions count from 1.")
    return page_html(f"Causal self-attention on {sentence!r}", note, "trace_attention.py --html",
                     "mask", explored(lesson_maps(params, x), labels, labels, ("mixed", "mixed"),
                                      exact=False))

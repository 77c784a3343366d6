"""Views of attention maps for a person: aligned text tables and a self-contained SVG of heatmaps
(heatmaps_svg of panels, text_table, token_labels such as ␣cat@5, positions_text). A panel's
weights are (T, S): rows the token whose output is computed, columns the tokens it attends to.
What these show counts positions from 1; what they take is a trace's index, from 0. They draw
only: the numbers come from the traces.
"""

import math
from fractions import Fraction
import re
from collections import Counter
import textwrap

from common.checks import check_index

MASKED_FILL = "url(#masked)"
ZEROED_FILL = "url(#zeroed)"
MAX_WIDTH = 900        # a figure's panels wrap to new rows beyond this width, about a README's
MAX_TOKENS = 64        # the longest side a map may have: beyond it the figure is too large to read
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")   # characters XML 1.0 forbids
HIGHLIGHT = "#d95f02"
MAX_DENOMINATOR = 100  # a fraction with a larger denominator explains nothing at a glance
LARGE = 1e16           # from here a view writes a number with an exponent, not as its digits
TOLERANCE = 1e-9       # the lab's bound: a ratio of powers of 2, computed in floats, is ulps off


def escape(text):
    """Text made safe for an SVG: &, <, > and quotes escaped, a character XML cannot hold as U+FFFD.

    >>> escape('x" onload="alert(1)')
    'x&quot; onload=&quot;alert(1)'
    """
    text = _NOT_XML.sub("\ufffd", str(text)).replace("&", "&amp;")
    return text.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def exact_fraction(x):
    """The fraction (denominator ≤ MAX_DENOMINATOR) within TOLERANCE of x below LARGE, or None.

    >>> [exact_fraction(x) for x in (1 / 3, 2.0, math.log(2), 1e300)]
    [Fraction(1, 3), Fraction(2, 1), None, None]
    """
    if type(x) not in (float, int) or not -LARGE < x < LARGE:
        return None             # a bool or a subclass too, NaN, ±∞ and an int no float can hold
    fraction = Fraction(x).limit_denominator(MAX_DENOMINATOR)
    return fraction if abs(Fraction(x) - fraction) <= TOLERANCE else None


def subscript(n):
    return str(n).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def label(token):
    """How a token is shown: a leading space as ␣, a lone space as ␣ and a newline as ↵.

    >>> [label(" has"), label(" "), label("\\n"), label("mia")]
    ['␣has', '␣', '↵', 'mia']
    """
    return token.replace(" ", "␣").replace("\n", "↵")


def token_labels(tokens):
    """The labels of a sentence's tokens; one that stands more than once gets its position from 1.

    >>> token_labels(["the", " cat", " saw", " the", " cat"])
    ['the', '␣cat@2', '␣saw', '␣the', '␣cat@5']
    """
    if type(tokens) not in (list, tuple) or not all(type(token) is str for token in tokens):
        raise TypeError(f"token_labels needs a list of token strings, got {tokens!r:.60}")
    shown = [label(token) for token in tokens]
    counts = Counter(shown)
    labels = [f"{name}@{i}" if counts[name] > 1 else name for i, name in enumerate(shown, 1)]
    if len(set(labels)) != len(labels):      # a token that reads like another's label: x@1
        labels = [f"{name}@{i}" for i, name in enumerate(shown, 1)]
    return labels


def numbered_labels(tokens):
    """token_labels, each after its position from 1: a table's rows, one a token.

    >>> numbered_labels(["the", " cat", " the"])
    ['1 the', '2 ␣cat', '3 ␣the']
    """
    return [f"{n} {name}" for n, name in enumerate(token_labels(tokens), 1)]


def positions_text(indices):
    """0-based indices in words, counted from 1. Raises TypeError or ValueError (one below 0).

    >>> [positions_text([4, 5]), positions_text([0]), positions_text([0, 1, 2]), positions_text([])]
    ['positions 5 and 6', 'position 1', 'positions 1, 2 and 3', 'no position']
    """
    if type(indices) not in (list, tuple) or not all(type(i) is int for i in indices):
        raise TypeError(f"positions_text needs a list of int indices, got {indices!r:.60}")
    if any(i < 0 for i in indices):           # −1 would print as "position 0"
        raise ValueError(f"positions_text needs indices from 0, got {list(indices)!r:.60}")
    counted = [str(i + 1) for i in indices]
    if len(counted) < 2:
        return f"position {counted[0]}" if counted else "no position"
    return f"positions {', '.join(counted[:-1])} and {counted[-1]}"


def number(value, decimals=4):
    """A number as a table shows it: None as −∞, no minus on 0.0000, an exponent from LARGE on.

    >>> [number(0.51644), number(None), number(-1e-9), number(6.93e307)]
    ['0.5164', '−∞', '0.0000', '6.9300e+307']
    """
    if value is None or value == -math.inf:
        return "−∞"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"an int of {value.bit_length()} bits"
    if abs(value) >= LARGE:
        return f"{value:.{decimals}e}"
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def text_table(row_labels, col_labels, matrix, marks=None):
    """Rows of text, columns right-aligned: a number with 4 decimals (None as −∞), a string as is;
    marks {row: text} after a row. Raises ValueError unless matrix and marks fit the labels."""
    if len(matrix) != len(row_labels) or any(len(row) != len(col_labels) for row in matrix):
        raise ValueError(f"text_table needs {len(row_labels)} rows of {len(col_labels)} entries to "
                         f"fit the labels, got rows of {[len(row) for row in matrix][:8]} entries")
    for row in marks or {}:            # a mark on row −1 or 99 would be dropped without a word
        check_index("a mark's row", row, len(matrix), "a row of the table")
    cells = [[""] + list(col_labels)] + [[r] + [v if isinstance(v, str) else number(v) for v in row]
                                         for r, row in zip(row_labels, matrix)]
    widths = [max(len(row[c]) for row in cells) for c in range(len(cells[0]))]
    lines = []
    for n, row in enumerate(cells):
        line = row[0].ljust(widths[0]) + "".join("  " + cell.rjust(w)
                                                 for cell, w in zip(row[1:], widths[1:]))
        if marks and n > 0 and (n - 1) in marks:
            line += "  " + marks[n - 1]
        lines.append(line.rstrip())
    return "\n".join(lines)


def panel(title, row_labels, col_labels, weights, hatched, highlight=(), subtitle="", zeroed=None,
          side=None, future=False, side_highlight=(), mark="◀ changed",
          axes=("columns: attends to →", "rows: output for ↑")):
    """One heatmap: weights (T, S) in [0, 1]; hatched (T, S), True where the mask blocks a pair;
    zeroed (T, S), True where a weight was set to 0 after the softmax; highlight, rows to outline
    with mark; side, (name, T rows) beside the map, side_highlight outlined; future, outline the
    cells above the diagonal. Raises ValueError when these do not fit the labels."""
    rows, cols = len(row_labels), len(col_labels)
    if not 1 <= max(rows, cols) <= MAX_TOKENS or min(rows, cols) < 1:
        raise ValueError(f"a map needs 1 to {MAX_TOKENS} rows and columns, got {rows} × {cols}")
    zeroed = zeroed or [[False] * cols for _ in range(rows)]
    for name, m in (("weights", weights), ("hatched", hatched), ("zeroed", zeroed)):
        if len(m) != rows or any(len(row) != cols for row in m):
            raise ValueError(f"{name} must be {rows} × {cols} to fit the labels, got {len(m)} rows "
                             f"of {sorted({len(row) for row in m})} entries")
    if not all(type(w) in (float, int) and math.isfinite(w) for row in weights for w in row):
        raise ValueError("weights must be finite numbers, shaded from 0 to 1")
    if side is not None and len(side[1]) != rows:
        raise ValueError(f"the side matrix {side[0]} must have {rows} rows, got {len(side[1])}")
    for name, marked in (("highlighted", highlight), ("side-highlighted", side_highlight)):
        if any(type(i) is not int or not 0 <= i < rows for i in marked):
            raise ValueError(f"{name} rows must be ints 0 to {rows - 1}, got {list(marked)}")
    return {"title": title, "subtitle": subtitle, "rows": list(row_labels),
            "cols": list(col_labels), "weights": weights, "hatched": hatched, "zeroed": zeroed,
            "highlight": list(highlight), "side": side, "future": future,
            "side_highlight": list(side_highlight), "mark": mark, "axes": tuple(axes)}


def colour(w):
    """White at 0 to deep blue at 1."""
    w = min(max(w, 0.0), 1.0)
    r, g, b = (round(a + (c - a) * w) for a, c in zip((247, 251, 255), (8, 48, 107)))
    return f"#{r:02x}{g:02x}{b:02x}"


def _text_width(text, font):
    return len(text) * font * 0.62


def _draw_panel(p):
    """(SVG elements, width, height) of one panel with its top-left corner at (0, 0)."""
    n_rows, n_cols = len(p["rows"]), len(p["cols"])
    cell = max(30, min(56, 336 // max(n_rows, n_cols)))
    decimals = 4 if cell >= 56 else 2       # 2 for a long sentence
    font = max(9.0, round(min(13.0, (cell - 6) / (0.62 * (decimals + 2))), 1))
    label_font = max(font, 11.0)
    left = 24 + max(_text_width(r, label_font) for r in p["rows"])
    col_label_height = 10 + max(_text_width(c, label_font) for c in p["cols"]) * 0.71
    top = 60 + col_label_height
    grid_w, grid_h = n_cols * cell, n_rows * cell
    side_x = left + grid_w + 16
    side_w = 0 if p["side"] is None else len(p["side"][1][0]) * (cell - 4) + 8
    width = max(left + grid_w + 16 + side_w
                + (_text_width(p["mark"], 11) + 8 if p["highlight"] and not side_w else 8),
                _text_width(p["title"], 15) + 10, _text_width(p["subtitle"], 12) + 10)
    out = [f'<g class="panel" data-title="{escape(p["title"])}">',
           f'<text x="0.0" y="18.0" class="title">{escape(p["title"])}</text>',
           f'<text x="0.0" y="36.0" class="subtitle">{escape(p["subtitle"])}</text>',
           f'<text x="{left:.1f}" y="54.0" class="axis">{escape(p["axes"][0])}</text>',
           f'<text class="axis" transform="translate(12.0,{top + grid_h:.1f}) '
           f'rotate(-90)">{escape(p["axes"][1])}</text>']
    for j, name in enumerate(p["cols"]):
        cx, cy = left + (j + 0.5) * cell, top - 6
        out.append(f'<text class="label" font-size="{label_font}" '
                   f'transform="translate({cx:.1f},{cy:.1f}) rotate(-45)">{escape(name)}</text>')
    for i, name in enumerate(p["rows"]):
        cy = top + (i + 0.5) * cell
        out.append(f'<text class="label row" font-size="{label_font}" x="{left - 6:.1f}" '
                   f'y="{cy:.1f}">{escape(name)}</text>')
        for j in range(n_cols):
            out += _draw_cell(p, i, j, left + j * cell, top + i * cell, cell, font, decimals)
        if i in p["highlight"]:
            out.append(f'<rect class="highlight" x="{left - 2:.1f}" y="{top + i * cell - 2:.1f}" '
                       f'width="{grid_w + 4}" height="{cell + 4}"/>')
            if p["side"] is None:
                out.append(f'<text class="changed" x="{left + grid_w + 6:.1f}" y="{cy:.1f}">'
                           f'{escape(p["mark"])}</text>')
    out.append(f'<rect class="frame" x="{left:.1f}" y="{top:.1f}" width="{grid_w}" '
               f'height="{grid_h}"/>')
    if p["future"] and n_rows == n_cols > 1:   # where a causal model puts no weight
        out.append(f'<polygon class="future" points="{_future_points(left, top, cell, n_cols)}"/>')
    if p["side"] is not None:
        out += _draw_side(p["side"], side_x, top, cell, font, decimals)
        for i in p["side_highlight"]:
            out.append(f'<rect class="highlight side-changed" x="{side_x - 2:.1f}" '
                       f'y="{top + i * cell - 2:.1f}" width="{side_w - 4}" height="{cell + 4}"/>')
    scale_y = top + grid_h + 16       # the colour scale under the grid
    out.append(f'<rect x="{left:.1f}" y="{scale_y:.1f}" width="{grid_w}" height="10" '
               f'fill="url(#scale)" class="scale"/>')
    for tick in (0.0, 0.5, 1.0):
        out.append(f'<text class="tick" x="{left + tick * grid_w:.1f}" y="{scale_y + 24:.1f}">'
                   f'{tick:g}</text>')
    out.append("</g>")
    return out, width, top + grid_h + 50


def _draw_cell(p, i, j, x, y, cell, font, decimals):
    w, masked, zeroed = p["weights"][i][j], p["hatched"][i][j], p["zeroed"][i][j]
    kind = "cell masked" if masked else "cell zeroed" if zeroed else "cell"
    fill = MASKED_FILL if masked else ZEROED_FILL if zeroed else colour(w)
    ink = "#555555" if masked or zeroed else ("#ffffff" if w > 0.55 else "#111111")
    text = "0" if masked or zeroed else number(w, decimals)
    return [f'<rect class="{kind}" data-row="{i}" data-col="{j}" x="{x:.1f}" y="{y:.1f}" '
            f'width="{cell}" height="{cell}" fill="{fill}"/>',
            f'<text class="value" font-size="{font}" fill="{ink}" x="{x + cell / 2:.1f}" '
            f'y="{y + cell / 2:.1f}">{text}</text>']


def _future_points(x, y, cell, n):
    """The staircase outline of the cells above the diagonal of an n × n grid at (x, y)."""
    points = [(1, 0), (n, 0), (n, n - 1)]
    points += [corner for k in range(n - 1, 0, -1) for corner in ((k, k), (k, k - 1))]
    return " ".join(f"{x + a * cell:.1f},{y + b * cell:.1f}" for a, b in points)


def _draw_side(side, x, y, cell, font, decimals):
    """The side matrix (name, T rows of numbers) as a column of values beside the map."""
    name, matrix = side
    w = cell - 4
    out = [f'<text class="side-title" x="{x + len(matrix[0]) * w / 2:.1f}" y="{y - 8:.1f}">'
           f'{escape(name)}</text>']
    for i, row in enumerate(matrix):
        for c, value in enumerate(row):
            out.append(f'<rect class="side" x="{x + c * w:.1f}" y="{y + i * cell:.1f}" '
                       f'width="{w}" height="{cell}"/>')
            out.append(f'<text class="value side-value" font-size="{font}" '
                       f'x="{x + (c + 0.5) * w:.1f}" y="{y + (i + 0.5) * cell:.1f}">'
                       f'{number(value, min(decimals, 3))}</text>')
    return out


MASKED_LEGEND = "masked: the score is −∞, so the weight is exactly 0, not a small weight"


def heatmaps_svg(panels, note=None, max_width=MAX_WIDTH, hatched_legend=MASKED_LEGEND):
    """One self-contained SVG: the panels in rows no wider than max_width, a legend (hatched_legend
    for hatched cells) and a note. Raises ValueError for no panels, TypeError for a bad one."""
    if not panels:
        raise ValueError("heatmaps_svg needs at least one panel, got none")
    if not all(isinstance(p, dict) and "weights" in p for p in panels):
        raise TypeError("heatmaps_svg needs panels made by views.panel")
    if note is not None and not isinstance(note, str):
        raise TypeError(f"note must be text, got {type(note).__name__}")
    parts, x, y, row_height, widest = [], 16.0, 16.0, 0.0, 0.0
    for p in panels:
        elements, width, height = _draw_panel(p)
        if x > 16 and x + width > max_width:              # this row is full: start the next
            x, y, row_height = 16.0, y + row_height + 24, 0.0
        parts += [f'<g transform="translate({x:.1f},{y:.1f})">', *elements, "</g>"]
        x += width + 24
        row_height, widest = max(row_height, height), max(widest, x - 24)
    legend_y = y + row_height + 8
    legends = [(MASKED_FILL, "legend", hatched_legend)]
    if any(any(any(row) for row in p["zeroed"]) for p in panels):
        legends.append((ZEROED_FILL, "legend", "zeroed after the softmax: the future was in the "
                                               "denominator all the same"))
    if any(p["future"] for p in panels):
        legends.append(("none", "legend future", "outlined: the future, where a causal model puts "
                                                 "no weight"))
    for n, (fill, kind, text) in enumerate(legends):
        at = legend_y + 24 * n
        parts.append(f'<rect x="16" y="{at:.1f}" width="18" height="18" fill="{fill}" '
                     f'class="{kind}"/>')
        parts.append(f'<text class="note" x="42" y="{at + 13:.1f}">{escape(text)}</text>')
    bottom = legend_y + 24 * len(legends)
    total_w = max(widest + 16, 620)
    for line in textwrap.wrap(note or "", width=int((total_w - 32) / _text_width("x", 12))):
        parts.append(f'<text class="note" x="16" y="{bottom + 14:.1f}">{escape(line)}</text>')
        bottom += 18
    total_h = bottom + 8
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" '
        f'font-family="DejaVu Sans, Verdana, sans-serif">',
        "<defs>",
        '<pattern id="masked" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" fill="#e4e4e4"/>'
        '<line x1="0" y1="0" x2="0" y2="6" stroke="#9a9a9a" stroke-width="2"/></pattern>',
        '<pattern id="zeroed" width="8" height="8" patternUnits="userSpaceOnUse"><rect width="8" '
        'height="8" fill="#fdecd8"/><circle cx="4" cy="4" r="1.6" fill="#d95f02"/></pattern>',
        f'<linearGradient id="scale"><stop offset="0" stop-color="{colour(0)}"/>'
        f'<stop offset="0.5" stop-color="{colour(0.5)}"/>'
        f'<stop offset="1" stop-color="{colour(1)}"/></linearGradient>',
        "<style>"
        ".title{font-size:15px;font-weight:bold;fill:#111}.subtitle{font-size:12px;fill:#333}"
        ".axis{font-size:11px;fill:#555}.label{fill:#111;dominant-baseline:middle}"
        ".label.row{text-anchor:end}.value{text-anchor:middle;dominant-baseline:central}"
        ".cell{stroke:#ffffff;stroke-width:1}.frame{fill:none;stroke:#777;stroke-width:1}"
        ".future{fill:none;stroke:#c51b7d;stroke-width:2.5;stroke-dasharray:6 3}"
        ".legend.future{stroke:#c51b7d;stroke-width:2.5;stroke-dasharray:6 3}"
        ".side{fill:#f4f4f4;stroke:#ffffff;stroke-width:1}"
        ".side-title{font-size:12px;font-weight:bold;fill:#333;text-anchor:middle}"
        ".side-value{fill:#111}.highlight{fill:none;stroke:" + HIGHLIGHT + ";stroke-width:3}"
        ".changed{font-size:11px;fill:" + HIGHLIGHT + ";dominant-baseline:middle}"
        ".scale{stroke:#777;stroke-width:0.5}.tick{font-size:10px;fill:#555;text-anchor:middle}"
        ".legend{stroke:#777;stroke-width:0.5}.note{font-size:12px;fill:#333}</style>",
        "</defs>",
        f'<rect width="{total_w:.0f}" height="{total_h:.0f}" fill="#ffffff"/>',
    ]
    return "\n".join(head + parts + ["</svg>"]) + "\n"

"""Lab 06's predictions sheet: written blank, filled in by hand before running anything, then
checked exactly against the lab's own results (lab06/lab.py), without ever printing one of them.

    python3 perturb_attention.py --predict predictions.txt    write the sheet, or check it

A sheet is text, one item a line, `<id>: <answer>` (1.5 A, 2.3 z3), # for a comment. An answer is
an exact number as lab06/exact.py reads it (5/4, 3 ln 2, −∞), a vector, a matrix (a row a
position) or a list of positions counted from 1 ([3], []). Each is right, WRONG (naming the first
entry that differs, never its value), not yet predicted, or cannot be read (saying what was
expected). Left out: partial credit, and any item whose value has no exact form (× 1000 on a row's
scores gives weights of 2⁻¹⁰⁰⁰, which the lab writes as 0).
"""

import math
import os
import re
import shlex
import textwrap

from common.safe_io import check_output_path, read_text, write_atomic
from lab06 import lab
from lab06.exact import exact_form, nested, read_exact, value_of

NUMBERS, POSITIONS = "numbers", "positions"      # an item's kind: exact numbers, or positions
PART_TWO = [(key, title.split(",")[0].removeprefix("Part ")) for key, title in lab.TITLES.items()]
SECTIONS = [
    ("Part 1: the head as it is. Shapes [rows, columns]; K in c; S in ln 2, before the mask "
     "and masked", [(f"1.shape {name}", NUMBERS, ()) for name in "QKVSAZ"]
     + [("1.K", NUMBERS, ("c",)), ("1.S", NUMBERS, ("ln 2",)), ("1.S masked", NUMBERS, ("ln 2",)),
        ("1.sources", POSITIONS, ()), ("1.4 denominators", NUMBERS, ()), ("1.5 A", NUMBERS, ()),
        ("1.6 Z", NUMBERS, ()), ("1.dest A", NUMBERS, ())]),
    ("Part 1: the buggy procedure, softmax over every source, then zero the future",
     [("1.bug A", NUMBERS, ()), ("1.bug row sums", NUMBERS, ()), ("1.bug Z", NUMBERS, ())]),
    *[(lab.TITLES[key], [(f"{n} A rows changed", POSITIONS, ()),
                         (f"{n} Z rows changed", POSITIONS, ()), (f"{n} z3", NUMBERS, ())]
                        + [(f"{n} bug z1", NUMBERS, ())] * (key == "future_key_perturbation"))
      for key, n in PART_TWO],
    ("The optional checks: [1, −2] added to every value; the weights [3/8, 1/8, 1/2] over the "
     "values [2, 0], [2, 0], [4, 0]; 1000 added to row 3's scores",
     [("opt shift Z", NUMBERS, ()), ("opt shift bug Z", NUMBERS, ()),
      ("opt mixtures z3", NUMBERS, ()), ("opt offset a3", NUMBERS, ())]),
]
ITEMS = [item for _, items in SECTIONS for item in items]


def answers():
    """{id: value} for every item, as lab06.lab computes it: floats, or positions counted from 1."""
    record = lab.lab()
    base, bug, checks = record["baseline"], record["buggy_post_softmax"], record["checks"]
    found = {f"1.shape {name}": [len(m), len(m[0])] for name, m in zip("QKVSAZ", (
        base["Q"], base["K"], base["V"], base["scores"], base["weights"], base["output"]))}
    found.update({
        "1.K": base["K"], "1.S": base["scores"], "1.S masked": base["masked_scores"],
        "1.sources": [[j + 1 for j, ok in enumerate(row) if ok] for row in lab.HEAD["allowed"]],
        # the softmax's denominator: the sum of exp of the allowed scores, before any shift
        "1.4 denominators": [math.fsum(math.exp(s) for s in row if s != -math.inf)
                             for row in base["masked_scores"]],
        "1.5 A": base["weights"], "1.6 Z": base["output"],
        "1.dest A": lab.softmax_over_destinations(*lab.projected())[0],
        "1.bug A": bug["weights"], "1.bug row sums": bug["row_sums"], "1.bug Z": bug["output"],
        "opt shift Z": checks["shared_value_shift"]["output"],
        "opt shift bug Z": checks["shared_value_shift"]["buggy_output"],
        "opt mixtures z3": checks["equal_mixtures"]["output_b"],
        "opt offset a3": checks["score_offset"]["offset_weights"][2]})
    for key, n in PART_TWO:
        changed = record["interventions"][key]
        found[f"{n} A rows changed"] = [i + 1 for i in changed["weight_rows_changed"]]
        found[f"{n} Z rows changed"] = [i + 1 for i in changed["output_rows_changed"]]
        found[f"{n} z3"] = changed["output"][2]
        if "buggy_output" in changed:
            found[f"{n} bug z1"] = changed["buggy_output"][0]
    return found


def sheet_text(path):
    """A blank sheet: a header saying how to write answers, then every item under its part."""
    name = shlex.quote(path)
    lines = [
        "# Lab 06, predictions: answer each item by hand, after its colon, before running the lab.",
        "# Numbers exact, as the lab writes them: 5/4 or 1.25, 3 ln 2 or ln 2/4, c (= √2·ln 2),",
        "# −∞ or -inf; a rounded decimal (0.333 for 1/3) is wrong. A vector [a, b]; a matrix",
        "# [[a, b], [c, d]], one row a position. Positions count from 1: rows as lists [3], [].",
        f"# Check it (it never prints an answer): python3 perturb_attention.py --predict {name}",
        "# Then compare, in a submission:",
        f"#   python3 perturb_attention.py --predict {name} --submission submission.md"]
    for heading, items in SECTIONS:
        lines += [""] + [f"# {line}" for line in textwrap.wrap(heading, 96)]
        lines += [f"{key}:" for key, _, _ in items]
    return "\n".join(lines) + "\n"


def read_sheet(text):
    """{id: answer text} from a sheet's text, and the messages of the lines that cannot be read."""
    known, given, problems = {key for key, _, _ in ITEMS}, {}, []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, colon, answer = line.partition(":")
        key = " ".join(key.split())
        if not colon:
            problems.append(f"line {n}: expected <id>: <answer>, got {_quoted(line.strip())}")
        elif key not in known:
            problems.append(f"line {n}: {_quoted(key)} is no item of the sheet: expected an id "
                            f"it lists, such as 1.5 A")
        elif key in given:
            problems.append(f"line {n}: {key} is answered twice: keep one of the lines")
        else:
            given[key] = answer.strip()
    return given, problems


def _quoted(text, most=32):
    return repr(text if len(text) <= most else text[:most - 1] + "…")


def _depth(value):
    """How deep the lists go: 0 for a number, 1 for a vector or [], 2 for a matrix."""
    return 1 + max(map(_depth, value), default=0) if isinstance(value, list) else 0


def _form(kind, expected):
    """What an answer of this kind and depth looks like, as the messages say it."""
    if kind == POSITIONS:
        return ("positions counted from 1, such as [3] or []" if _depth(expected) == 1 else
                "a list of positions for each row, such as [[1], [1, 2], []]")
    return ["an exact number", "a vector [a, b]", "a matrix [[a, b], [c, d]]"][_depth(expected)]


def _place(where, depth):
    """(3, 2) -> "row 3, entry 2"; (2,) of a vector -> "entry 2"; () -> "the answer"."""
    names = ["row", "entry"][2 - depth:]
    return ", ".join(f"{name} {n}" for name, n in zip(names, where)) or "the answer"


def _lengths(answer, expected, where, depth):
    """None when answer has as many entries as expected, else which way (not how far) it is off."""
    if len(answer) == len(expected):
        return None
    what = "rows" if not where and depth == 2 else "entries"
    return (f"{_place(where, depth)} has" if where else "has") + \
        f" too {'few' if len(answer) < len(expected) else 'many'} {what}"


def _numbers_difference(answer, expected, units, where=(), depth=None):
    """The first entry of answer (texts) that is not expected's exact value ("row 3, entry 2 is
    not right"), or None. Raises ValueError for an entry that cannot be read."""
    depth = _depth(expected) if depth is None else depth
    if isinstance(expected, list):
        if not isinstance(answer, list):
            raise ValueError(f"{_place(where, depth)}: expected a list, got a number")
        for n, (a, e) in enumerate(zip(answer, expected), 1):
            if found := _numbers_difference(a, e, units, where + (n,), depth):
                return found
        return _lengths(answer, expected, where, depth)
    if isinstance(answer, list):
        raise ValueError(f"{_place(where, depth)}: expected a number, got a list")
    try:
        form = read_exact(answer)
    except ValueError as e:
        raise ValueError(f"{_place(where, depth)}: {e}") from None
    right = exact_form(expected, units)
    if form == right:
        return None
    place = _place(where, depth)
    decimals = answer.partition(".")[2].strip()
    if form != -math.inf and form[1] == "" and decimals.isdigit() and right != -math.inf and \
            form[0] * 10 ** len(decimals) in _cut(value_of(right), len(decimals)):
        return f"{place} is a rounded decimal: write it exactly (a fraction, or in ln 2)"
    return f"{place} is not right"


def _cut(x, digits):
    """x to digits decimals, rounded and truncated, each times 10 ** digits: the decimals a learner
    writes for x (0.333 or 0.334 for 1/3 is a rounding; 0.41 for 2/5, or 0.4 for 1/3, is none).

    >>> sorted(_cut(1 / 3, 3)), sorted(_cut(2 / 5, 2)), sorted(_cut(-2 / 3, 1))
    ([333], [40], [-7, -6])
    """
    scaled = x * 10 ** digits
    return {round(scaled), math.trunc(scaled + math.copysign(1e-9, scaled))}


def _positions_difference(answer, expected, units=(), where=()):
    """What is wrong with a list of positions (order and repeats aside; row by row for a list a
    row), or None: a position listed that is not right, or one missing (never which)."""
    if expected and isinstance(expected[0], list):
        for n, (a, e) in enumerate(zip(answer, expected), 1):
            if not isinstance(a, list):
                raise ValueError(f"row {n}: expected a list of positions, got a number")
            if found := _positions_difference(a, e, units, (n,)):
                return found
        return _lengths(answer, expected, where, 2)
    place = f"row {where[0]}: " if where else ""
    if not all(isinstance(p, str) and re.fullmatch(r"\d{1,6}", p) for p in answer):
        raise ValueError(f"{place}expected positions counted from 1, such as [3] or [], got "
                         f"{_quoted(str(answer))}")
    if (listed := sorted({int(p) for p in answer})) == expected:
        return None
    hint = " (positions count from 1)" if 0 in listed or [p + 1 for p in listed] == expected else ""
    extra = [p for p in listed if p not in expected]
    return (f"{place}lists {extra[0]}, which is not right{hint}" if extra
            else f"{place}misses a position{hint}")


def verdict(item, text, expected):
    """("right" | "WRONG" | "not yet" | "cannot read", detail) of an answer against the lab's."""
    _, kind, units = item
    if not text:
        return "not yet", ""
    try:
        answer = nested(text)
    except ValueError as e:
        return "cannot read", f"{_quoted(text)}: {e}; expected {_form(kind, expected)}"
    if _depth(answer) != _depth(expected):
        return "cannot read", f"{_quoted(text)}: expected {_form(kind, expected)}"
    try:
        compare = _positions_difference if kind == POSITIONS else _numbers_difference
        difference = compare(answer, expected, units)
    except ValueError as e:
        return "cannot read", str(e)
    return ("right", "") if difference is None else ("WRONG", difference)


def results(path):
    """(item, answer text, the lab's value, status, detail) for each item of the sheet at path,
    and the messages of its lines that are no item."""
    given, problems = read_sheet(read_text(path))
    expected = answers()
    rows = [(item, given.get(item[0], ""), expected[item[0]]) for item in ITEMS]
    return [(*row, *verdict(*row)) for row in rows], problems


def report(found, problems):
    """The checker's lines of results (one an item, the lines that are no item, a count; never a
    value of the lab's) and whether every item is right."""
    lines, counts = [], {"right": 0, "WRONG": 0, "cannot read": 0, "not yet": 0}
    for (key, _, _), _, _, status, detail in found:
        counts[status] += 1
        joiner = " " if status == "cannot read" else ", "
        lines.append(f"{key}: {status}" + (joiner + detail if detail else ""))
    lines += problems
    lines.append(f"{counts['right']} of {len(found)} right, {counts['WRONG']} wrong, "
                 f"{counts['cannot read'] + len(problems)} that cannot be read, "
                 f"{counts['not yet']} not yet predicted")
    return lines, counts["right"] == len(found) and not problems


def predict(path):
    """--predict FILE: write a blank sheet where there is none, else check it: (text, status)."""
    check_output_path(path)      # a folder or a file of the project's is no sheet
    if not os.path.lexists(path):
        write_atomic(path, sheet_text(path))
        return (f"wrote {path}: answer each item by hand, then run --predict {path} again to "
                f"check them\n"), 0
    lines, all_right = report(*results(path))
    return "\n".join(lines) + "\n", 0 if all_right else 1

"""Lab 06's grader, comparing the learner's answer against ours: mismatch (a matrix) and
row_mismatch (a row) name the first entry that differs, counted from 1 (right: a float or an int
within TOLERANCE, exactly −∞ or 0.0 where blocked); diagnose, the known mistake (mistakes.py).
"""

import json
import math

from common.views import TOLERANCE
from lab06 import lab as lab06

LIKENESS = 1e-6       # how close wrong numbers must come to a known mistake's for it to be named


def is_number(x):
    """A float, or an int a float can hold: what a matrix of the lab may contain."""
    return type(x) is float or (type(x) is int and -2 ** 1023 < x < 2 ** 1023)


def number_text(x):
    """A number for a message, with the small fraction it stands for, if any.

    >>> number_text(1 / 3), number_text(-math.inf), number_text(0.2689414213699951)
    ('0.3333333333 (1/3)', '−∞', '0.2689414214')
    """
    if math.isinf(x) or math.isnan(x):
        return {math.inf: "∞", -math.inf: "−∞"}.get(x, "NaN")
    fraction = lab06.exact_fraction(x)
    shown = f"{x:.10g}"
    return f"{shown} ({fraction})" if fraction is not None and fraction.denominator > 1 else shown


def unread(value):
    """N for "<list of N>", the runner's word for a list too long to read; else None."""
    if isinstance(value, str) and value.startswith("<list of ") and value[9:-1].isdigit():
        return int(value[9:-1])
    return None


def came(value):
    """What came from the learner's process, in a few words."""
    if unread(value) is not None:
        return f"a list of {unread(value):,} items"
    if isinstance(value, str):
        name, _, number = value.strip("<>").partition(" ")
        if name == "NoneType":
            return "None"
        hint = (": a number must be a float or an int itself, not a subclass or a bool"
                if number and name not in ("float", "int") else "")
        return f"a {name}{' ' + number if number else ''}{hint}"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _entries_problem(got, want, where, blocked=None, blocked_value=None):
    """The first entry of a row that is not a number or differs from want, or None."""
    for j, (g, w) in enumerate(zip(got, want)):
        if not is_number(g):
            return f"{where(j + 1)}: expected a float or an int, got {came(g)}"
        if blocked and blocked[j]:
            if g != blocked_value:
                return (f"{where(j + 1)} is blocked: expected exactly "
                        f"{number_text(blocked_value)}, got {number_text(g)}")
        elif not abs(g - w) <= TOLERANCE:
            return f"{where(j + 1)}: expected {number_text(w)}, got {number_text(g)}"
    return None


def mismatch(got, want, what, blocked=None, blocked_value=None):
    """got's first difference from want beyond TOLERANCE (not blocked_value where blocked), or None.

    >>> mismatch([[1.0, 0.25]], [[1.0, 0.5]], "weights")
    'weights row 1, column 2: expected 0.5 (1/2), got 0.25 (1/4)'
    """
    if unread(got) is not None:
        return (f"{what}: an answer of {unread(got):,} rows for a ({len(want)}, {len(want[0])}) "
                f"matrix")
    if type(got) is not list or len(got) != len(want):
        return f"{what}: expected a list of {len(want)} rows, got {came(got)}"
    for i, (got_row, want_row) in enumerate(zip(got, want)):
        if type(got_row) is not list or len(got_row) != len(want_row):
            return (f"{what} row {i + 1}: expected a list of {len(want_row)} numbers, "
                    f"got {came(got_row)}")
        problem = _entries_problem(got_row, want_row, lambda j: f"{what} row {i + 1}, column {j}",
                                   blocked and blocked[i], blocked_value)
        if problem:
            return problem
    return None


def row_mismatch(got, want, blocked=None):
    """mismatch for one row (masked_softmax's answer): a blocked entry must be exactly 0.0."""
    if unread(got) is not None:
        return f"an answer of {unread(got):,} numbers for a row of {len(want)}"
    if type(got) is not list or len(got) != len(want):
        return f"expected a list of {len(want)} numbers, got {came(got)}"
    return _entries_problem(got, want, lambda j: f"entry {j}", blocked, 0.0)


def like(got, matrix):
    """got has matrix's shape and lies within LIKENESS of it, −∞ where it is −∞."""
    return (type(got) is list and len(got) == len(matrix) and all(
        type(g_row) is list and len(g_row) == len(m_row) and all(
            is_number(g) and (g == m if math.isinf(m) else abs(g - m) <= LIKENESS)
            for g, m in zip(g_row, m_row))
        for g_row, m_row in zip(got, matrix)))


def diagnose(got, want, mistakes):
    """The mistake whose make() got matches and want does not (several: each numbered), or None."""
    found = []
    for mistake, make in mistakes:
        try:
            matrix = make()
        except (ValueError, TypeError, ArithmeticError):
            continue
        if not like(want, matrix) and like(got, matrix) and mistake not in found:
            found.append(mistake)
    if len(found) > 1:
        return (f"one of {len(found)} mistakes that give these numbers on this head: "
                + "; ".join(f"({n}) {mistake}" for n, mistake in enumerate(found, 1)))
    return found[0] if found else None


def dict_problem(value):
    """What is wrong with the form of attention's answer (not a dict, a key missing), or None."""
    if value == "<NoneType>":
        return "attention returned None: does it end with return {...}?"
    if type(value) is not dict:
        return (f"attention must return a dict with scores, masked_scores, weights and output, "
                f"got {came(value)}")
    missing = [key for key in ("scores", "masked_scores", "weights", "output") if key not in value]
    return (f"attention's dict has no {', '.join(missing)} (it has "
            f"{', '.join(value) or 'nothing'})" if missing else None)

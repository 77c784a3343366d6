"""Lab 06's exact numbers, written by the views and read from a predictions sheet: a small
fraction (3/2), a small fraction of ln 2 or of c = √2·ln 2 (2 ln 2, 1/2·ln 2, c), or −∞, so that a
learner's answer and the program's compare as exact numbers, never as rounded floats. A float has
an exact form when it, or its ratio to a unit, lies within TOLERANCE (1e-9) of a fraction of
denominator at most 100; ln 2 and c are irrational and so is their ratio, so equal forms are
equal numbers. Left out: any other irrational (√2 alone, e), and expressions (1/2 + 1/4).
"""

import functools
import math
import re
from fractions import Fraction

from common.views import exact_fraction, number
from lab06.lab import C

UNITS = {"ln 2": math.log(2), "c": C}     # "" is no unit: a plain fraction


def exact_form(x, units=()):
    """x's exact value: (fraction, "") for a small fraction, else (fraction, unit) for a small
    fraction of one of units (names in UNITS), −∞ as -math.inf, or None.

    >>> exact_form(1 / 3), exact_form(-2 * math.log(2), ["ln 2"]), exact_form(math.log(2))
    ((Fraction(1, 3), ''), (Fraction(-2, 1), 'ln 2'), None)
    """
    if x == -math.inf:
        return x
    for unit in ("", *units):
        if (fraction := exact_fraction(x / UNITS[unit] if unit else x)) is not None:
            return fraction, unit
    return None


def written(x, units=()):
    """x as a view writes it: a small fraction if it is one, else a small fraction of one of units
    ("ln 2", "c"), else 4 decimals; −∞ as −∞.

    >>> written(2 * math.log(2), ["ln 2"]), written(0.5, ["ln 2"]), written(C / 2, ["c"])
    ('2 ln 2', '1/2', '1/2·c')
    """
    if (form := exact_form(x, units)) is None or form == -math.inf:
        return number(x)
    fraction, unit = form
    if not unit:
        return str(fraction)
    if abs(fraction) == 1:
        return ("-" if fraction < 0 else "") + unit
    joiner = "·" if fraction.denominator > 1 else ("" if len(unit) == 1 else " ")
    return f"{fraction}{joiner}{unit}"


in_ln2 = functools.partial(written, units=["ln 2"])     # x in ln 2 where it is a small multiple
in_c = functools.partial(written, units=["c"])          # x in c where it is a small multiple


# A coefficient (1.5, 3/2, .5), then a unit (ln 2, ln2, c), maybe divided: "ln 2/2".
_EXACT = re.compile(r"(?P<sign>[-−+]?)\s*(?P<top>\d{1,30}(?:\.\d{1,30})?|\.\d{1,30})?"
                    r"(?:\s*/\s*(?P<bottom>\d{1,30}))?\s*(?P<times>[·*×]?)\s*"
                    r"(?P<unit>ln\s*2|c)?(?:\s*/\s*(?P<divisor>\d{1,30}))?")
EXPECTED = "an exact number such as 5/4, 1.25, 3 ln 2, ln 2/4, c or −∞ (-inf)"


def read_exact(text):
    """The exact value text holds: (Fraction, unit) or -math.inf, as exact_form gives them. Raises
    ValueError saying what it expects for anything else (a fraction with a zero denominator too).

    >>> read_exact("-3/2"), read_exact("ln 2/2"), read_exact("2c"), read_exact("−∞")
    ((Fraction(-3, 2), ''), (Fraction(1, 2), 'ln 2'), (Fraction(2, 1), 'c'), -inf)
    """
    plain = text.strip()
    if plain.replace("−", "-") in ("-inf", "-∞"):
        return -math.inf
    found = _EXACT.fullmatch(plain)
    if not found or not (found["top"] or found["unit"]) or (found["times"] and not (
            found["top"] and found["unit"])) or (found["divisor"] and not found["unit"]):
        raise ValueError(f"expected {EXPECTED}, got {plain!r:.40}")
    if any(d is not None and int(d) == 0 for d in (found["bottom"], found["divisor"])):
        raise ValueError(f"{plain!r:.40} divides by zero: expected {EXPECTED}")
    fraction = Fraction(found["top"] or 1) / int(found["bottom"] or 1) / int(found["divisor"] or 1)
    if found["sign"] in ("-", "−"):
        fraction = -fraction
    unit = "" if not found["unit"] or fraction == 0 else ("c" if found["unit"] == "c" else "ln 2")
    return fraction, unit


OPENING = {"[": "]", "(": ")"}     # (3, 2) as the tables write a shape, [3, 2] as a list


def nested(text):
    """An answer's lists, each entry's text left to read: '[[1, 1/2], []]' -> [['1', '1/2'], []],
    (3, 2) as [3, 2]. Raises ValueError for what does not pair, an empty entry, or deeper than 3."""
    if called := re.search(r"\b(ln|log|sqrt)\s*\(", text):    # a call, not a pair of brackets
        raise ValueError(f"{called.group(1)}(…) is written without brackets here: ln 2, 2 ln 2, "
                         f"ln 2/4 or c")
    tokens = [t.strip() for t in re.findall(r"[][(),]|[^][(),]+", text) if t.strip()]

    def value(at, depth):
        if depth > 3:
            raise ValueError("lists nested more than 3 deep")
        if at >= len(tokens) or tokens[at] in ",)]":
            raise ValueError("an entry is missing")
        if tokens[at] not in OPENING:
            return tokens[at], at + 1
        closing, items, at = OPENING[tokens[at]], [], at + 1
        while at < len(tokens) and tokens[at] != closing:
            item, at = value(at, depth + 1)
            items.append(item)
            if at < len(tokens) and tokens[at] == ",":
                at += 1
                if at < len(tokens) and tokens[at] == closing:
                    raise ValueError("an entry is missing")
            elif at < len(tokens) and tokens[at] != closing:
                raise ValueError("brackets do not pair, or a comma is missing")
        if at >= len(tokens):
            raise ValueError("a bracket is never closed")
        return items, at + 1

    answer, at = value(0, 0)
    if at != len(tokens):
        raise ValueError("text outside the brackets")
    return answer


def answer_text(value, units=()):
    """A value (a float, an int, or lists of them) as the lab writes it.

    >>> answer_text([[1, 0.25], []]), answer_text(-math.log(2), ["ln 2"])
    ('[[1, 1/4], []]', '-ln 2')
    """
    if isinstance(value, list):
        return "[" + ", ".join(answer_text(entry, units) for entry in value) + "]"
    return str(value) if isinstance(value, int) else written(value, units)


def value_of(form):
    """An exact value (fraction, unit) as a float: how near a rounded decimal came to it."""
    fraction, unit = form
    return float(fraction) * (UNITS[unit] if unit else 1.0)

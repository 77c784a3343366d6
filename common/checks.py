"""The checks at the doors of attention.py, and what the labs' doors share: a number, a size, a
matrix, a seal. Nothing here computes; common/README.md tables the messages. TypeError for a
value of the wrong kind, ValueError for a wrong shape, size or number.
"""

import contextlib
import functools
import marshal
import math
import sys
from itertools import chain

PLAIN_NUMBERS = {float, int}

MAX_ENTRIES = 2 ** 22      # the most entries one call makes in all: about 130 MB as lists
MAX_POSITIONS = 1024       # the longest sequence: the layer's four (T, T) maps hold MAX_ENTRIES


def check_matrix(name, m, cols=None, label=None):
    """(rows, cols) of a non-empty rectangular list of lists of finite numbers, cols wide when
    given; label names the rows in the width message. Raises TypeError or ValueError."""
    if plain_matrix(m, cols):
        return len(m), len(m[0])
    if type(m) is not list:
        raise TypeError(f"{name} must be a list of rows, got {type(m).__name__}")
    if not m:
        raise ValueError(f"{name} is an empty sequence: expected at least one row")
    for i, row in enumerate(m):
        if type(row) is not list:
            raise TypeError(f"{name}[{i}] must be a list of numbers, got {type(row).__name__}")
    cols = len(m[0]) if cols is None else cols
    if cols == 0:
        raise ValueError(f"{name} rows are empty: expected at least one number per row")
    for i, row in enumerate(m):
        if len(row) != cols:
            raise ValueError(f"each {label or name} row must have {cols} "
                             f"number{'s' * (cols > 1)}, got {len(row)} in row {i + 1}")
        for j, value in enumerate(row):
            check_number(f"{name}[{i}][{j}]", value)
    return len(m), cols


def check_number(where, value, expected="a finite number"):
    """Raise unless value is a finite int or float (not a bool, not a subclass), naming where."""
    if type(value) not in PLAIN_NUMBERS:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise TypeError(f"{where} must be a plain float or int, got {kind(value)}: a "
                            f"subclass may redefine its arithmetic; convert it with float()")
        raise TypeError(f"{where} must be a number, got {kind(value)}")
    try:
        finite = math.isfinite(value)
    except OverflowError:
        raise ValueError(f"{where} must be a number a float can hold, got an int of "
                         f"{value.bit_length()} bits") from None
    if not finite:
        raise ValueError(f"{where} must be {expected}, got {value!r}")


class NotANumber(ValueError):
    """A text that reads as a number no float can be: the message says why."""


def float_of(text):
    """The float a decimal text (already matched) stands for. Raises NotANumber for one beyond
    float range (1e400) or one not 0 that a float holds only as 0 (1e-400).

    >>> float_of("2.5e-3")
    0.0025
    """
    number = float(text)
    if not math.isfinite(number):
        raise NotANumber(f"{text} is beyond float range (±{sys.float_info.max!r})")
    if number == 0 and any(c in "123456789" for c in text.lower().partition("e")[0]):
        raise NotANumber(f"{text} is below float range: it would be 0 (the smallest float is "
                         f"{5e-324!r})")
    return number


def int_of(text):
    """The int a JSON file's integer text stands for, at most 309 digits, else NotANumber.

    >>> int_of("-12")
    -12
    """
    if (digits := len(text.lstrip("-"))) > 309:
        raise NotANumber(f"{text[:12]}… is an integer of {digits} digits, beyond float range "
                         f"(±{sys.float_info.max!r}, 309 digits)")
    return int(text)


def said(value):
    """How a message shows a value: its repr cut to 60 characters, an int over 40 digits by size.

    >>> said(10 ** 5000), said(3), said("abc")
    ('an int of 16610 bits', '3', "'abc'")
    """
    if isinstance(value, int) and abs(value) >= 10 ** 40:
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:           # a repr that raises is the value's own fault; say what it is
        return f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:60] + "…"


def kind(value):
    """A value that came, with its type: "str 'a'", "bool True", "an int of 16610 bits"."""
    if isinstance(value, int) and abs(value) >= 10 ** 40:
        return said(value) if type(value) is int else f"{type(value).__name__}, {said(value)}"
    return f"{type(value).__name__} {said(value)}"


def check_index(name, value, size, what="an index"):
    """Raise unless value is an int 0 to size − 1 (not a bool): Python's own would take −1.

    >>> check_index("answer", 3, 3, "a token id")
    Traceback (most recent call last):
    ValueError: answer must be a token id, 0 to 2, got 3
    """
    if type(value) is not int:
        raise TypeError(f"{name} must be {what}, an int 0 to {size - 1}, got {kind(value)}")
    if not 0 <= value < size:
        raise ValueError(f"{name} must be {what}, 0 to {size - 1}, got {said(value)}")


def check_positions(T):
    """Raise unless T positions is within MAX_POSITIONS: the layer makes (T, T) maps."""
    if T > MAX_POSITIONS:
        raise ValueError(f"the sequence is longer than the layer takes: T = {said(T)}, at most "
                         f"MAX_POSITIONS = {MAX_POSITIONS} positions (its four (T, T) maps then "
                         f"hold MAX_ENTRIES = {MAX_ENTRIES} entries)")


def check_entries(name, rows, cols, count=1):
    """Raise unless count (rows, cols) matrices, before any is made, hold MAX_ENTRIES in all."""
    if count * rows * cols > MAX_ENTRIES:
        raise ValueError(f"{name} would be {f'{count} × ' if count > 1 else ''}({said(rows)}, "
                         f"{said(cols)}), {said(count * rows * cols)} entries"
                         f"{' in all' * (count > 1)}: at most MAX_ENTRIES = {MAX_ENTRIES} entries")


def plain_matrix(m, cols):
    """True for a non-empty list of equal rows of finite numbers, found in one pass."""
    if type(m) is not list or not m or set(map(type, m)) != {list}:
        return False
    widths = set(map(len, m))
    return widths == {cols if cols is not None else len(m[0])} and 0 not in widths and \
        _plain_numbers(m)


def _plain_numbers(rows):
    """True when every entry of rows is a finite float or an int a float can hold."""
    values = list(chain.from_iterable(rows))
    if not set(map(type, values)) <= PLAIN_NUMBERS:
        return False
    try:
        return all(map(math.isfinite, values))
    except OverflowError:      # an int beyond float range: let the slow path name it
        return False


# ---- shapes, for the list helpers ---------------------------------------------------------------

def check_rows(name, a):
    """Raise unless a is a list of lists of one length: O(rows), the entries are not read."""
    if type(a) is not list or not set(map(type, a)) <= {list}:
        raise TypeError(f"{name} needs a list of rows, got {shape_text(a)}")
    if len(set(map(len, a))) > 1:
        raise ValueError(f"{name} needs rows of one length, got {shape_text(a)}")


def check_transpose(a):
    """transpose's door: rows of one length, within MAX_ENTRIES, of plain numbers (−∞ too) or of
    bools throughout (a mask)."""
    check_rows("transpose", a)
    check_entries("transpose's result", len(a), len(a[0]) if a else 0)
    if (types := set(map(type, chain.from_iterable(a)))) <= PLAIN_NUMBERS or types == {bool}:
        return
    mask = type(a[0][0]) is bool if a[0] else False
    for i, row in enumerate(a):
        for j, value in enumerate(row):
            if mask and type(value) is not bool:
                raise TypeError(f"transpose's [{i}][{j}] must be True or False, as [0][0] is (a "
                                f"mask), got {kind(value)}")
            if not mask and type(value) not in PLAIN_NUMBERS:
                check_number(f"transpose's [{i}][{j}]", value)


def check_matmul(a, b):
    """matmul's door: a (n, m) and b (m, p) of finite numbers, the product within MAX_ENTRIES."""
    for name, m in (("left", a), ("right", b)):
        if type(m) is not list or not set(map(type, m)) <= {list}:
            raise TypeError(f"matmul needs (n, m)·(m, p), got {shape_text(a)}·{shape_text(b)}: "
                            f"the {name} side is not a list of rows")
    if not a or not b or set(map(len, a)) != {len(b)} or len(set(map(len, b))) != 1 or not b[0]:
        raise ValueError(f"matmul needs (n, m)·(m, p), got {shape_text(a)}·{shape_text(b)}")
    check_entries("matmul's product", len(a), len(b[0]))
    _check_numbers("matmul's left side", a)
    _check_numbers("matmul's right side", b)


def check_add(matrices):
    """add's door: matrices of one shape, of finite numbers."""
    for m in matrices:
        check_rows("add", m)
    if len({(len(m), len(m[0]) if m else 0) for m in matrices}) != 1:
        raise ValueError(f"add needs matrices of one shape, got "
                         f"{', '.join(shape_text(m) for m in matrices) or 'none'}")
    check_entries("add's sum", len(matrices[0]), len(matrices[0][0]) if matrices[0] else 0)
    for n, m in enumerate(matrices):
        _check_numbers(f"add's matrix {n + 1}", m)


def _check_numbers(name, m):
    """Raise unless every entry of the rows m is a finite number, naming the first that is not."""
    if not _plain_numbers(m):
        for i, row in enumerate(m):
            for j, value in enumerate(row):
                check_number(f"{name} [{i}][{j}]", value)


def check_scores_row(row):
    """softmax_row's door: a non-empty list of numbers, each finite or −∞, one at least finite."""
    if type(row) is not list:
        raise TypeError(f"softmax_row needs a list of scores, got {type(row).__name__}")
    if not row:
        raise ValueError("softmax_row needs at least one score, got an empty row")
    check_entries("softmax_row's weights", 1, len(row))
    with contextlib.suppress(OverflowError):      # an int beyond float range: named below
        if set(map(type, row)) <= PLAIN_NUMBERS and not any(map(math.isnan, row)) and \
                max(row) != math.inf and max(row) != -math.inf:
            return
    for j, s in enumerate(row):
        if s != -math.inf:
            check_number(f"softmax_row's score {j + 1}", s, "finite or −∞")
    if all(s == -math.inf for s in row):
        raise ValueError(f"softmax_row needs at least one score that is not −∞, got a row of "
                         f"{len(row)} blocked scores")


def shape_text(a):
    """How a message shows what came: (2, 3), (2, 3/4) for a ragged one, else its type."""
    if type(a) is not list:
        return type(a).__name__
    widths = sorted({len(row) for row in a}) if all(type(r) is list for r in a) else ["?"]
    return f"({len(a)}, {'/'.join(map(str, widths)) or 0})"


# ---- after a sum: an overflow, named by what it was taken of ------------------------------------

def finite(m):
    """True when every entry of the matrix m is finite: a sum past float range comes out ±inf."""
    return all(map(math.isfinite, chain.from_iterable(m)))


def matmul_overflow(a, b):
    """The ValueError for a product a·b that came out beyond float range, its sides as .product."""
    largest = [_largest(m) for m in (a, b)]
    products = f"{len(b)} product{'s' * (len(b) > 1)}"
    error = ValueError(f"matmul {shape_text(a)}·{shape_text(b)} could overflow: a sum of "
                       f"{products} of entries up to {largest[0]:.3g} and {largest[1]:.3g} can "
                       f"pass {sys.float_info.max:.3g}; the numbers are too large for floats")
    error.product = a, b
    return error


def named_by_the_first_product(forward):
    """attention_forward, whose overflow is named by x·Wq, x·Wk or x·Wv when a sum of theirs could
    pass float range, although a later product was the one that did."""
    @functools.wraps(forward)
    def named(params, x, mask="causal"):
        try:
            return forward(params, x, mask)
        except ValueError as error:
            if not hasattr(error, "product"):       # not an overflow: what came in was wrong
                raise
            for W in (params["Wq"], params["Wk"], params["Wv"]):
                if len(W) * _largest(x) * _largest(W) > sys.float_info.max:
                    raise matmul_overflow(x, W) from None
            raise
    return named


def add_overflow(matrices):
    """The error for a sum of matrices that came out beyond float range."""
    largest = max(map(_largest, matrices))
    return ValueError(f"add could overflow: a sum of {len(matrices)} entries up to {largest:.3g} "
                      f"can pass {sys.float_info.max:.3g}; the numbers are too large for floats")


def _largest(m):
    """The largest |entry| of a matrix of numbers, as a float."""
    return float(max(map(abs, chain.from_iterable(m))))


def check_sizes(**sizes):
    """Raise unless each size is an int (exactly: not a bool) of at least 1."""
    for name, value in sizes.items():
        if type(value) is not int:
            raise TypeError(f"{name} must be an int, got {kind(value)}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {said(value)}")


def check_length(T):
    """causal_mask's door: T an int of at least 1 and at most MAX_POSITIONS."""
    check_sizes(T=T)
    check_positions(T)


def check_made(name, count=1, **sizes):
    """Raise unless the sizes (rows, cols) are ints of at least 1, count of them in MAX_ENTRIES."""
    check_sizes(**sizes)
    check_entries(name, *sizes.values(), count=count)


def check_callable(name, value, optional=False):
    """Raise TypeError unless value is a function (or None, when optional), naming what came."""
    if not (callable(value) or optional and value is None):
        raise TypeError(f"{name} must be a function{' or None' * optional}, got {kind(value)}")


def check_seed(seed):
    """seed itself; TypeError unless it is an int (not a bool; None would draw other weights every
    run), ValueError below 0 (random.Random(-n) draws what random.Random(n) draws)."""
    if type(seed) is not int:
        raise TypeError(f"seed must be an int, got {kind(seed)}: the lesson's weights are "
                        f"drawn from int seeds")
    if seed < 0:
        raise ValueError(f"seed must be at least 0, got {seed}: Python's random draws the same "
                         f"for {seed} as for {-seed}")
    return seed


def check_params(params):
    """(d_model, d_head) of a params dict, or raise naming the missing or misfitting matrix."""
    if type(params) is not dict:    # a subclass could hand the check one matrix, the layer another
        raise TypeError(f"params must be a dict with Wq, Wk, Wv and Wo, "
                        f"got {type(params).__name__}")
    if missing := [name for name in ("Wq", "Wk", "Wv", "Wo") if name not in params]:
        raise ValueError(f"params must have Wq, Wk, Wv and Wo, missing {', '.join(missing)}")
    d_model, d_head = check_matrix("Wq", params["Wq"])
    for name in ("Wk", "Wv"):
        if shape_text(params[name]) != f"({d_model}, {d_head})":
            raise ValueError(f"{name} must be (d_model, d_head) = ({d_model}, {d_head}) like Wq, "
                             f"got {shape_text(params[name])}")
        check_matrix(name, params[name], cols=d_head)
    if shape_text(params["Wo"]) != f"({d_head}, {d_model})":
        raise ValueError(f"Wo must be (d_head, d_model) = ({d_head}, {d_model}), "
                         f"got {shape_text(params['Wo'])}")
    check_matrix("Wo", params["Wo"], cols=d_model)
    return d_model, d_head


# ---- the layer at the door ----------------------------------------------------------------------

def check_forward(params, x, mask, modes):
    """attention_forward's door: a mask mode of modes, fitting params, x of (T, d_model) numbers."""
    if type(mask) is not str or mask not in modes:
        raise ValueError(f"mask must be one of {modes}, got {mask!r}")
    if type(x) is list:
        check_positions(len(x))         # before any (T, T) map is made
    if _plain_layer(params, x):
        return
    d_model, _ = check_params(params)
    check_matrix("x", x, cols=d_model, label="input")


def _plain_layer(params, x):
    """True for Wq, Wk, Wv (d_model, d_head), Wo (d_head, d_model), x (T, d_model), in one pass."""
    if type(params) is not dict or type(x) is not list or not x:
        return False
    matrices = weights_of(params) + [x]
    if set(map(type, matrices)) != {list} or not matrices[0] or type(matrices[0][0]) is not list:
        return False
    d_model, d_head = len(matrices[0]), len(matrices[0][0])
    rows = list(chain.from_iterable(matrices))
    if set(map(type, rows)) != {list} or d_head == 0 or list(map(len, matrices)) != [
            d_model, d_model, d_model, d_head, len(x)]:
        return False
    return list(map(len, rows)) == [d_head] * (3 * d_model) + [d_model] * (d_head + len(x)) and \
        _plain_numbers(rows)


# ---- the seal of a cache: what a call made, checked when the cache comes back -------------------

LAYER_KEYS = ("q", "k", "v", "scale", "raw_scores", "scores", "weights", "mixed", "out", "mask")


def fingerprint(*values):
    """A hash of values that changes when any number in them does: of marshal's bytes, a float's 8
    exactly (hash(-1.0) == hash(-2.0) would not do)."""
    try:
        return hash(marshal.dumps(values, 2))
    except ValueError:                  # a float subclass, a list that holds itself: not what a
        return hash(repr(values))       # call made, and never equal to it


def weights_of(params):
    """The layer's Wq, Wk, Wv, Wo of a params dict (a model's holds more), None for one it lacks."""
    return [params.get(name) for name in ("Wq", "Wk", "Wv", "Wo")]


class Seal:
    """Fingerprints of what a call made (a dict) and of the params (and x) it was made from, which
    the call that takes it back compares with what it is handed."""

    def __init__(self, made, params=None, x=None):
        self.keys = tuple(made)
        self.made = fingerprint(*made.values())
        self.params = None if params is None else fingerprint(*weights_of(params))
        self.x = None if x is None else fingerprint(x)

    def keeps(self, made):
        """True when made (a dict) holds the entries that were sealed, in any order."""
        return made.keys() == set(self.keys) and self.made == fingerprint(*map(made.get, self.keys))

    def __repr__(self):
        return "<seal: fingerprints of what was made, to check it against>"


def sealed(cache, params=None, x=None):
    """The cache of a forward pass with its "seal"."""
    return {**cache, "seal": Seal(cache, params, x)}


def check_sealed(cache, keys, made_by, advice):
    """Raise unless cache is a dict made_by returned, unchanged since; advice ends the message."""
    if type(cache) is not dict:
        raise ValueError(f"cache must be the dict {made_by} returned, got {type(cache).__name__}")
    if missing := [key for key in keys + ("seal",) if key not in cache]:
        raise ValueError(f"cache must be the dict {made_by} returned; it has no "
                         f"{', '.join(missing)}")
    seal = cache["seal"]
    entries = {key: value for key, value in cache.items() if key != "seal"}
    if not isinstance(seal, Seal) or not seal.keeps(entries):
        raise ValueError(f"cache is not what {made_by} returned: an entry was changed or replaced "
                         f"since; run {made_by} again. {advice}")


def check_backward(params, x, cache, d_out, advice):
    """attention_backward's door: the unchanged cache attention_forward returned for these params
    and x (checked again only when the seal does not know them), d_out of out's shape."""
    seal = cache.get("seal") if type(cache) is dict else None
    made_from = type(params) is dict and (fingerprint(*weights_of(params)), fingerprint(x))
    if not isinstance(seal, Seal) or made_from != (seal.params, seal.x):
        check_params(params)            # what is wrong with them is named first
        check_matrix("x", x, cols=len(params["Wq"]), label="input")
    d_model, T = len(params["Wq"]), len(x)
    check_sealed(cache, LAYER_KEYS, "attention_forward", advice)
    for what, given, kept in (("x", made_from[1], cache["seal"].x),
                              ("params", made_from[0], cache["seal"].params)):
        if given != kept:
            raise ValueError(f"cache was made by attention_forward for another {what} (or {what} "
                             f"was changed since): run attention_forward again on these params "
                             f"and x")
    check_matrix("d_out", d_out, cols=d_model, label="d_out")
    if len(d_out) != T:
        raise ValueError(f"d_out must have one row per position ({T}, {d_model}), "
                         f"got {len(d_out)} rows")

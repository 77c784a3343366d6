"""The checks at the door of attention.py: each public entry point calls one of these first.

attention.py holds the mathematics and reads like the lesson; everything here only checks. It
raises TypeError for a value of the wrong kind and ValueError for a wrong shape, size or number,
with a message that names what was expected and what came ("each input row must have 4 numbers,
got 3 in row 1": a row or score named in words counts from 1, an index such as x[0][1] from 0).

A number is a plain float or int, its type exactly one of those: a subclass (numpy's float64 is
one) can redefine `*` or `<` and lie to every check, so it is refused with a TypeError that says
to convert it with float(); a bool is refused too. A size is checked against its limit before
anything of that size is made: MAX_POSITIONS positions for a sequence (the layer's (T, T) maps),
MAX_ENTRIES entries for what one call makes in all (matmul's product, init_attention's four
matrices together). A message shows an int that came by said(): one too long to print whole by its
size, "an int of 16610 bits"; a seed is an int (check_seed), a function argument callable.

The numbers are checked where they come in: attention_forward's params and x, attend's q, k, v and
mask, a backward pass's gradient. The list helpers (matmul, add, transpose, softmax_row) are public
too, and a learner calls them directly, so each checks what it is handed: its shapes, that every
entry is a finite number (not a bool, not an int no float can hold), and that no sum it takes can
pass float range, so that nothing after it needs checking (transpose, which computes nothing,
only that each is a plain number, or each a bool: a mask). Those checks are passes of C over the
operands (about 40% of the layer's time at the lesson's 6 tokens, 6% at T = 256 and d_model 64); an
entry is read one by one only to name the one that is wrong.

A cache carries a seal, copies of every matrix in it and of the params and x it was made from, so
that a backward pass refuses a cache from another call or one edited since. attention_step's cache
of keys and values carries the same kind of seal: copies of its rows and params, compared at the
next step's door.
"""

import contextlib
import math
import sys
import threading
from itertools import chain

_PLAIN_NUMBERS = {float, int}

MAX_ENTRIES = 2 ** 22      # the most entries one call makes in all: 4,194,304 floats, about
                           # 130 MB as Python lists and seconds of work, not minutes
MAX_POSITIONS = 1024       # the longest sequence: the layer's four (T, T) maps (raw_scores,
                           # scores, weights, the mask) then hold MAX_ENTRIES, and a forward pass
                           # answers in seconds (at 4096 it took most of a minute); the KV-cache
                           # benchmark goes to 512


# ---- once, at the door -------------------------------------------------------------------------

_inside = threading.local()     # .depth > 0 while this thread runs a layer that checked its input


def at_the_door(check, *args):
    """Run check(*args), unless this thread runs inside() a layer that has checked its input: the
    layer's own calls of the helpers, on what it checked or built itself, are not checked again."""
    if not getattr(_inside, "depth", 0):
        check(*args)


@contextlib.contextmanager
def inside():
    """The lines under this are a checked layer's own: its calls of the helpers are not checked
    again."""
    _inside.depth = getattr(_inside, "depth", 0) + 1
    try:
        yield
    finally:
        _inside.depth -= 1


def forward_door(params, x, mask, modes):
    """attention_forward's door: check what it is handed, then return inside(), so that the
    layer's own calls of the helpers skip their checks, when no product of the layer can pass
    float range; otherwise a context that changes nothing, so that each product is checked and an
    overflow named."""
    check_forward(params, x, mask, modes)
    d_model, d_head = len(x[0]), len(params["Wq"][0])
    B = _largest_of(x, *_params_of(params).values())       # bounds every entry of x and params
    qkv_bound = d_model * B * B
    return _inside_when_below(qkv_bound, d_head * qkv_bound * qkv_bound, d_head * qkv_bound * B)


def backward_door(params, x, cache, d_out):
    """attention_backward's door: as forward_door, for the products of the backward pass."""
    check_backward(params, x, cache, d_out)
    T, d_model, d_head = len(x), len(x[0]), len(params["Wq"][0])
    B = _largest_of(x, *_params_of(params).values(), *(cache[name] for name in "qkv"))
    D = _largest_of(d_out)
    d_mixed_bound = d_model * D * B
    d_scores_bound = 2 * d_head * d_mixed_bound * B    # a·(da − Σ a·da), 0 ≤ a ≤ 1 and Σ a = 1
    d_qkv_bound = T * max(d_scores_bound, d_mixed_bound) * B
    return _inside_when_below(T * B * D, d_scores_bound, d_qkv_bound, T * B * d_qkv_bound,
                              3 * d_head * d_qkv_bound * B)


def _largest_of(*matrices):
    """The largest |entry| of matrices of finite numbers, in one pass."""
    return float(max(map(abs, chain.from_iterable(chain.from_iterable(matrices)))))


def _inside_when_below(*bounds):
    """inside() when every bound (of the size of some products' entries) is far from float range;
    else a context that changes nothing, so each product is checked at its own door."""
    if max(bounds) <= sys.float_info.max / 4:     # room for the rounding of the bounds
        return inside()
    return contextlib.nullcontext()


def check_matrix(name, m, cols=None, label=None):
    """Return (rows, cols) of a non-empty rectangular list of lists of finite numbers, or raise.

    `cols` is the width the caller expects; `label` names the rows in the width message ("each input
    row must have 4 numbers, got 3 in row 2"). Raises TypeError for a value of the wrong kind and
    ValueError for an empty, ragged or non-finite matrix.
    """
    if _plain_matrix(m, cols):
        return len(m), len(m[0])
    if type(m) is not list:
        raise TypeError(f"{name} must be a list of rows, got {type(m).__name__}")
    if not m:
        raise ValueError(f"{name} is an empty sequence: expected at least one row")
    for i, row in enumerate(m):
        if type(row) is not list:
            raise TypeError(f"{name}[{i}] must be a list of numbers, got {type(row).__name__}")
    if cols is None:
        cols = len(m[0])
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
    """Raise unless value is a finite int or float (of exactly that type: not a bool, not a
    subclass), naming where it stands."""
    if type(value) not in _PLAIN_NUMBERS:
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
    """The float a decimal text (ASCII, already matched: a flag's, or a JSON file's number) stands
    for. Raises NotANumber, saying why, for one beyond float range (1e400) and one that is not 0
    but that a float can hold only as 0 (1e-400): float() would give inf, or 0.0 without a word.

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
    """The int a JSON file's integer text stands for, at most 309 digits: one of more is beyond
    float range and any size or id here, and int() refuses one of more than 4300 digits in
    Python's words (sys.set_int_max_str_digits), not the file's. Raises NotANumber.

    >>> int_of("-12")
    -12
    """
    digits = len(text.lstrip("-"))
    if digits > 309:
        raise NotANumber(f"{text[:12]}… is an integer of {digits} digits, beyond float range "
                         f"(±{sys.float_info.max!r}, 309 digits)")
    return int(text)


def said(value):
    """How a message shows a value that came: its repr, cut to 60 characters; an int of more than
    40 digits by its size ("an int of 16610 bits"), since Python will not print one of more than
    4300 digits and a message has no room for one of 41.

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
    """Raise unless value is an int 0 to size − 1 (not a bool): an index into size things, where
    Python's own would take −1 for the last one and say nothing.

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
    """Raise unless count (rows, cols) matrices to be made hold at most MAX_ENTRIES entries in
    all: a bound on what one call makes, checked before it makes any of them."""
    if count * rows * cols > MAX_ENTRIES:
        size = f"({said(rows)}, {said(cols)})"
        raise ValueError(f"{name} would be {f'{count} × ' if count > 1 else ''}{size}, "
                         f"{said(count * rows * cols)} entries{' in all' * (count > 1)}: at most "
                         f"MAX_ENTRIES = {MAX_ENTRIES} entries")


def _plain_matrix(m, cols):
    """The common case, settled in one pass: a non-empty list of equal rows of finite floats (and
    small ints). Anything else goes through check_matrix's checks one by one, for the message."""
    if type(m) is not list or not m or set(map(type, m)) != {list}:
        return False
    widths = set(map(len, m))
    if widths != {cols if cols is not None else len(m[0])} or 0 in widths:
        return False
    return _plain_numbers(m)


def _plain_numbers(rows):
    """True when every entry of rows is a finite float or an int a float can hold, in two passes
    of C."""
    values = list(chain.from_iterable(rows))
    if not set(map(type, values)) <= _PLAIN_NUMBERS:
        return False
    try:
        return all(map(math.isfinite, values))
    except OverflowError:      # an int beyond float range: let the slow path name it
        return False


# ---- shapes, for the list helpers ---------------------------------------------------------------

def check_rows(name, a):
    """Raise unless a is a list of lists of one length: O(rows), the entries are not read."""
    if type(a) is not list or not set(map(type, a)) <= {list}:
        raise TypeError(f"{name} needs a list of rows, got {_shape_text(a)}")
    if len(set(map(len, a))) > 1:
        raise ValueError(f"{name} needs rows of one length, got {_shape_text(a)}")


def check_transpose(a):
    """transpose's door: a list of rows of one length (or no rows), within MAX_ENTRIES, of plain
    numbers, or of bools throughout (a mask); a bool among numbers, a list, a list that holds
    itself is refused. It computes nothing, so −∞ (a masked score) and any float may stand."""
    check_rows("transpose", a)
    check_entries("transpose's result", len(a), len(a[0]) if a else 0)
    types = set(map(type, chain.from_iterable(a)))
    if types <= _PLAIN_NUMBERS or types == {bool}:
        return
    mask = type(a[0][0]) is bool if a[0] else False
    for i, row in enumerate(a):
        for j, value in enumerate(row):
            if mask and type(value) is not bool:
                raise TypeError(f"transpose's [{i}][{j}] must be True or False, as [0][0] is (a "
                                f"mask), got {kind(value)}")
            if not mask and type(value) not in _PLAIN_NUMBERS:
                check_number(f"transpose's [{i}][{j}]", value)


def check_matmul(a, b):
    """matmul's door: a is (n, m) and b is (m, p) of finite numbers, every row its full length, the
    product within MAX_ENTRIES, and no sum of m products can go beyond float range (m · max|a| ·
    max|b| stays below it), so the product needs no check after. Raises TypeError for sides that
    are not lists of rows, ValueError naming both shapes (an empty side too), or the entry."""
    for name, m in (("left", a), ("right", b)):
        if type(m) is not list or not set(map(type, m)) <= {list}:
            raise TypeError(f"matmul needs (n, m)·(m, p), got {_shape_text(a)}·{_shape_text(b)}: "
                            f"the {name} side is not a list of rows")
    if not a or not b or set(map(len, a)) != {len(b)} or len(set(map(len, b))) != 1 or not b[0]:
        raise ValueError(f"matmul needs (n, m)·(m, p), got {_shape_text(a)}·{_shape_text(b)}")
    check_entries("matmul's product", len(a), len(b[0]))
    sizes = [_magnitude(f"matmul's {name} side", m) for name, m in (("left", a), ("right", b))]
    if len(b) * sizes[0] * sizes[1] <= sys.float_info.max:      # Σ|a|·Σ|b| bounds every sum
        return
    largest = [_largest(m) for m in (a, b)]
    if len(b) * largest[0] * largest[1] > sys.float_info.max:
        products = f"{len(b)} product{'s' * (len(b) > 1)}"
        raise ValueError(f"matmul {_shape_text(a)}·{_shape_text(b)} could overflow: a sum of "
                         f"{products} of entries up to {largest[0]:.3g} and {largest[1]:.3g} can "
                         f"pass {sys.float_info.max:.3g}; the numbers are too large for floats")


def check_add(matrices):
    """add's door: matrices of one shape, of finite numbers whose sums stay within float range."""
    for m in matrices:
        check_rows("add", m)
    if len({(len(m), len(m[0]) if m else 0) for m in matrices}) != 1:
        raise ValueError(f"add needs matrices of one shape, got "
                         f"{', '.join(_shape_text(m) for m in matrices) or 'none'}")
    check_entries("add's sum", len(matrices[0]), len(matrices[0][0]) if matrices[0] else 0)
    if sum(_magnitude(f"add's matrix {n + 1}", m) for n, m in enumerate(matrices)) > \
            sys.float_info.max:      # their magnitudes added up bound every sum
        largest = max(map(_largest, matrices))
        raise ValueError(f"add could overflow: a sum of {len(matrices)} entries up to "
                         f"{largest:.3g} can pass {sys.float_info.max:.3g}; the numbers are too "
                         f"large for floats")


def _largest(m):
    """The largest |entry| of a matrix of finite numbers, as a float."""
    return float(max(map(abs, chain.from_iterable(m))))


def _magnitude(name, m):
    """Σ|entry| over m, which bounds every entry and every sum of them, after checking in two
    passes of C that every entry is a finite number; else raise naming the first that is not."""
    values = list(chain.from_iterable(m))
    try:
        if set(map(type, values)) <= _PLAIN_NUMBERS:
            total = float(sum(map(abs, values)))    # a NaN or an infinity makes it one too
            if math.isfinite(total):
                return total
    except OverflowError:      # an int beyond float range: named below
        pass
    for i, row in enumerate(m):
        for j, value in enumerate(row):
            check_number(f"{name} [{i}][{j}]", value)
    return math.inf            # finite numbers whose magnitudes sum beyond float range


def check_scores_row(row):
    """softmax_row's door: a non-empty list of numbers, each finite or −∞, one at least finite."""
    if type(row) is not list:
        raise TypeError(f"softmax_row needs a list of scores, got {type(row).__name__}")
    if not row:
        raise ValueError("softmax_row needs at least one score, got an empty row")
    check_entries("softmax_row's weights", 1, len(row))
    try:
        if set(map(type, row)) <= _PLAIN_NUMBERS and not any(map(math.isnan, row)) and \
                max(row) != math.inf and max(row) != -math.inf:
            return
    except OverflowError:      # an int beyond float range: named below
        pass
    for j, s in enumerate(row):
        if s != -math.inf:
            check_number(f"softmax_row's score {j + 1}", s, "finite or −∞")
    if all(s == -math.inf for s in row):
        raise ValueError(f"softmax_row needs at least one score that is not −∞, got a row of "
                         f"{len(row)} blocked scores")


def _shape_text(a):
    """How a message shows what came: (2, 3) for a matrix, (2, 3/4) for a ragged one, else its
    type."""
    if type(a) is not list:
        return type(a).__name__
    widths = sorted({len(row) for row in a}) if all(type(r) is list for r in a) else ["?"]
    return f"({len(a)}, {'/'.join(map(str, widths)) or 0})"


def check_allowed(allowed, rows, cols):
    """Raise ValueError unless allowed is a (rows, cols) matrix of bools, a True in every row."""
    if type(allowed) is not list or len(allowed) != rows or any(
            type(r) is not list or len(r) != cols for r in allowed):
        raise ValueError(f"allowed must be a ({rows}, {cols}) matrix of bools, one row per query "
                         f"and one column per source, got {_shape_text(allowed)}")
    for i, row in enumerate(allowed):
        check_bools(f"allowed[{i}]", row)
        if not any(row):
            raise ValueError(f"allowed[{i}] is all False: that query may attend to no source; "
                             f"expected at least one True in every row (there is no fallback)")


def check_bools(name, row):
    """Raise ValueError unless every entry of row is True or False (not 1, 0 or a string)."""
    if set(map(type, row)) != {bool}:
        j, entry = next((j, e) for j, e in enumerate(row) if type(e) is not bool)
        raise ValueError(f"{name}[{j}] must be True or False, got {type(entry).__name__} {entry!r}")


def check_masked_softmax(scores, allowed):
    """masked_softmax's door: two lists of one non-zero length, bools, finite allowed scores."""
    for name, value in (("scores", scores), ("allowed", allowed)):
        if type(value) is not list:
            raise TypeError(f"masked_softmax needs {name} as a list, got {type(value).__name__}")
    if not scores or len(scores) != len(allowed):
        raise ValueError(f"masked_softmax needs scores and allowed of one non-zero length, got "
                         f"{len(scores)} scores and {len(allowed)} mask entries")
    check_bools("allowed", allowed)
    if not any(allowed):
        raise ValueError("softmax of a row with every source blocked: expected at least one "
                         "allowed score")
    for j, (s, ok) in enumerate(zip(scores, allowed)):
        if ok:
            check_number(f"score {j + 1}", s, "finite where allowed")


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
    """Raise unless the two sizes (rows, cols) of the count matrices name, to be made, are ints of
    at least 1 and count · rows · cols within MAX_ENTRIES."""
    check_sizes(**sizes)
    check_entries(name, *sizes.values(), count=count)


def check_callable(name, value, optional=False):
    """Raise TypeError unless value is a function (or None, when optional), naming what came."""
    if not (callable(value) or optional and value is None):
        raise TypeError(f"{name} must be a function{' or None' * optional}, got {kind(value)}")


def check_seed(seed):
    """Raise unless seed is an int (not a bool): random.Random takes a float, a str or None too,
    but the lesson's weights are drawn from an int, and None would draw other weights every run."""
    if type(seed) is not int:
        raise TypeError(f"seed must be an int, got {kind(seed)}: the lesson's weights are "
                        f"drawn from int seeds")


def check_params(params):
    """Return (d_model, d_head) of a params dict, or raise naming the missing or misfitting
    matrix."""
    if type(params) is not dict:    # a subclass could hand the check one matrix, the layer another
        raise TypeError(f"params must be a dict with Wq, Wk, Wv and Wo, "
                        f"got {type(params).__name__}")
    missing = [name for name in ("Wq", "Wk", "Wv", "Wo") if name not in params]
    if missing:
        raise ValueError(f"params must have Wq, Wk, Wv and Wo, missing {', '.join(missing)}")
    d_model, d_head = check_matrix("Wq", params["Wq"])
    if all(type(params[name]) is list and len(params[name]) == rows and
           _plain_matrix(params[name], cols) for name, rows, cols in
           (("Wk", d_model, d_head), ("Wv", d_model, d_head), ("Wo", d_head, d_model))):
        return d_model, d_head          # the common case, in one pass each
    for name in ("Wk", "Wv"):
        if _shape_text(params[name]) != f"({d_model}, {d_head})":
            raise ValueError(f"{name} must be (d_model, d_head) = ({d_model}, {d_head}) like Wq, "
                             f"got {_shape_text(params[name])}")
        check_matrix(name, params[name], cols=d_head)
    if _shape_text(params["Wo"]) != f"({d_head}, {d_model})":
        raise ValueError(f"Wo must be (d_head, d_model) = ({d_head}, {d_model}), "
                         f"got {_shape_text(params['Wo'])}")
    check_matrix("Wo", params["Wo"], cols=d_model)
    return d_model, d_head



# ---- the layer and the core at the door ---------------------------------------------------------

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
    """The common case of a layer's input, settled in one pass: params a dict of Wq, Wk, Wv
    (d_model, d_head) and Wo (d_head, d_model), x rows of d_model, every entry a finite float or
    small int. Anything else goes through the checks one by one, for the message."""
    if type(params) is not dict or type(x) is not list or not x:
        return False
    matrices = [params.get(name) for name in ("Wq", "Wk", "Wv", "Wo")] + [x]
    if set(map(type, matrices)) != {list} or not matrices[0] or type(matrices[0][0]) is not list:
        return False
    d_model, d_head = len(matrices[0]), len(matrices[0][0])
    rows = list(chain.from_iterable(matrices))
    if set(map(type, rows)) != {list} or d_head == 0 or list(map(len, matrices)) != [
            d_model, d_model, d_model, d_head, len(x)]:
        return False
    widths = list(map(len, rows))
    return widths == [d_head] * (3 * d_model) + [d_model] * (d_head + len(x)) and \
        _plain_numbers(rows)


def check_head(q, k, v, allowed, blocked_score):
    """attend's door: q (T, d), k (S, d), v (S, d_v), allowed (T, S) of bools, blocked_score −∞ or
    a finite number."""
    T, d = check_matrix("q", q)
    S, d_k = check_matrix("k", k)
    S_v, _ = check_matrix("v", v)
    check_positions(max(T, S))          # the scores and weights are (T, S)
    if d_k != d:
        raise ValueError(f"query and key widths must match: q is ({T}, {d}), k is ({S}, {d_k})")
    if S_v != S:
        raise ValueError(f"keys and values must be as many: k has {S} rows, v has {S_v}")
    check_allowed(allowed, T, S)
    if type(blocked_score) not in _PLAIN_NUMBERS:
        raise TypeError(f"blocked_score must be -inf or a finite number, got "
                        f"{kind(blocked_score)}")
    if blocked_score != -math.inf:
        check_number("blocked_score", blocked_score, "-inf or a finite number")


def copies(*matrices):
    """New lists with the same entries: a cache that owns its inputs cannot be changed by an edit
    of the caller's lists."""
    return [[list(row) for row in m] for m in matrices]


# ---- after a pass: overflow, and the seal of a cache -------------------------------------------

_CORE_KEYS = ("q", "k", "v", "allowed", "blocked_score", "scale", "scores", "weights", "mixed")
_LAYER_KEYS = ("q", "k", "v", "scale", "raw_scores", "scores", "weights", "mixed", "out", "mask")


class Seal:
    """What a forward pass (or a step of attention_step) made, and the params and x it was made
    from, kept as copies apart from the cache: the backward pass (or the next step) compares them
    with what it is given. Its repr is short: a seal is
    not for reading."""

    def __init__(self, cache, params=None, x=None):
        self.cache = _copied(cache)
        self.x = None if x is None else _copied(x)
        self.params = None if params is None else _copied(_params_of(params))

    def __repr__(self):
        return "<seal: copies of what was made, to check it against>"


def _copied(value):
    """A copy of a dict of matrices and values, or of a matrix, deep enough that no edit of the
    original reaches it."""
    if type(value) is dict:
        return {key: _copied(item) if type(item) is dict else
                [row[:] if type(row) is list else row for row in item] if type(item) is list
                else item for key, item in value.items()}
    if type(value) is list:
        return [row[:] if type(row) is list else row for row in value]
    return value


def _params_of(params):
    return {name: params[name] for name in ("Wq", "Wk", "Wv", "Wo")}


def sealed(cache, params=None, x=None):
    """The cache of a forward pass, sealed: "seal" keeps copies of its entries and, for the layer,
    of the params and x it was made from."""
    return {**cache, "seal": Seal(cache, params, x)}


def _check_seal(cache, keys, made_by):
    """Raise unless cache is a dict made_by returned, with every key and no entry changed since
    (compared by value: −0.0 for 0.0 changes no result)."""
    if type(cache) is not dict:
        raise ValueError(f"cache must be the dict {made_by} returned, got {type(cache).__name__}")
    missing = [key for key in keys + ("seal",) if key not in cache]
    if missing:
        raise ValueError(f"cache must be the dict {made_by} returned; it has no "
                         f"{', '.join(missing)}")
    seal = cache["seal"]
    entries = {key: value for key, value in cache.items() if key != "seal"}
    if not isinstance(seal, Seal) or entries != seal.cache:
        raise ValueError(f"cache is not what {made_by} returned: an entry was changed or replaced "
                         f"since; run {made_by} again. To see what an edited q, k, v or mask "
                         f"does, hand the edited matrices to lab06's attend(q, k, v, allowed), "
                         f"and its attend_backward gives their gradients")


def check_backward(params, x, cache, d_out):
    """attention_backward's door: params and x as for the forward, the cache attention_forward
    returned for exactly these params and x and unchanged since, d_out of out's shape."""
    seal = cache.get("seal") if type(cache) is dict else None
    if not (isinstance(seal, Seal) and type(params) is dict and x == seal.x and
            {name: params.get(name) for name in seal.params} == seal.params):
        check_params(params)            # what is wrong with them is named first
        check_matrix("x", x, cols=len(params["Wq"]), label="input")
    d_model, T = len(params["Wq"]), len(x)
    _check_seal(cache, _LAYER_KEYS, "attention_forward")
    for what, given, kept in (("x", x, cache["seal"].x),
                              ("params", _params_of(params), cache["seal"].params)):
        if given != kept:
            raise ValueError(f"cache was made by attention_forward for another {what} (or {what} "
                             f"was changed since): run attention_forward again on these params "
                             f"and x")
    check_matrix("d_out", d_out, cols=d_model, label="d_out")
    if len(d_out) != T:
        raise ValueError(f"d_out must have one row per position ({T}, {d_model}), "
                         f"got {len(d_out)} rows")


def check_core_backward(cache, d_mixed):
    """attend_backward's door: a cache attend returned, unchanged since, and d_mixed of its
    mixed's shape."""
    _check_seal(cache, _CORE_KEYS, "attend")
    T, d_v = len(cache["mixed"]), len(cache["mixed"][0])
    check_matrix("d_mixed", d_mixed, cols=d_v, label="d_mixed")
    if len(d_mixed) != T:
        raise ValueError(f"d_mixed must have one row per query ({T}, {d_v}), "
                         f"got {len(d_mixed)} rows")


# ---- one position at a time: attention_step's door and the seal of its cache -------------------

_FRESH_KV = "{'k': [], 'v': []}"


def check_step(params, x_t, kv):
    """attention_step's door: kv {'k': [], 'v': []} or as attention_step left it, params that fit
    (checked in full at the first step, then compared with the seal's copy), and x_t one input
    row of d_model finite numbers."""
    _check_kv(kv, params)
    check_positions(len(kv["k"]) + 1)
    d_model = len(params["Wq"])
    if _plain_matrix([x_t], d_model):
        return
    if type(x_t) is not list or any(isinstance(value, list) for value in x_t):
        got = f"a {_shape_text(x_t)} matrix" if type(x_t) is list else type(x_t).__name__
        raise TypeError(f"x_t must be one input row, a list of {d_model} numbers, got {got}: "
                        f"pass x[t], not x")
    if len(x_t) != d_model:
        raise ValueError(f"x_t must have {d_model} numbers (one input row), got {len(x_t)}")
    for j, value in enumerate(x_t):
        check_number(f"x_t[{j}]", value)


def _check_kv(kv, params):
    """Raise unless kv is empty and params fit, or kv is sealed, unchanged, for these params."""
    if type(kv) is not dict:
        raise TypeError(f"kv must be a dict of keys and values, {_FRESH_KV} at the start, got "
                        f"{type(kv).__name__}")
    missing = [name for name in ("k", "v") if name not in kv]
    if missing:
        raise ValueError(f"kv must have 'k' and 'v', {_FRESH_KV} at the start; it has no "
                         f"{', '.join(missing)}")
    for name in ("k", "v"):
        if type(kv[name]) is not list:
            raise TypeError(f"kv[{name!r}] must be a list of rows, got {type(kv[name]).__name__}")
    if not kv["k"] and not kv["v"]:     # an empty cache is the right start for any params
        if "seal" in kv:                # one with a seal had its rows removed, or is bogus
            raise ValueError(f"kv holds a seal but no keys or values: start from {_FRESH_KV}, "
                             f"without a seal")
        check_params(params)
        return
    seal = kv.get("seal")
    if not isinstance(seal, Seal) or seal.params is None:
        raise ValueError(f"kv holds keys or values but no seal: attention_step did not build it; "
                         f"start from {_FRESH_KV}")
    if type(params) is not dict or {name: params.get(name) for name in seal.params} != \
            seal.params:
        check_params(params)            # a bad matrix is named first
        raise ValueError(f"kv was built by attention_step for other params (or params were "
                         f"changed since): start again from {_FRESH_KV}")
    if {"k": kv["k"], "v": kv["v"]} != seal.cache:
        raise ValueError(f"kv is not as attention_step left it: a key or value was changed, "
                         f"added or removed since; start again from {_FRESH_KV}")


def seal_kv(kv, params):
    """Seal kv after a step appended its row to k and v: copies of its rows and of params, which the
    next step's door compares with what it is given."""
    kv["seal"] = Seal({"k": kv["k"], "v": kv["v"]}, params)


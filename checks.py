"""The checks at the door of attention.py: each public entry point calls one of these first.

attention.py holds the mathematics and reads like the lesson; everything here only checks. It
raises TypeError for a value of the wrong kind and ValueError for a wrong shape, size or number,
with a message that names what was expected and what came ("each input row must have 4 numbers,
got 3 in row 0"). `check_stages` runs after a computation and names the first intermediate that
overflowed.
"""

import math
from itertools import chain

NEG_INF = -math.inf

_PLAIN_NUMBERS = {float, int}


def check_matrix(name, m, cols=None, label=None):
    """Return (rows, cols) of a non-empty rectangular list of lists of finite numbers, or raise.

    `cols` is the width the caller expects; `label` names the rows in the width message ("each input
    row must have 4 numbers, got 3 in row 2"). Raises TypeError for a value of the wrong kind and
    ValueError for an empty, ragged or non-finite matrix.
    """
    if _plain_matrix(m, cols):
        return len(m), len(m[0])
    if not isinstance(m, list):
        raise TypeError(f"{name} must be a list of rows, got {type(m).__name__}")
    if not m:
        raise ValueError(f"{name} is an empty sequence: expected at least one row")
    for i, row in enumerate(m):
        if not isinstance(row, list):
            raise TypeError(f"{name}[{i}] must be a list of numbers, got {type(row).__name__}")
    if cols is None:
        cols = len(m[0])
    if cols == 0:
        raise ValueError(f"{name} rows are empty: expected at least one number per row")
    for i, row in enumerate(m):
        if len(row) != cols:
            raise ValueError(f"each {label or name} row must have {cols} numbers, "
                             f"got {len(row)} in row {i}")
        for j, value in enumerate(row):
            check_number(f"{name}[{i}][{j}]", value)
    return len(m), cols


def check_number(where, value, expected="a finite number"):
    """Raise unless value is a finite int or float (not a bool), naming where it stands."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{where} must be a number, got {type(value).__name__} {value!r}")
    try:
        finite = math.isfinite(value)
    except OverflowError:
        raise ValueError(f"{where} must be a number a float can hold, got an int of "
                         f"{value.bit_length()} bits") from None
    if not finite:
        raise ValueError(f"{where} must be {expected}, got {value!r}")


def _plain_matrix(m, cols):
    """The common case, settled in one pass: a non-empty list of equal rows of finite floats (and
    small ints). Anything else goes through check_matrix's checks one by one, for the message."""
    if type(m) is not list or not m or set(map(type, m)) != {list}:
        return False
    widths = set(map(len, m))
    values = list(chain.from_iterable(m))
    if widths != {cols if cols is not None else len(m[0])} or 0 in widths:
        return False
    if not set(map(type, values)) <= _PLAIN_NUMBERS:
        return False
    try:
        return all(map(math.isfinite, values))
    except OverflowError:      # an int beyond float range: let the slow path name it
        return False


def check_rectangular(name, a):
    """Raise ValueError unless a is a list of lists of one length (transpose's input)."""
    if not isinstance(a, list) or not all(isinstance(row, list) for row in a):
        raise TypeError(f"{name} needs a list of rows, got {_shape_text(a)}")
    if len(set(map(len, a))) > 1:
        raise ValueError(f"{name} needs rows of one length, got {_shape_text(a)}")


def check_matmul(a, b):
    """Raise ValueError naming both shapes unless a is (n, m) and b is (m, p)."""
    for name, m in (("left", a), ("right", b)):
        if not isinstance(m, list) or not m or not all(isinstance(row, list) for row in m):
            raise TypeError(f"matmul needs (n, m)·(m, p), got {_shape_text(a)}·{_shape_text(b)}: "
                            f"the {name} side is not a non-empty list of rows")
    inner = {len(row) for row in a}
    if len(inner) != 1 or inner.pop() != len(b) or len({len(row) for row in b}) > 1:
        raise ValueError(f"matmul needs (n, m)·(m, p), got {_shape_text(a)}·{_shape_text(b)}")


def check_product(a, b, product):
    """Return matmul's product after checking that no entry overflowed."""
    for i, row in enumerate(product):
        if not all(map(math.isfinite, row)):
            j, value = next((j, v) for j, v in enumerate(row) if not math.isfinite(v))
            raise ValueError(f"matmul {_shape_text(a)}·{_shape_text(b)} overflowed: entry "
                             f"[{i}][{j}] is {value!r}; the numbers are too large for floats")
    return product


def _shape_text(a):
    """How a message shows what came: (2, 3) for a matrix, (2, 3/4) for a ragged one, else its
    type."""
    if not isinstance(a, list):
        return type(a).__name__
    widths = sorted({len(row) for row in a}) if all(isinstance(r, list) for r in a) else ["?"]
    return f"({len(a)}, {'/'.join(map(str, widths)) or 0})"


def check_allowed(allowed, rows, cols):
    """Raise ValueError unless allowed is a (rows, cols) matrix of bools, a True in every row."""
    if not isinstance(allowed, list) or len(allowed) != rows or any(
            not isinstance(r, list) or len(r) != cols for r in allowed):
        raise ValueError(f"allowed must be a ({rows}, {cols}) matrix of bools, one row per query "
                         f"and one column per source, got {_shape_text(allowed)}")
    for i, row in enumerate(allowed):
        check_bools(f"allowed[{i}]", row)
        if not any(row):
            raise ValueError(f"query {i} may attend to no source: allowed[{i}] is all False, "
                             f"expected at least one True (there is no fallback)")


def check_bools(name, row):
    """Raise ValueError unless every entry of row is True or False (not 1, 0 or a string)."""
    if set(map(type, row)) != {bool}:
        j, entry = next((j, e) for j, e in enumerate(row) if type(e) is not bool)
        raise ValueError(f"{name}[{j}] must be True or False, got {type(entry).__name__} {entry!r}")


def check_masked_softmax(scores, allowed):
    """masked_softmax's door: two lists of one non-zero length, bools, finite allowed scores."""
    for name, value in (("scores", scores), ("allowed", allowed)):
        if not isinstance(value, list):
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
            check_number(f"score {j}", s, "finite where allowed")


def softmax_error(row):
    """The ValueError for a row softmax_row cannot take: it names the score that is wrong."""
    bad = next((s for s in row if s != s or s == math.inf), None)   # s != s: a NaN
    if bad is None:
        return ValueError(f"softmax_row needs at least one score that is not −∞, got a row of "
                          f"{len(row)} blocked scores")
    return ValueError(f"softmax_row needs scores that are finite or −∞, got {bad!r}: the scores "
                      f"overflowed (the numbers are too large for floats), or came in that way")


def check_sizes(**sizes):
    """Raise unless each size is an int of at least 1."""
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def check_params(params):
    """Return (d_model, d_head) of a params dict, or raise naming the missing or misfitting
    matrix."""
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict with Wq, Wk, Wv and Wo, "
                        f"got {type(params).__name__}")
    missing = [name for name in ("Wq", "Wk", "Wv", "Wo") if name not in params]
    if missing:
        raise ValueError(f"params must have Wq, Wk, Wv and Wo, missing {', '.join(missing)}")
    d_model, d_head = check_matrix("Wq", params["Wq"])
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


def check_layer_input(params, x):
    """attention_forward's door: fitting params and x of (T, d_model) finite numbers."""
    d_model, _ = check_params(params)
    check_matrix("x", x, cols=d_model, label="input")


def inputs_of(params, x):
    """A copy of what a forward pass depended on, kept in its cache: the backward compares it with
    the params and x it is given, so a cache from another call (or from an x edited since) is
    refused rather than turned into wrong gradients."""
    return {"x": [list(row) for row in x],
            "params": {name: [list(row) for row in params[name]]
                       for name in ("Wq", "Wk", "Wv", "Wo")}}


def check_backward(params, x, cache, d_out):
    """attention_backward's door: params and x as for the forward, the cache attention_forward
    returned for exactly these params and x, d_out of out's shape."""
    d_model, _ = check_params(params)
    T, _ = check_matrix("x", x, cols=d_model, label="input")
    if not isinstance(cache, dict):
        raise ValueError(f"cache must be the dict attention_forward returned, got "
                         f"{type(cache).__name__}")
    missing = [name for name in _CACHE_KEYS + ("inputs",) if name not in cache]
    if missing:
        raise ValueError(f"cache must be the dict attention_forward returned for these params and "
                         f"x; it has no {', '.join(missing)}")
    if cache["inputs"] != inputs_of(params, x):
        what = "x" if cache["inputs"].get("x") != inputs_of(params, x)["x"] else "params"
        raise ValueError(f"cache was made by attention_forward for another {what} (or {what} was "
                         f"changed since): run attention_forward again on these params and x")
    check_matrix("d_out", d_out, cols=d_model, label="d_out")
    if len(d_out) != T:
        raise ValueError(f"d_out must have one row per position ({T}, {d_model}), "
                         f"got {len(d_out)} rows")


_CACHE_KEYS = ("q", "k", "v", "allowed", "blocked_score", "scores", "weights", "mixed")


def check_head(q, k, v, allowed, blocked_score):
    """attend's door: q (T, d), k (S, d), v (S, d_v), allowed (T, S) of bools, blocked_score −∞ or
    a finite number."""
    T, d = check_matrix("q", q)
    S, d_k = check_matrix("k", k)
    S_v, _ = check_matrix("v", v)
    if d_k != d:
        raise ValueError(f"query and key widths must match: q is ({T}, {d}), k is ({S}, {d_k})")
    if S_v != S:
        raise ValueError(f"keys and values must be as many: k has {S} rows, v has {S_v}")
    check_allowed(allowed, T, S)
    if isinstance(blocked_score, bool) or not isinstance(blocked_score, (int, float)):
        raise TypeError(f"blocked_score must be -inf or a finite number, got "
                        f"{type(blocked_score).__name__} {blocked_score!r}")
    if blocked_score != NEG_INF:
        check_number("blocked_score", blocked_score, "-inf or a finite number")


def check_head_backward(head, d_mixed):
    """attend_backward's door: a head from attend and d_mixed of its mixed's shape."""
    if not isinstance(head, dict) or any(name not in head for name in _CACHE_KEYS):
        raise ValueError("head must be the dict attend returned")
    T, d_v = len(head["mixed"]), len(head["mixed"][0])
    check_matrix("d_mixed", d_mixed, cols=d_v, label="d_mixed")
    if len(d_mixed) != T:
        raise ValueError(f"d_mixed must have one row per query ({T}, {d_v}), "
                         f"got {len(d_mixed)} rows")


def check_stages(tensors):
    """Raise ValueError naming the first computed matrix that holds a value that is not finite: an
    overflow. A score of −∞ is no overflow where allowed blocks it."""
    allowed = tensors.get("allowed")
    for name, m in tensors.items():
        if name == "allowed" or not isinstance(m, list):
            continue
        for i, row in enumerate(m):
            if all(map(math.isfinite, row)):
                continue
            for j, value in enumerate(row):
                blocked = name == "scores" and value == NEG_INF and not allowed[i][j]
                if not math.isfinite(value) and not blocked:
                    raise ValueError(f"{name} overflowed: {name}[{i}][{j}] is {value!r}; the "
                                     f"inputs are too large for floats")
    return tensors

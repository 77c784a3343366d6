"""Checking a hand-written backward pass: central_differences(f, matrix), the slope of f for
every entry, and max_err(a, b), the largest gap between two dicts of gradients. With eps = 1e-6
on a loss of size about 1, truncation (eps² ≈ 1e-12) and rounding (1e-16 / eps ≈ 1e-10) leave a
correct gradient well within 1e-8, and a wrong one far outside.
"""

import math

from common.checks import check_callable, check_matrix, check_number, check_rows, kind, said

EPS = 1e-6       # the lesson's ε
MIN_EPS, MAX_EPS = 1e-10, 1.0      # below: rounding (1e-16 / eps) swamps the difference
RESOLVED = 1e-10   # eps must be at least this much of an entry's size, or m ± eps rounds back to m


def central_differences(f, matrix, eps=EPS):
    """(f() with m + eps − f() with m − eps) / 2·eps for every entry m of matrix (changed in place,
    then restored), a matrix of matrix's shape.

    >>> central_differences(lambda: w[0][0] ** 2, w := [[3.0]])  # d(w²)/dw = 2w = 6
    [[6.000000000838668]]

    Raises ValueError for an eps outside MIN_EPS…MAX_EPS or below |entry|·RESOLVED, rows that
    repeat one list, or an f that gives no finite number.
    """
    check_callable("f", f)
    if type(eps) not in (float, int) or not MIN_EPS <= eps <= MAX_EPS:
        raise ValueError(f"eps must be a finite number above 0, {MIN_EPS} to {MAX_EPS} (the "
                         f"lesson's is {EPS}), got {kind(eps)}")
    check_matrix("matrix", matrix)
    if len({id(row) for row in matrix}) != len(matrix):
        raise ValueError("central_differences needs rows that are separate lists; these repeat "
                         "one list (as [row] * n does): copy them first")
    grad = []
    for i, row in enumerate(matrix):
        grad_row = []
        for j, saved in enumerate(row):
            if abs(saved) * RESOLVED > eps:
                raise ValueError(f"eps {eps!r} is too small for entry [{i}][{j}] = {saved!r}: "
                                 f"expected eps of at least |entry|·{RESOLVED} = "
                                 f"{abs(saved) * RESOLVED:.3g}, or the step is lost to rounding")
            try:
                row[j] = saved + eps
                up = f()
                row[j] = saved - eps
                down = f()
            finally:
                row[j] = saved
            for y in (up, down):
                if type(y) not in (float, int):       # True is no loss
                    raise TypeError(f"f must give a number, got {kind(y)} around entry [{i}][{j}]")
                if not _holds(y):
                    raise ValueError(f"f must give a finite number, got {said(up)} and "
                                     f"{said(down)} around entry [{i}][{j}]")
            slope = (float(up) - float(down)) / (2 * eps)
            if not math.isfinite(slope):
                raise ValueError(f"the difference of f's values around entry [{i}][{j}], {up!r} "
                                 f"and {down!r}, over 2·eps is beyond float range")
            grad_row.append(slope)
        grad.append(grad_row)
    return grad


def _holds(y):
    """True for a float or int that is a finite float (10**400 is none)."""
    try:
        return math.isfinite(y)
    except OverflowError:
        return False


def max_err(a, b):
    """The largest absolute difference between two dicts of gradient matrices. Raises ValueError
    when their names or shapes differ or a gap is not finite.

    >>> max_err({"W": [[1.0, 2.0]]}, {"W": [[1.0, 2.5]]})
    0.5
    """
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise TypeError(f"max_err needs two dicts of gradients, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a.keys() != b.keys():
        raise ValueError(f"max_err needs the same gradients on both sides, got {sorted(a)} and "
                         f"{sorted(b)}")
    gaps = [0.0]
    for name in a:
        rows_a, rows_b = a[name], b[name]
        check_rows(f"max_err's {name}", rows_a)
        check_rows(f"max_err's {name}", rows_b)
        if len(rows_a) != len(rows_b) or any(len(r) != len(s) for r, s in zip(rows_a, rows_b)):
            raise ValueError(f"max_err needs {name} of one shape on both sides, got "
                             f"{[len(r) for r in rows_a]} and {[len(r) for r in rows_b]} entries "
                             f"per row")
        for i, (row_a, row_b) in enumerate(zip(rows_a, rows_b)):
            for j, (p, q) in enumerate(zip(row_a, row_b)):
                for y in (p, q):
                    if type(y) not in (float, int):
                        check_number(f"max_err's {name}[{i}][{j}]", y)    # a TypeError
                gap = abs(float(p) - float(q)) if _holds(p) and _holds(q) else math.inf
                if not math.isfinite(gap):
                    raise ValueError(f"max_err needs finite gradients, got {said(p)} and "
                                     f"{said(q)} at {name}[{i}][{j}]")
                gaps.append(gap)
    return max(gaps)

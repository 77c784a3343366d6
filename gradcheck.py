"""Checking a hand-written backward pass: central differences, and the largest gap between two sets
of gradients. The lesson's gradient check (trace_attention.py) and the training's whole-model check
use it.

    central_differences(f, matrix)   (f(m + eps) − f(m − eps)) / 2·eps for every entry m
    max_err(a, b)                         the largest |a − b| over two gradient dicts

With eps = 1e-6 on a loss of size about 1, the truncation error is O(eps²) ≈ 1e-12 and the rounding
error about 1e-16 / eps ≈ 1e-10: a correct gradient agrees to well within 1e-8, and a wrong one (a
dropped path, a missing 1/√d) misses by far more.
"""


EPS = 1e-6       # the lesson's ε


def central_differences(f, matrix, eps=EPS):
    """(f() with m + eps − f() with m − eps) / 2·eps for every entry m of matrix, changed in place
    and restored after. Returns a matrix of matrix's shape.

    >>> central_differences(lambda: w[0][0] ** 2, w := [[3.0]])  # d(w²)/dw = 2w = 6
    [[6.000000000838668]]
    """
    grad = []
    for row in matrix:
        grad_row = []
        for j, saved in enumerate(row):
            row[j] = saved + eps
            up = f()
            row[j] = saved - eps
            down = f()
            row[j] = saved
            grad_row.append((up - down) / (2 * eps))
        grad.append(grad_row)
    return grad


def max_err(a, b):
    """The largest absolute difference between two dicts of gradient matrices. Raises ValueError
    when their names or shapes differ: a gap over the shorter of two lists would hide a missing
    gradient.

    >>> max_err({"W": [[1.0, 2.0]]}, {"W": [[1.0, 2.5]]})
    0.5
    """
    if a.keys() != b.keys():
        raise ValueError(f"max_err needs the same gradients on both sides, got {sorted(a)} and "
                         f"{sorted(b)}")
    gaps = [0.0]
    for name in a:
        rows_a, rows_b = a[name], b[name]
        if len(rows_a) != len(rows_b) or any(len(r) != len(s) for r, s in zip(rows_a, rows_b)):
            raise ValueError(f"max_err needs {name} of one shape on both sides, got "
                             f"{[len(r) for r in rows_a]} and {[len(r) for r in rows_b]} entries "
                             f"per row")
        gaps += [abs(p - q) for row_a, row_b in zip(rows_a, rows_b) for p, q in zip(row_a, row_b)]
    return max(gaps)

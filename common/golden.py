"""Golden files: what a program writes with --write and checks with --check (to_json, rounded,
write_or_check), and changed_rows, which both labs record. Never typed by hand.
"""

import json
import math
import os

from common.cli import fail, show, show_json
from common.safe_io import read_text, write_atomic


def to_json(obj):
    """The JSON of every recorded file: indent 2, UTF-8 as is, a final newline; no NaN or inf."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def rounded(value, digits):
    """Round every float in nested lists and dicts; −∞ becomes None (JSON null), NaN or +∞ raise.

    >>> rounded([[0.123456, -math.inf]], 4)
    [[0.1235, None]]
    """
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(item, digits) for item in value]
    if isinstance(value, float):
        if value == -math.inf:
            return None
        if not math.isfinite(value):
            raise ValueError(f"a recorded number must be finite or -inf, got {value!r}")
        return round(value, digits)
    return value


def changed_rows(a, b):
    """Indices of the rows that differ at all (−0.0 and 0.0 are one value), or only one side has.

    >>> changed_rows([[1.0], [2.0]], [[1.0], [2.5], [3.0]])
    [1, 2]
    """
    return [i for i in range(max(len(a), len(b))) if i >= len(a) or i >= len(b) or a[i] != b[i]]


def write_or_check(text, path, write, check):
    """--write, --check (naming the first line that differs) or print text; the exit status."""
    name = os.path.basename(path)
    if write:
        write_atomic(path, text)
        show(f"wrote {name}\n")
        return 0
    if check:
        try:
            recorded = read_text(path)
        except OSError as e:
            return fail(f"cannot read {name}: {e.strerror or e}; run with --write to record it")
        if recorded == text:
            show(f"{name} is up to date\n")
            return 0
        fresh_lines, old_lines = text.splitlines(), recorded.splitlines()
        line = next((n for n, (a, b) in enumerate(zip(fresh_lines, old_lines), 1) if a != b),
                    min(len(fresh_lines), len(old_lines)) + 1)
        return fail(f"{name} differs from a fresh run (first at line {line}); run with --write "
                    f"to update it")
    show_json(text)
    return 0

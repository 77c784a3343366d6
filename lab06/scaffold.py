"""Lab 06's scaffold: `python3 perturb_attention.py --scaffold tiny_attention.py` writes SCAFFOLD,
the starter file the learner fills in, with the grader's checks, never named after a module of
the standard library (json.py), which the file would shadow.
"""

import os
import sys

from common.safe_io import check_output_path, write_atomic
from common.views import TOLERANCE
from lab06.grading_checks import lab_checks
from lab06.process import CALL_LIMIT
from lab06.report import wrapped

SCAFFOLD = '''"""Lab 06: one attention head, computed by hand. Fill in the three functions, then run

    python3 tiny_attention.py                                 print your baseline
    python3 perturb_attention.py --grade tiny_attention.py    check every part

Rows are positions. allowed[i][j] is True when query i may attend to source j. The grader runs your
file in a process of its own, at most CALL_LIMIT s a call, and these COUNT checks, in the order of
the computation (rows and columns in its messages count from 1; a number is right when it lies
within TOLERANCE of the grader's):

CHECKS
"""

import math

C = math.sqrt(2) * math.log(2)    # keep it exact: every score comes out a multiple of ln 2
X = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
WQ = [[1.0, 0.0], [0.0, 1.0]]
WK = [[C, 0.0], [0.0, C]]
WV = [[2.0, 0.0], [0.0, 4.0]]
ALLOWED = [[True, False, False], [True, True, False], [True, True, True]]


def matmul(left, right):
    """(n, m)·(m, p) -> (n, p). Raise ValueError, naming both shapes, when m differs."""
    raise NotImplementedError("matmul: check the inner sizes, then one sum of products per "
                              "output cell")


def masked_softmax(scores, allowed):
    """Softmax of one row over the allowed sources; a blocked source gets exactly 0.0.
    Raise ValueError when nothing is allowed, or a list is empty or of the wrong length."""
    raise NotImplementedError("masked_softmax: subtract the largest allowed score, take exp, "
                              "divide by the sum; blocked sources are 0.0")


def attention(Q, K, V, allowed):
    """Return {"scores": Q·Kᵀ/√d before the mask, "masked_scores": −∞ where blocked,
    "weights": masked_softmax of each row, "output": weights·V}. Raise ValueError for a ragged
    or empty matrix, widths or counts that do not fit, a mask of the wrong size or with an entry
    that is not a bool, a row with nothing allowed, or a number that is not finite."""
    raise NotImplementedError("attention: scores, then the mask, then masked_softmax per row, "
                              "then the weighted sum of V")


if __name__ == "__main__":
    Q, K, V = matmul(X, WQ), matmul(X, WK), matmul(X, WV)
    result = attention(Q, K, V, ALLOWED)
    for name in ("scores", "masked_scores", "weights", "output"):
        print(name, result[name])
'''


def shadowed(path):
    """The module of the standard library a Python file of this name would shadow from its folder,
    or None (a name of this project's shadows nothing: the commands run from the top folder).

    >>> shadowed("json.py"), shadowed("attention.py"), shadowed("tiny_attention.py")
    ("the standard library's json", None, None)
    """
    stem, extension = os.path.splitext(os.path.basename(path))
    if extension == ".py" and (stem in sys.stdlib_module_names or stem in sys.builtin_module_names):
        return f"the standard library's {stem}"
    return None


def refuse_a_shadowing_name(path, doing):
    """Raise ValueError, naming the module, when a file at path would shadow one."""
    if what := shadowed(path):
        stem = os.path.splitext(os.path.basename(path))[0]
        raise ValueError(f"cannot {doing} {path}: `import {stem}` would find it before {what}, "
                         f"and every command beside it would break; pick another name, such as "
                         f"tiny_attention.py")


def scaffold(path):
    """Write the starter file, which lists the grader's checks; refuse to overwrite anything."""
    if not path:
        raise ValueError("the scaffold path is empty: expected a file name such as "
                         "tiny_attention.py")
    if os.path.lexists(path):
        raise ValueError(f"{path} already exists: the scaffold never overwrites a file "
                         f"(pick another name, or delete it first)")
    refuse_a_shadowing_name(path, "write")
    check_output_path(path)
    names = [name for name, _ in lab_checks()]
    listed = [part for n, name in enumerate(names, 1)
              for part in wrapped(f"    {n:2}. {name}", indent=" " * 8)]
    text = (SCAFFOLD.replace("CALL_LIMIT", f"{CALL_LIMIT:g}").replace("COUNT", str(len(names)))
            .replace("TOLERANCE", f"{TOLERANCE:.0e}".replace("e-0", "e-"))
            .replace("CHECKS", "\n".join(listed)))
    write_atomic(path, text)
    return f"wrote {path}: fill in matmul, masked_softmax and attention, then run --grade {path}"

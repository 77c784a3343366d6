"""Lab 06's scaffold and grader: write your own tiny_attention.py, then have it checked.

    python3 perturb_attention.py --scaffold tiny_attention.py    a starter file to fill in
    python3 perturb_attention.py --grade tiny_attention.py       one PASS or FAIL line per check

The learner's file defines, as the lab's Part 3 asks:

    matmul(left, right)                 lists of lists, (n, m)·(m, p) -> (n, p)
    masked_softmax(scores, allowed)     one row; a blocked source gets exactly 0.0
    attention(Q, K, V, allowed)         {"scores", "masked_scores", "weights", "output"}

The grader imports the file under its own name (so its `if __name__ == "__main__":` part does not
run) and compares each answer with attention.py's: the baseline, the four interventions on fresh
copies, the lab's list of inputs to reject, inputs left as they were, and the optional checks. When
wrong numbers match a mistake learners make, the line names the mistake. A function that runs for
more than TIME_LIMIT seconds is stopped (where the system has SIGALRM: Linux and macOS).
"""

import contextlib
import importlib.util
import io
import math
import os
import signal
import sys
import traceback

import lab06
from attention import attend, masked_softmax, matmul, transpose
from safe_io import write_atomic

TOLERANCE = 1e-9          # the lab's: a ratio of powers of 2, computed in floats, is a few ulps off
TIME_LIMIT = 3            # seconds one call of the learner's code may take

SCAFFOLD = '''"""Lab 06: one attention head, computed by hand. Fill in the three functions, then run

    python3 tiny_attention.py                           print your baseline
    python3 perturb_attention.py --grade tiny_attention.py    check every part

Rows are positions. allowed[i][j] is True when query i may attend to source j.
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


def scaffold(path):
    """Write the starter file; refuse to overwrite anything."""
    if not path:
        raise ValueError("the scaffold path is empty: expected a file name such as "
                         "tiny_attention.py")
    if os.path.lexists(path):
        raise ValueError(f"{path} already exists: the scaffold never overwrites a file "
                         f"(pick another name, or delete it first)")
    write_atomic(path, SCAFFOLD)
    return f"wrote {path}: fill in matmul, masked_softmax and attention, then run --grade {path}"


# ---- running the learner's code ---------------------------------------------------------------

class TookTooLong(Exception):
    pass


class Learner:
    """The learner's module, and a way to call it that turns every failure into a line."""

    def __init__(self, module, path):
        self.module, self.path = module, path

    def call(self, name, *args):
        """(value, None) or (None, what went wrong, in a few words)."""
        function = getattr(self.module, name, None)
        if not callable(function):
            return None, f"{os.path.basename(self.path)} has no function {name}"
        try:
            with _time_limit(), contextlib.redirect_stdout(io.StringIO()):
                return function(*args), None
        except NotImplementedError:
            return None, f"not implemented yet: {name}"
        except TookTooLong:
            return None, f"{name} was stopped after {TIME_LIMIT} s: does a loop never end?"
        except Exception as e:   # the learner's bug, reported as a line, not a traceback
            return None, f"{name} raised {type(e).__name__}: {e}{self._where(e)}"

    def _where(self, error):
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if os.path.abspath(f.filename) == os.path.abspath(self.path)]
        return f" (line {frames[-1].lineno})" if frames else ""


def load(path):
    """The learner's module, imported without running its __main__ part. Raises ValueError with one
    line naming the file (and the line) when it cannot be read or imported."""
    if not os.path.isfile(path):
        raise ValueError(f"cannot grade {path}: no such file (write one with --scaffold {path})")
    name = os.path.splitext(os.path.basename(path))[0].replace("-", "_") or "learner"
    spec = importlib.util.spec_from_file_location(f"learner_{name}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        with _time_limit(), contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(module)
    except SyntaxError as e:
        raise ValueError(f"{path}, line {e.lineno}: syntax error: {e.msg}") from None
    except TookTooLong:
        raise ValueError(f"{path}: importing it took more than {TIME_LIMIT} s") from None
    except Exception as e:
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if os.path.abspath(f.filename) == os.path.abspath(path)]
        where = f", line {frames[-1].lineno}" if frames else ""
        raise ValueError(f"{path}{where}: importing it raised {type(e).__name__}: {e}") from None
    return Learner(module, path)


@contextlib.contextmanager
def _time_limit():
    if not hasattr(signal, "setitimer"):
        yield
        return

    def stop(signum, frame):
        raise TookTooLong()
    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---- comparing ---------------------------------------------------------------------------------

def copies(*matrices):
    return tuple([list(row) for row in m] for m in matrices)


def mismatch(got, want, blocked=None, blocked_value=None):
    """None when got matches want within TOLERANCE (and equals blocked_value exactly where blocked
    is True), else a few words on the first difference."""
    if not isinstance(got, list) or len(got) != len(want):
        return f"expected {len(want)} rows, got {_short(got)}"
    for i, (g_row, w_row) in enumerate(zip(got, want)):
        if not isinstance(g_row, (list, tuple)) or len(g_row) != len(w_row):
            return f"row {i}: expected {len(w_row)} entries, got {_short(g_row)}"
        for j, (g, w) in enumerate(zip(g_row, w_row)):
            if blocked and blocked[i][j]:
                if not (isinstance(g, (int, float)) and g == blocked_value):
                    return (f"[{i}][{j}] is blocked: expected exactly {_num(blocked_value)}, "
                            f"got {_num(g)}")
            elif not isinstance(g, (int, float)) or not abs(g - w) <= TOLERANCE:
                return f"[{i}][{j}]: expected {_num(w)}, got {_num(g)}"
    return None


def _num(x):
    if isinstance(x, float):
        return "−∞" if x == -math.inf else f"{x:.10g}" if abs(x) < 1e6 else f"{x:g}"
    return repr(x)


def _short(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- the mistakes learners make ----------------------------------------------------------------

def _softmax_rows(scores, allowed):
    """Softmax of each row over its allowed entries; a row with none allowed becomes None."""
    rows = []
    for row, ok in zip(scores, allowed):
        rows.append(masked_softmax(row, ok) if any(ok) else None)
    return rows


def known_mistakes(q, k, v, allowed):
    """{mistake, in plain words: the weights it produces} for the baseline head."""
    d = len(q[0])
    raw = matmul(q, transpose(k))
    inverted = [[not ok for ok in row] for row in allowed]
    masked_scores = [[s / math.sqrt(d) if ok else -math.inf for s, ok in zip(row, ok_row)]
                     for row, ok_row in zip(raw, allowed)]
    columns = transpose(masked_scores)
    by_column = _softmax_rows(columns, [[s != -math.inf for s in col] for col in columns])
    column_softmax = [None] * len(q) if None in by_column else transpose(by_column)
    return {
        "the mask is applied after the softmax and the rows are not renormalised (they sum to "
        "less than 1): softmax over the allowed sources only, or divide again by the row's sum":
            lab06.buggy_post_softmax(q, k, v, allowed)[0],
        "the scores are not scaled: divide Q·Kᵀ by √d (here √2)":
            _softmax_rows(raw, allowed),
        "the scores are divided by d, not √d":
            _softmax_rows([[s / d for s in row] for row in raw], allowed),
        "the mask's polarity is inverted: True means the query MAY attend to the source":
            _softmax_rows([[s / math.sqrt(d) for s in row] for row in raw], inverted),
        "the softmax is taken over each column; take it over each row (over the sources of one "
        "query)": column_softmax,
        "blocked scores are set to 0.0 instead of −∞: exp(0) = 1 still gives them weight":
            [masked_softmax([s if ok else 0.0 for s, ok in zip(row, ok_row)], [True] * len(row))
             for row, ok_row in zip(masked_scores, allowed)],
    }


def diagnose(weights, q, k, v, allowed):
    """The known mistake whose weights these are, or None."""
    for mistake, expected in known_mistakes(q, k, v, allowed).items():
        rows = [(g, e) for g, e in zip(weights, expected) if e is not None]
        if rows and all(isinstance(g, (list, tuple)) and len(g) == len(e) and all(
                isinstance(a, (int, float)) and abs(a - b) <= 1e-6 for a, b in zip(g, e))
                for g, e in rows):
            return mistake
    return None


# ---- the checks --------------------------------------------------------------------------------

def checks(learner):
    """Yield (passed, line) for every check, in the lab's order."""
    # Part 3, one function at a time
    ours_q, ours_k, ours_v, allowed = lab06.projected()
    for name, (left, right), want in (("Q = X·WQ", (lab06.X, lab06.WQ), ours_q),
                                      ("K = X·WK", (lab06.X, lab06.WK), ours_k),
                                      ("V = X·WV", (lab06.X, lab06.WV), ours_v)):
        got, error = learner.call("matmul", *copies(left, right))
        yield _line(f"matmul: {name}", error or mismatch(got, want))
    got, error = learner.call("matmul", [[1.0, 2.0, 3.0]], [[1.0], [2.0]])
    yield _rejects("matmul rejects (1, 3)·(2, 1)", got, error)
    got, error = learner.call("matmul", [[1.0, 2.0], [3.0]], [[1.0], [2.0]])
    yield _rejects("matmul rejects a ragged matrix", got, error)

    got, error = learner.call("masked_softmax", [0.0, math.log(2), math.log(2)],
                              [True, True, False])
    yield _line("masked_softmax: [0, ln 2, ln 2] with the last blocked -> [1/3, 2/3, 0]",
                error or mismatch([got], [[1 / 3, 2 / 3, 0.0]], [[False, False, True]], 0.0))
    got, error = learner.call("masked_softmax", [1.0, 2.0], [False, False])
    yield _rejects("masked_softmax rejects a row with nothing allowed", got, error)

    # the baseline
    q, k, v, allowed = lab06.projected()
    first, error = learner.call("attention", *copies(q, k, v, allowed))
    if error:
        yield _line("attention: the baseline", error)
        first = None
    else:
        yield from _baseline(first, q, k, v, allowed)

    # a mask that is not causal, whose every row keeps a source when inverted: polarity shows here
    q, k, v, _ = lab06.projected()
    mixed_mask = [[True, False, True], [False, True, True], [True, True, False]]
    got, error = learner.call("attention", *copies(q, k, v, mixed_mask))
    problem = error or _result_problem(got) or mismatch(
        got["weights"], attend(q, k, v, mixed_mask)["weights"],
        [[not ok for ok in row] for row in mixed_mask], 0.0)
    if problem and not error and not _result_problem(got):
        mistake = diagnose(got["weights"], q, k, v, mixed_mask)
        problem += f"; this looks like: {mistake}" if mistake else ""
    yield _line("attention with allowed = [[T, F, T], [F, T, T], [T, T, F]]", problem)

    # a blocked source gets no weight even when the scores are huge: −∞, not a stand-in such as −1e9
    probe = ([[-1e5], [-1e5]], [[1e5], [1e5]], [[1.0], [2.0]], [[True, False], [True, True]])
    got, error = learner.call("attention", *probe)
    problem = error or _result_problem(got) or mismatch(got["weights"], [[1.0, 0.0], [0.5, 0.5]],
                                                        [[False, True], [False, False]], 0.0)
    if problem and not error and isinstance(got["weights"][0][1], (int, float)) \
            and got["weights"][0][1] > 0:
        problem += ("; this looks like: a blocked score stood in for by a finite number (such as "
                    "−1e9), which wins once the allowed scores are lower still (here −1e10): "
                    "use −∞")
    yield _line("a blocked source gets no weight when every score is near −1e10", problem)

    # the interventions, each on fresh copies
    for key, change in lab06.INTERVENTIONS.items():
        q, k, v, allowed = lab06.projected()
        change(q, k, v, allowed)
        want = attend(q, k, v, allowed)
        got, error = learner.call("attention", *copies(q, k, v, allowed))
        problem = error or _result_problem(got) or mismatch(got["weights"], want["weights"]) or \
            mismatch(got["output"], want["mixed"])
        yield _line(f"intervention {lab06.TITLES[key]}", problem)

    # what the lab asks to reject
    for what, args in rejection_cases():
        got, error = learner.call("attention", *args)
        yield _rejects(f"attention rejects {what}", got, error, type_error_too="bool" in what)

    # inputs left as they were, and the baseline unchanged after everything
    q, k, v, allowed = lab06.projected()
    before = copies(q, k, v, allowed)
    got, error = learner.call("attention", q, k, v, allowed)
    edited = [name for name, a, b in zip(("Q", "K", "V", "allowed"), (q, k, v, allowed), before)
              if a != b]
    yield _line("attention leaves Q, K, V and allowed as they were", error or (
        f"the inputs were edited in place ({', '.join(edited)} changed): work on copies"
        if edited else None))
    again, error = learner.call("attention", *copies(*lab06.projected()))
    yield _line("the baseline comes out the same after all of the above", error or (
        None if first is None or again == first else "a second run gave other numbers: does the "
                                                     "function keep state between calls?"))

    # the optional checks
    q, k, v, allowed = lab06.projected()
    shifted_v = [[a + b for a, b in zip(row, lab06.VALUE_SHIFT)] for row in v]
    got, error = learner.call("attention", *copies(q, k, shifted_v, allowed))
    base = attend(q, k, v, allowed)["mixed"]
    yield _line("optional: adding [1, −2] to every value shifts each output by [1, −2]",
                error or _result_problem(got) or mismatch(
                    got["output"], [[a + b for a, b in zip(row, lab06.VALUE_SHIFT)] for row in base]))
    scores = [math.log(2), math.log(2), 2 * math.log(2)]
    got, error = learner.call("masked_softmax", [s + lab06.SCORE_OFFSET for s in scores],
                              [True, True, True])
    yield _line("optional: adding 1000 to every score keeps the weights [1/4, 1/4, 1/2]",
                error or mismatch([got], [[0.25, 0.25, 0.5]]))


def _baseline(got, q, k, v, allowed):
    """The four parts of the baseline, each its own line, with a diagnosis where one fits."""
    problem = _result_problem(got)
    if problem:
        yield _line("attention: the baseline", problem)
        return
    want = lab06.baseline()
    blocked = [[not ok for ok in row] for row in allowed]
    yield _line("baseline scores = Q·Kᵀ/√2, before the mask",
                mismatch(got["scores"], want["scores"]))
    problem = mismatch(got["masked_scores"], want["masked_scores"], blocked, -math.inf)
    if problem and "is blocked" in problem:
        value = got["masked_scores"][0][1]
        problem += (": blocked scores must be −∞; a finite stand-in such as " + _num(value) +
                    " still gives the future weight once the scores are large enough"
                    if isinstance(value, float) and math.isfinite(value) else "")
    yield _line("baseline masked_scores: −∞ where blocked", problem)
    problem = mismatch(got["weights"], want["weights"], blocked, 0.0)
    if problem:
        mistake = diagnose(got["weights"], q, k, v, allowed)
        problem += f"; this looks like: {mistake}" if mistake else ""
    yield _line("baseline weights: rows sum to 1, exactly 0.0 where blocked", problem)
    yield _line("baseline output = weights·V", mismatch(got["output"], want["output"]))


def _result_problem(got):
    if not isinstance(got, dict):
        return f"attention must return a dict, got {type(got).__name__}"
    missing = [key for key in ("scores", "masked_scores", "weights", "output") if key not in got]
    return f"the dict has no {', '.join(missing)}" if missing else None


def rejection_cases():
    """(what, arguments) for each input the lab asks attention to reject."""
    q, k, v, allowed = lab06.projected()
    nan = [list(row) for row in q]
    nan[2][1] = math.nan
    return [
        ("a ragged matrix", ([[1.0, 0.0], [1.0], [1.0, 1.0]], k, v, allowed)),
        ("an empty matrix", ([], k, v, [])),
        ("query and key widths that differ", (q, [[1.0, 0.0, 0.0]] * 3, v, allowed)),
        ("key and value counts that differ", (q, k, v[:2], allowed)),
        ("a mask of the wrong size", (q, k, v, [[True, False], [True, True]])),
        ("a mask entry that is not a bool", (q, k, v, [[True, False, False], [1, True, False],
                                                       [True, True, True]])),
        ("a row with every source blocked", (q, k, v, [[True, False, False], [False] * 3,
                                                       [True, True, True]])),
        ("a query that is not finite", (nan, k, v, allowed)),
        ("scores that overflow to infinity", ([[1e200, 1e200]] * 3, [[1e200, 1e200]] * 3, v,
                                              allowed)),
    ]


def _rejects(name, got, error, type_error_too=False):
    """A rejection check: a ValueError passes, and a TypeError where the value is of the wrong
    kind."""
    if error is None:
        return False, f"FAIL  {name}: expected ValueError, but it returned {_short(got)}"
    if " raised ValueError" in error or (type_error_too and " raised TypeError" in error):
        return True, f"PASS  {name}"
    if " raised " not in error:
        return False, f"FAIL  {name}: {error}"
    return False, f"FAIL  {name}: expected ValueError, but {error}"


def _line(name, problem):
    return (True, f"PASS  {name}") if problem is None else (False, f"FAIL  {name}: {problem}")


def grade(path):
    """The report, one line a check, and whether every check passed."""
    learner = load(path)
    lines, passed = [], True
    for ok, line in checks(learner):
        lines.append(line)
        passed = passed and ok
    count = sum(line.startswith("PASS") for line in lines)
    lines.append(f"{count} of {len(lines)} checks pass" + ("" if passed else
                                                           f": fix the first FAIL and grade again"))
    return lines, passed

"""The cache of keys and values: the layer one position at a time (attention_step), what a cache
gets wrong without the causal mask, the multiply-adds of generating with and without it, and what
kv-cache-trace.json records. With the causal mask row t is final when position t arrives; with no
mask or the zero-score bug a later position changes it. Prints nothing.
"""

from math import fsum

from attention import MASK_MODES, attention_forward, unchecked
from common import checks
from core.masked import attention_core
from common.golden import rounded

DIGITS = 4          # kv-cache-trace.json rounds as attention-trace.json does


def attention_step(params, x_t, kv):
    """Run the layer on one new position t: x_t its input row (d_model numbers), kv the cache
    {"k": [...], "v": [...]} of the positions before it, {"k": [], "v": []} at the start. Appends
    this position's key and value to kv and returns its row of every intermediate: q, k, v and
    mixed (d_head each); scores and weights (t + 1 each: positions 0…t); out (d_model). Each
    number is `==` to row t of attention_forward on x[:t + 1]: the same products, in one order.

    >>> from attention import init_attention
    >>> params = init_attention(d_model=4, d_head=2, seed=11)
    >>> kv = {"k": [], "v": []}
    >>> [round(w, 4) for w in attention_step(params, [-0.75, 0.28, 0.69, 0.22], kv)["weights"]]
    [1.0]
    >>> [round(w, 4) for w in attention_step(params, [0.47, 0.13, -0.97, 0.42], kv)["weights"]]
    [0.5164, 0.4836]
    >>> len(kv["k"]), len(kv["v"])
    (2, 2)

    Each step seals kv (kv["seal"]). Raises ValueError for a bad x_t or params, a kv this function
    did not build for these params or that was changed since, or a result too large for floats
    (kv is then as it was); TypeError for a value of the wrong kind.
    """
    seal = _check_step(params, x_t, kv)
    t = len(kv["k"])                  # this position: kv holds the keys and values of 0…t-1
    Wq, Wk, Wv, Wo = params["Wq"], params["Wk"], params["Wv"], params["Wo"]
    q, k, v = unchecked.matmul([x_t], Wq), unchecked.matmul([x_t], Wk), unchecked.matmul([x_t], Wv)
    allowed = [[True] * (t + 1)]      # row t of causal_mask: 0…t-1 and t itself, nothing later
    row = attention_core(q, kv["k"] + k, kv["v"] + v, allowed)   # scores, weights, mixed
    out = unchecked.matmul(row["mixed"], Wo)
    kv["k"].append(k[0])              # only now: a step that raises leaves kv as it was
    kv["v"].append(v[0])
    kv["seal"] = _Seal(seal.weights, seal.k + [list(k[0])], seal.v + [list(v[0])])  # next door's
    return {"q": q[0], "k": k[0], "v": v[0], "scores": row["scores"][0],
            "weights": row["weights"][0], "mixed": row["mixed"][0], "out": out[0]}


def steps(params, x):
    """attention_step on each row of x (T, d_model) in turn, from an empty cache: T dicts."""
    kv = {"k": [], "v": []}
    return [attention_step(params, x_t, kv) for x_t in x]


def matches_full_pass(step, full, t):
    """True when step, attention_step's result at position t, is row t of full (attention_forward's
    result), compared with ==; after t full may hold only −∞ scores and weights of exactly 0.0."""
    _check_row(step, full, t)
    later = len(full["weights"][t]) - (t + 1)
    return (all(step[name] == full[name][t] for name in ("q", "k", "v", "mixed", "out"))
            and step["scores"] + [float("-inf")] * later == full["scores"][t]
            and step["weights"] + [0.0] * later == full["weights"][t])


def row_errors(step, full, t):
    """(the full pass's weight on the positions after t, the largest |step − full pass| of out)."""
    _check_row(step, full, t)
    return (fsum(full["weights"][t][t + 1:]),
            max(abs(a - b) for a, b in zip(step["out"], full["out"][t])))


def _check_row(step, full, t):
    """Raise unless full is a full pass, t one of its positions (not −1) and step its step at t."""
    names = ("q", "k", "v", "scores", "weights", "mixed", "out")
    for what, result, made_by in (("step", step, "attention_step"),
                                  ("full", full, "attention_forward")):
        if type(result) is not dict or any(name not in result for name in names):
            raise TypeError(f"{what} must be what {made_by} returned, a dict of "
                            f"{', '.join(names)}, got {type(result).__name__}")
    checks.check_index("t", t, len(full["weights"]), "a position of the full pass")
    if len(step["weights"]) != t + 1:
        raise ValueError(f"step must be attention_step's result at position t = {t}, with {t + 1} "
                         f"weights, got {len(step['weights'])}")


def what_a_cache_gets_wrong(params, x, mask):
    """The rows a cache gives for x (T, d_model) unlike the full pass in mode mask, and how far."""
    full = attention_forward(params, x, mask)
    given = steps(params, x)
    errors = [row_errors(step, full, t) for t, step in enumerate(given)]
    return {"rows_a_cache_gets_wrong": [t for t, step in enumerate(given)
                                        if not matches_full_pass(step, full, t)],
            "weight_on_unseen_tokens": [unseen for unseen, _ in errors],
            "largest_out_difference": [difference for _, difference in errors]}


def cache_multiply_adds(T, d_model, d_head):
    """The multiply-adds of T positions one at a time with the cache: position t's q, k, v and
    out cost 4·d_model·d_head, its t + 1 scores and mixture d_head each; quadratic in T.

    >>> cache_multiply_adds(T=2, d_model=4, d_head=2)
    76
    """
    checks.check_sizes(T=T, d_model=d_model, d_head=d_head)
    return 4 * T * d_model * d_head + d_head * T * (T + 1)


def recompute_multiply_adds(T, d_model, d_head):
    """The multiply-adds of T positions one at a time without a cache: attention_forward on each
    prefix of n rows, 4·n·d_model·d_head and 2·n²·d_head (every pair, masked too); cubic in T.

    >>> recompute_multiply_adds(T=2, d_model=4, d_head=2)
    116
    """
    checks.check_sizes(T=T, d_model=d_model, d_head=d_head)
    return 2 * d_model * d_head * T * (T + 1) + d_head * T * (T + 1) * (2 * T + 1) // 3


def kv_trace(sentence, tokens, params, x):
    """What kv-cache-trace.json records: each step, and what a cache gets wrong in each mode."""
    full = attention_forward(params, x)
    return {"sentence": sentence, "tokens": tokens,
            "steps": [{"position": t, "token": token, "weights": rounded(step["weights"], DIGITS),
                       "equals_the_full_pass": matches_full_pass(step, full, t)}
                      for t, (token, step) in enumerate(zip(tokens, steps(params, x)))],
            "why_only_causal": {mask: rounded(what_a_cache_gets_wrong(params, x, mask), DIGITS)
                                for mask in MASK_MODES}}


# ---- attention_step's door, and the seal of its cache kv ----------------------------------------

_FRESH_KV = "{'k': [], 'v': []}"


class _Seal:
    """attention_step's own copy of each key and value row (made once, with the row) and of the
    params (at the first step), which the next step compares kv with (== checks a pointer per number
    while nothing changed). A new seal each step: a copy of kv taken between steps can go on."""

    def __init__(self, weights, k, v):
        self.weights, self.k, self.v = weights, k, v

    def __repr__(self):
        return "<seal: attention_step's copy of the rows and params, to compare kv with>"


def _check_step(params, x_t, kv):
    """attention_step's door, which returns kv's seal (a fresh one for an empty kv): kv empty or as
    the last step left it, params that fit, x_t one row of d_model finite numbers."""
    seal = _check_kv(kv, params)
    checks.check_positions(len(kv["k"]) + 1)
    d_model = len(params["Wq"])
    if checks.plain_matrix([x_t], d_model):
        return seal
    if type(x_t) is not list or any(isinstance(value, list) for value in x_t):
        got = f"a {checks.shape_text(x_t)} matrix" if type(x_t) is list else type(x_t).__name__
        raise TypeError(f"x_t must be one input row, a list of {d_model} numbers, got {got}: "
                        f"pass x[t], not x")
    if len(x_t) != d_model:
        raise ValueError(f"x_t must have {d_model} numbers (one input row), got {len(x_t)}")
    for j, value in enumerate(x_t):
        checks.check_number(f"x_t[{j}]", value)
    return seal


def _check_kv(kv, params):
    """kv's seal; raise unless kv is empty and params fit, or sealed unchanged for these params."""
    if type(kv) is not dict:
        raise TypeError(f"kv must be a dict of keys and values, {_FRESH_KV} at the start, got "
                        f"{type(kv).__name__}")
    if missing := [name for name in ("k", "v") if name not in kv]:
        raise ValueError(f"kv must have 'k' and 'v', {_FRESH_KV} at the start; it has no "
                         f"{', '.join(missing)}")
    for name in ("k", "v"):
        if type(kv[name]) is not list:
            raise TypeError(f"kv[{name!r}] must be a list of rows, got {type(kv[name]).__name__}")
    if not kv["k"] and not kv["v"]:     # an empty cache is the right start for any params
        if "seal" in kv:                # one with a seal had its rows removed, or is bogus
            raise ValueError(f"kv holds a seal but no keys or values: start from {_FRESH_KV}, "
                             f"without a seal")
        checks.check_params(params)
        return _Seal([[list(row) for row in W] for W in checks.weights_of(params)], [], [])
    seal = kv.get("seal")
    if not isinstance(seal, _Seal):
        raise ValueError(f"kv holds keys or values but no seal: attention_step did not build it; "
                         f"start from {_FRESH_KV}")
    if type(params) is not dict or checks.weights_of(params) != seal.weights:
        checks.check_params(params)     # a bad matrix is named first
        raise ValueError(f"kv was built by attention_step for other params (or params were "
                         f"changed since): start again from {_FRESH_KV}")
    if kv["k"] != seal.k or kv["v"] != seal.v:
        raise ValueError(f"kv is not as attention_step left it: a key or value was changed, "
                         f"added or removed since; start again from {_FRESH_KV}")
    return seal

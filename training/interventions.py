"""Which part of the trained layer gave the answer, at the question's row of the one-layer model:
weights = softmax(q[T−1]·kᵀ / √d_head) (1, T), mixed = weights·v, logits = mixed·Wo·U; of
the two-layer model's layer 2 (layer 1 given), the same of x1: logits = (x1[T−1] + mixed·Wo2)·U.

intervene removes the question's connection to sources (their scores −∞, the rest renormalised)
or zeroes one source's value; patch puts the clean story's q, k or v of one position, or its mixed
row, into the corrupted run and gives the share of the logit difference d (the clean answer's
minus the corrupted answer's) restored, (d − d_corrupted) / (d_clean − d_corrupted), or
"unchanged" when no bit of the logits moved; evidence is what interventions-run.json records.
What it leaves out: patching paths, and layer 1 of the two-layer model.
"""

import re

from attention import add, unchecked
from core.masked import attention_core
from common.checks import said
from common.golden import rounded
from common.views import heatmaps_svg, numbered_labels, panel, text_table, token_labels
from training.given_layer import WEIGHTS as TWO_LAYER_WEIGHTS
from training.model import answer_of, check_model, embed
from training.stories import COLOURS, encode_question, question, story_ids
from training.two_layers import forward as two_layer_forward

# the recorded model's own products, its weights checked at its door (check_model): unchecked
matmul = unchecked.matmul

PATCHED = ("q", "k", "v")
RESTORES = 0.9          # the claim: the colour's value restores at least this share
MOVES = 0.1             # and no other position's value moves it by more than this


class OneAnswer(ValueError):
    """Two stories given to patch that the model answers alike: there is nothing to restore."""


def _checked(model):
    """check_model of either model."""
    check_model(model, *[TWO_LAYER_WEIGHTS] * (type(model) is dict and model.get("layers") == 2))


def projections(params, ids, rows):
    """q, k and v (T, d_head) of a prompt; rows, a dict kept across prompts of one model, holds
    each (token, place) projected (a row of a product depends on its row of x alone). Of two
    layers: layer 2's, of x1, whose row i reads the tokens before i, and "stream": x1[T−1]."""
    if "Wq2" in params:
        x1 = two_layer_forward(params, ids)["x1"]
        return {"stream": x1[-1], **{name: matmul(x1, params[f"W{name}2"]) for name in "qkv"}}
    for i, (t, x_i) in enumerate(zip(ids, embed(params, ids))):
        if (t, i) not in rows:
            rows[t, i] = [matmul([x_i], params[name])[0] for name in ("Wq", "Wk", "Wv")]
    return {name: [rows[t, i][n] for i, t in enumerate(ids)] for n, name in enumerate("qkv")}


def question_row(params, vectors, allowed=None):
    """(row, logits): attention_core of the question's query against every key and value (allowed
    (T,) of bool: the sources it may read, all by default), and its logits (C,), as logits_of."""
    q, k, v = vectors["q"], vectors["k"], vectors["v"]
    row = attention_core(q[-1:], k, v, [allowed or [True] * len(k)])
    return row, logits_of(params, row["mixed"], vectors)


def logits_of(params, mixed, vectors):
    """The logits (C,) of a mixed row (1, d_head): mixed·Wo·U; of two layers, with the stream
    of vectors, (x1[T−1] + mixed·Wo2)·U."""
    if "Wo2" in params:
        return matmul(add([vectors["stream"]], matmul(mixed, params["Wo2"])), params["U"])[0]
    return matmul(matmul(mixed, params["Wo"]), params["U"])[0]


def _positions(positions, T, flag):
    """Positions counted from 1 made indices, or a ValueError naming flag and what came."""
    if isinstance(positions, (str, bytes)) or not hasattr(positions, "__iter__"):
        raise TypeError(f"{flag} takes positions as a list of ints, got "
                        f"{type(positions).__name__} {positions!r}")
    positions = list(positions)     # read once: a generator is checked and used alike
    for n in positions:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"{flag} takes positions as ints, got {type(n).__name__} {n!r}")
        if not 1 <= n <= T:
            raise ValueError(f"{flag} takes positions 1 to {T} (the story's tokens, counted "
                             f"from 1), got {said(n)}")
    return [n - 1 for n in positions]


def _encoded(tokenizer, text, which):
    """encode_question of one of patch's stories, its refusal naming which."""
    try:
        return encode_question(tokenizer, text)
    except (TypeError, ValueError) as e:
        raise type(e)(f"the {which} story: {e}") from None


def _answered(model, ids, row, logits):
    return {"answer": answer_of(logits), "tokens": [model["tokenizer"].vocab[t] for t in ids],
            "weights": row["weights"][0], "logits": logits}


def intervene(model, text, block=(), ablate=None):
    """(before, after), each {"answer", "tokens", "weights" (T,), "logits" (C,)}; block: positions
    from 1 the question no longer reads; ablate: one whose value becomes zeros. Raises as
    check_model and encode_question, and ValueError for a position outside 1…T or every one."""
    _checked(model)
    ids = encode_question(model["tokenizer"], text)
    T = len(ids)
    blocked = _positions(block, T, "block")
    ablated = _positions([] if ablate is None else [ablate], T, "ablate")
    if len(set(blocked)) == T:
        raise ValueError(f"block removes every source of the question ({T} of {T}): its "
                         f"softmax would have nothing to share out; keep at least one")
    params = model["params"]
    vectors = projections(params, ids, {})
    before = _answered(model, ids, *question_row(params, vectors))
    changed = dict(vectors, v=[[0.0] * len(row) if i in ablated else row
                               for i, row in enumerate(vectors["v"])])
    allowed = [i not in blocked for i in range(T)]
    return before, _answered(model, ids, *question_row(params, changed, allowed))


def patch(model, clean, corrupted, rows=None):
    """{"clean_answer", "corrupted_answer", "logit_difference": {"clean", "corrupted"},
    "positions": [{"position", "token", "q", "k", "v"}], "mixed"}, each a share or "unchanged".
    Raises as encode_question, ValueError for stories of different lengths, and OneAnswer."""
    _checked(model)
    rows = {} if rows is None else rows     # the two stories share every row they hold alike
    tokenizer, params = model["tokenizer"], model["params"]
    clean_ids = _encoded(tokenizer, clean, "clean")
    corrupted_ids = _encoded(tokenizer, corrupted, "corrupted")
    if len(clean_ids) != len(corrupted_ids):
        raise ValueError(f"patching puts each position of one story into the same position of "
                         f"the other: the clean story has {len(clean_ids)} tokens, the "
                         f"corrupted one {len(corrupted_ids)}")
    clean_vectors = projections(params, clean_ids, rows)
    corrupted_vectors = projections(params, corrupted_ids, rows)
    clean_row, clean_logits = question_row(params, clean_vectors)
    _, corrupted_logits = question_row(params, corrupted_vectors)
    clean_answer, corrupted_answer = answer_of(clean_logits), answer_of(corrupted_logits)
    a, b = (COLOURS.index(answer.strip()) for answer in (clean_answer, corrupted_answer))
    if a == b:
        raise OneAnswer(f"both stories are answered {clean_answer!r}: patching measures "
                         f"how much of the difference between two answers a vector restores")

    def difference(logits):
        return logits[a] - logits[b]

    def share(logits):
        if logits == corrupted_logits:
            return "unchanged"
        return ((difference(logits) - difference(corrupted_logits))
                / (difference(clean_logits) - difference(corrupted_logits)))

    positions = []
    for i, token in enumerate(corrupted_ids):
        found = {"position": i + 1, "token": tokenizer.vocab[token]}
        for name in PATCHED:
            if clean_vectors[name][i] == corrupted_vectors[name][i]:
                found[name] = "unchanged"       # the patched run would be the corrupted run
                continue
            patched = [clean_vectors[name][i] if n == i else row
                       for n, row in enumerate(corrupted_vectors[name])]
            found[name] = share(question_row(params, {**corrupted_vectors, name: patched})[1])
        positions.append(found)
    return {"clean_answer": clean_answer, "corrupted_answer": corrupted_answer,
            "logit_difference": {"clean": difference(clean_logits),
                                 "corrupted": difference(corrupted_logits)},
            "positions": positions,     # the clean mixed row in the corrupted run (its stream)
            "mixed": share(logits_of(params, clean_row["mixed"], corrupted_vectors))}


def colour_swapped(s, offset=1):
    """A generator's Story with its colour replaced in its text by the offset-th next colour of
    COLOURS that is neither its colour nor its distractor's: (clean question, corrupted question).

    >>> from training.stories import Story
    >>> colour_swapped(Story("mia has a red ball. the ball is red.", "red", "ball", None))
    ('mia has a red ball. the ball is', 'mia has a blue ball. the ball is')
    """
    others = [c for c in COLOURS[COLOURS.index(s.colour) + 1:] + COLOURS
              if c not in (s.colour, s.distractor)]
    clean = question(s)
    return clean, re.sub(rf"\b{s.colour}\b", others[offset - 1], clean, count=1)


# ---- the evidence the README quotes -------------------------------------------------------------

def colour_index(tokenizer, text, colour):
    """The index of the story's first colour word among the tokens the model reads."""
    return [tokenizer.vocab[t] for t in story_ids(tokenizer, text)].index(" " + colour)


def patching_evidence(model, test):
    """Each story of a held-out set patched against each of its colour_swapped: what the colour's
    value and key restore, the other values that moved, and the weights where it falls short."""
    found = {"pairs": 0, "refused": 0, "value_restores": 0, "value_least": None,
             "value_most": None, "key_largest": 0.0, "other_values_moved": 0,
             "other_value_largest": 0.0, "short_weight_most": None}
    for s in test:
        swaps = len([c for c in COLOURS if c not in (s.colour, s.distractor)])
        rows = {}       # the story's own rows, projected once for all its swaps
        for offset in range(1, swaps + 1):
            clean, corrupted = colour_swapped(s, offset)
            try:
                result = patch(model, clean, corrupted, rows)
            except OneAnswer:
                found["refused"] += 1
                continue
            found["pairs"] += 1
            at = colour_index(model["tokenizer"], clean, s.colour)
            value, key = result["positions"][at]["v"], result["positions"][at]["k"]
            found["value_restores"] += value >= RESTORES
            first = found["pairs"] == 1
            found["value_least"] = min(value, value if first else found["value_least"])
            found["value_most"] = max(value, value if first else found["value_most"])
            if key != "unchanged":
                found["key_largest"] = max(found["key_largest"], abs(key))
            others = [p["v"] for n, p in enumerate(result["positions"])
                      if n != at and p["v"] != "unchanged"]
            found["other_values_moved"] += bool(others)
            found["other_value_largest"] = max([found["other_value_largest"], *map(abs, others)])
            if value < RESTORES:
                least = min(intervene(model, text)[0]["weights"][at] for text in (clean, corrupted))
                found["short_weight_most"] = max(least, found["short_weight_most"] or 0.0)
    return found


def taken_apart(model, s):
    """(question, the first colour's position from 1, the run before, blocked there, ablated)."""
    text = question(s)
    at = colour_index(model["tokenizer"], text, s.colour) + 1
    before, blocked = intervene(model, text, block=[at])
    return text, at, before, blocked, intervene(model, text, ablate=at)[1]


def blocking_evidence(model, test):
    """For a held-out set with a distractor: the answers before and with the first colour
    blocked or its value ablated, and how often the distractor then weighs most."""
    found = {"stories": len(test), "colour": 0, "blocked_gives_distractor": 0,
             "blocked_gives_neither": 0, "blocked_most_on_distractor": 0,
             "ablated_gives_distractor": 0}
    for s in test:
        _, _, before, blocked, ablated = taken_apart(model, s)
        found["colour"] += before["answer"] == " " + s.colour
        found["blocked_gives_distractor"] += blocked["answer"] == " " + s.distractor
        found["blocked_gives_neither"] += blocked["answer"] not in (" " + s.colour,
                                                                    " " + s.distractor)
        weights = blocked["weights"]
        found["blocked_most_on_distractor"] += (max(range(len(weights)), key=weights.__getitem__)
                                                == blocked["tokens"].index(" " + s.distractor))
        found["ablated_gives_distractor"] += ablated["answer"] == " " + s.distractor
    return found


def both_swapped(s):
    """A story with a distractor, its two colours swapped: (clean question, corrupted question).

    >>> from training.stories import Story
    >>> both_swapped(Story("mia has a red ball. tom has a blue cup too. the ball is red.", "red",
    ...                    "ball", "blue"))
    ('mia has a red ball. tom has a blue cup too. the ball is', \
'mia has a blue ball. tom has a red cup too. the ball is')
    """
    clean = question(s)
    swap = {s.colour: s.distractor, s.distractor: s.colour}
    return clean, re.sub(rf"\b({s.colour}|{s.distractor})\b", lambda m: swap[m.group()], clean)


def example_evidence(model, s):
    """taken_apart's runs of one story, and its patching with one and with both colours swapped."""
    text, at, before, blocked, ablated = taken_apart(model, s)
    runs = {name: {key: run[key] for key in ("answer", "weights")}
            for name, run in (("before", before), ("blocked", blocked), ("ablated", ablated))}
    swaps = {name: {"clean": clean, "corrupted": corrupted,
                    "result": patch(model, clean, corrupted)}
             for name, (clean, corrupted) in (("colour_swapped", colour_swapped(s)),
                                              ("both_swapped", both_swapped(s)))}
    return {"story": text, "colour": s.colour, "distractor": s.distractor,
            "colour_position": at, **runs, **swaps}


def evidence(model, tests):
    """patching_evidence of every held-out set ({kind: stories}), blocking_evidence of those
    with distractors and example_evidence of the figure's story, rounded to 4 decimals."""
    check_model(model)
    example = min(tests["distractor early"], key=lambda s: len(question(s)))
    found = {"patching": {kind: patching_evidence(model, test) for kind, test in tests.items()},
             "blocking": {kind: blocking_evidence(model, test) for kind, test in tests.items()
                          if all(s.distractor for s in test)},
             "example": example_evidence(model, example)}
    return rounded(found, 4)


# ---- views for a person -------------------------------------------------------------------------

def _share_text(share):
    return share if isinstance(share, str) else f"{share:.4f}"


def patch_table(result):
    """The patching result as aligned text: a row per position, a column per q, k, v."""
    rows = [[_share_text(p[name]) for name in PATCHED] for p in result["positions"]]
    difference = result["logit_difference"]
    return (f"clean answer {result['clean_answer']!r}, corrupted answer "
            f"{result['corrupted_answer']!r}\nlogit difference (clean answer − corrupted answer): "
            f"{difference['clean']:.4f} in the clean run, {difference['corrupted']:.4f} in the "
            f"corrupted\nthe share of it each clean vector restores in the corrupted run (1: all, "
            f"0: none; rows: the corrupted story's tokens):\n"
            + text_table(numbered_labels([p["token"] for p in result["positions"]]),
                         list(PATCHED), rows)
            + f"\nthe question's mixed row: {_share_text(result['mixed'])}\n")


def patch_svg(result):
    """The patching result as a heatmap: positions × q, k, v, hatched where nothing moved."""
    labels = token_labels([p["token"] for p in result["positions"]])
    shares = [[0.0 if isinstance(p[name], str) else p[name] for name in PATCHED]
              for p in result["positions"]]
    unchanged = [[isinstance(p[name], str) for name in PATCHED] for p in result["positions"]]
    return heatmaps_svg(
        [panel("activation patching", labels, list(PATCHED), shares, unchanged,
               subtitle=f"clean {result['clean_answer'].strip()}, corrupted "
                        f"{result['corrupted_answer'].strip()}: the share restored",
               axes=("columns: the clean vector put in →", "rows: the position ↑"))],
        note=f"Each cell: the clean run's q, k or v of one position put into the corrupted run, "
             f"as the share of the logit difference it restores (1: all of it). The question's "
             f"mixed row restores {_share_text(result['mixed'])}.",
        hatched_legend="unchanged: not one bit of the logits moved")


def intervention_table(before, after, marked, whose="the question's"):
    """The answer and whose weights (the question's, layer 2's) before → after; marked {i: what}."""
    rows = [[b, a] for b, a in zip(before["weights"], after["weights"])]
    return (f"answer: {before['answer']!r} → {after['answer']!r}\n"
            f"{whose} weight on each token, before → after:\n"
            + text_table(numbered_labels(before["tokens"]), ["before", "after"], rows,
                         marks=marked) + "\n")

"""Two layers with layer 1 given: two_layers.py's model, its layer 1 SET BY HAND as a previous-token
head (only its value and output learned), trained on stories that ask about any coloured thing:
STORIES of them in batches of BATCH, by Adam on each batch's mean loss_and_grads_fast. run(seed)
gives what two-layer-run.json keeps of a seed; --check trains its first PREFIX batches again
(train_model(seed, batches=PREFIX)["prefix"]).
What it leaves out: learning layer 1's weights, layer norm, an MLP.
"""

import hashlib
import json
import math
import os
import random
import time
from math import fsum
from operator import mul

from attention import add, unchecked
from common import checks
from common.safe_io import read_json, read_text
from training import model as one_layer, train as one_layer_train
from training.adam import Adam
from training.model import embed, embedding_grads
from training.recorded_model import check_weights
from training.stories import (COLOURS, TWO_LAYER_SETS, Story, cannot_stories, made_up_words,
                              question, stories, training_tokenizer, two_layer_story)
from training.two_layers import D_HEAD, D_MODEL, forward, init_params, previous_tokens

# the model's own products, of weights its door checked and Adam keeps finite: unchecked
matmul, softmax_row, transpose = unchecked.matmul, unchecked.softmax_row, unchecked.transpose

STORIES = 80_000         # its PyTorch twin: 40,000 fall short on the second object, 80,000 not
BATCH = 8
LEARNING_RATE = 0.005    # at 0.01, or in batches of 32 without the decay, the probe fell short
LOSS_EVERY = 25          # batches between two recorded mean losses: 200 stories
CURVE_EVERY = 4_000      # stories between two scores of the second object, as training goes
PREFIX = 25              # batches --check trains again: the first LOSS_EVERY
SEEDS = (1, 2, 3)
WEIGHTS = ("E", "U", "Wv1", "Wo1", "Wq2", "Wk2", "Wv2", "Wo2")
GIVEN = ("layer 1 is given, not learned: each row averages the two tokens before it; its value "
         "and output are learned, and so is everything else")


def held_out(seed):
    """{set: its stories}: every set of HELD_OUT, then those of TWO_LAYER_SETS, written_stories'.
    Raises TypeError unless seed is an int."""
    checks.check_seed(seed)
    drawn = stories(seed)
    return {**drawn[1], **cannot_stories(seed, drawn, TWO_LAYER_SETS), **written_stories()}


def written_stories():
    """{"written: KIND object": …} of written-KIND.txt (KIND second, third): stories written outside
    the project, one a line, each about the last of two (three) things: "… the THING is COLOUR."."""
    found = {}
    for kind in ("second", "third"):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"written-{kind}.txt")
        texts = [line.strip() for line in read_text(path).splitlines() if line.strip()]
        found[f"written: {kind} object"] = [Story(t, t.split()[-1][:-1], t.split()[-3], None)
                                            for t in texts]
    return found


def training_pairs(seed, count, tests):
    """count (ids, colour index) pairs of two_layer_story, none of them a story of tests."""
    rng, seen = random.Random(f"two layers {seed}"), {s.text for t in tests.values() for s in t}
    tokenizer, made_up, pairs = training_tokenizer(), made_up_words(), []
    while len(pairs) < count:
        s = two_layer_story(rng, made_up)
        if s.text not in seen:
            pairs.append((tokenizer.encode(question(s)), COLOURS.index(s.colour)))
    return pairs


def vec(v, m):
    """The row vector v (n,) times the matrix m (n, p): (p,)."""
    return matmul([v], m)[0]


def outer(u, v):
    """uᵀ·v of two row vectors: (len(u), len(v))."""
    return [[a * b for b in v] for a in u]


def combine(terms):
    """Σ c·u over the (c, u) pairs of terms, u row vectors of one width: (width,)."""
    return [fsum(column) for column in zip(*([c * x for x in u] for c, u in terms))]


def loss_and_grads_fast(params, prompt, answer):
    """two_layers.loss_and_grads, layer 1 given, to rounding, with no (T, d_head) matrix made:
    x1 = x0 + a·Wv1·Wo1 (a_i the mean of x0 over previous_tokens(i)), and the question's row
    reads each x1_j only through dot products with vectors (r, p) and weighted sums."""
    U, Wv1, Wo1, Wq2, Wk2, Wv2, Wo2 = (params[n] for n in WEIGHTS[1:])    # all but E
    x0 = embed(params, prompt)
    a = [[fsum(column) / len(previous_tokens(i)) for column in
          zip(*(x0[j] for j in previous_tokens(i)))] for i in range(len(x0))]   # a_i: their mean

    def through_layer_1(v):     # (v·Wo1ᵀ, M·v), M = Wv1·Wo1: x1_j·v = x0_j·v + a_j·(M·v)
        v_mixed = vec(v, transpose(Wo1))
        return v_mixed, vec(v_mixed, transpose(Wv1))

    def dots(v, m_v):           # x1_j·v for every j
        return [fsum(map(mul, x, v)) + fsum(map(mul, a_j, m_v)) for x, a_j in zip(x0, a)]

    def weighted(c):            # Σ_j c_j·x1_j, and Σ_j c_j·a_j
        a_sum = combine(zip(c, a))
        return add([combine(zip(c, x0))], [vec(vec(a_sum, Wv1), Wo1)])[0], a_sum

    x1_last = add([x0[-1]], [vec(vec(a[-1], Wv1), Wo1)])[0]
    q = vec(x1_last, Wq2)
    scale = 1 / math.sqrt(len(q))
    r = [scale * g for g in vec(q, transpose(Wk2))]              # scores_j = x1_j·r
    r_mixed, r0 = through_layer_1(r)
    weights = softmax_row(dots(r, r0))
    x_mixed, a_mixed = weighted(weights)                         # Σ_j w_j·x1_j
    mixed = vec(x_mixed, Wv2)
    stream = add([x1_last], [vec(mixed, Wo2)])[0]
    probs = softmax_row(vec(stream, U))
    d_logits = list(probs)
    d_logits[answer] -= 1.0
    grads = {"U": outer(stream, d_logits)}
    d_stream = vec(d_logits, transpose(U))
    grads["Wo2"] = outer(mixed, d_stream)
    d_mixed = vec(d_stream, transpose(Wo2))
    grads["Wv2"] = outer(x_mixed, d_mixed)
    p = vec(d_mixed, transpose(Wv2))                             # d_weights_j = x1_j·p
    p_mixed, p0 = through_layer_1(p)
    d_weights = dots(p, p0)
    w_dw = fsum(map(mul, weights, d_weights))
    d_scores = [w * (dw - w_dw) for w, dw in zip(weights, d_weights)]
    x_scored, a_scored = weighted(d_scores)                      # Σ_j d_scores_j·x1_j
    d_q = [scale * g for g in vec(x_scored, Wk2)]
    grads["Wk2"] = outer(x_scored, [scale * g for g in q])
    grads["Wq2"] = outer(x1_last, d_q)
    e = add([d_stream], [vec(d_q, transpose(Wq2))])[0]           # the question's own row
    # d_x1_j = w_j·p + d_scores_j·r, and e at the question; layer 1: out = a·Wv1·Wo1
    a_rows = [a_mixed, a_scored, a[-1]]     # three rows reach Wv1 and Wo1: Σ of their outers
    grads["Wo1"] = matmul(transpose([vec(a_c, Wv1) for a_c in a_rows]), [p, r, e])
    e_mixed, e0 = through_layer_1(e)
    grads["Wv1"] = matmul(transpose(a_rows), [p_mixed, r_mixed, e_mixed])
    d_a, d_x0 = ([[w * g + ds * h for g, h in zip(u, v)] for w, ds in zip(weights, d_scores)]
                 for u, v in ((p0, r0), (p, r)))       # two terms: + is their fsum
    d_a[-1], d_x0[-1] = (combine(((weights[-1], u), (d_scores[-1], v), (1.0, z)))
                         for u, v, z in ((p0, r0, e0), (p, r, e)))   # at T−1 e too: fsum
    for i in range(len(x0)):
        n = len(previous_tokens(i))
        for j in previous_tokens(i):
            d_x0[j] = [d + g / n for d, g in zip(d_x0[j], d_a[i])]
    grads["E"] = embedding_grads(prompt, d_x0)
    return -math.log(probs[answer]), grads


def batch_grads(params, batch, loss_and_grads=loss_and_grads_fast):
    """(mean loss, mean gradient) of the batch's (ids, colour) pairs; E's as {token id: row}."""
    losses, total = [], {}
    for ids, colour in batch:
        loss, grads = loss_and_grads(params, ids, colour)
        losses.append(loss)
        for name, grad in grads.items():
            if name == "E":
                rows = total.setdefault("E", {})
                for t, row in grad.items():
                    rows[t] = [a + g for a, g in zip(rows.get(t, [0.0] * len(row)), row)]
            else:
                total[name] = (grad if name not in total else
                               [[a + g for a, g in zip(*rows)] for rows in zip(total[name], grad)])
    mean = {name: ({t: [g / len(batch) for g in row] for t, row in grad.items()}
                   if name == "E" else [[g / len(batch) for g in row] for row in grad])
            for name, grad in total.items()}
    return fsum(losses) / len(losses), mean


def train_model(seed, count=None, batches=None, progress=None, watch=(), way=None):
    """The model trained on count stories of seed (by default STORIES), or their first batches
    alone; progress(stories, mean_loss) at each loss recorded; every CURVE_EVERY stories, how many
    of the stories watch it answers, in "curve". way: from_scratch, trained instead (its
    init_params, loss_and_grads, RATES, STORIES, curve_point). Raises TypeError unless seed is an
    int, ValueError unless count is an int of at least BATCH and batches None or an int of at least
    1."""
    checks.check_seed(seed)
    count = (way.STORIES if way else STORIES) if count is None else count
    if type(count) is not int or count < BATCH or batches is not None and (
            type(batches) is not int or batches < 1):
        raise ValueError(f"train_model needs count an int of at least {BATCH} and batches None or "
                         f"an int of at least 1, got count={count!r}, batches={batches!r}")
    steps = count // BATCH
    pairs = training_pairs(seed, (batches or steps) * BATCH, held_out(seed))   # the first ones
    tokenizer = training_tokenizer()
    params = (way.init_params(len(tokenizer.vocab), seed) if way else
              init_params(len(tokenizer.vocab), seed, D_MODEL, D_HEAD))
    adam = Adam(params, steps, LEARNING_RATE, way.RATES if way else {})
    losses, recent, prefix_weights, curve = [], [], None, []   # under PREFIX batches: no weights
    model = {"tokenizer": tokenizer, "params": params, "losses": losses, "layers": 2,
             "curve": curve, "stories": count}
    for step in range(1, (batches or steps) + 1):
        loss, grads = batch_grads(params, pairs[(step - 1) * BATCH:step * BATCH],
                                  *([way.loss_and_grads] if way else []))
        adam.step(params, grads)
        recent.append(loss)
        if step == PREFIX:      # sha256 of each weight's shortest exact text: equal, same bits
            prefix_weights = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
        if step % LOSS_EVERY == 0:
            losses.append({"stories": step * BATCH, "mean_loss": round(fsum(recent) / LOSS_EVERY,
                                                                        4)})
            recent = []
            if progress:
                progress(step * BATCH, losses[-1]["mean_loss"])
        if watch and step * BATCH % CURVE_EVERY == 0:
            curve.append({"stories": step * BATCH, **(way.curve_point(model, watch) if way else
                                                       {"correct": correct(model, {0: watch})[0]})})
    return {**model, "prefix": {"seed": seed, "stories": PREFIX * BATCH, "losses": losses[:1],
                                "weights": prefix_weights}}


def model_record(model, seed):
    """The JSON-ready record of train_model(seed)'s weights (the tokenizer: training_tokenizer)."""
    return {"seed": seed, "layers": 2, "params": model["params"]}


def read_model(path):
    """The model the record at path holds, as train_model returns it. Raises ValueError naming
    what is wrong unless it holds every weight, each a matrix of numbers of its shape: E (V,
    d_model), U (d_model, C), Wv1, Wq2, Wk2, Wv2 (d_model, d_head), Wo1, Wo2 (d_head, d_model)."""
    then = "run train_attention.py --layers 2 --write"
    params = read_json(path, "the two-layer model", then=then).get("params")
    V = len(training_tokenizer().vocab)

    def expected(shapes):
        d, h1, h2 = shapes["E"][1], shapes["Wv1"][1], shapes["Wq2"][1]   # layer 1's head, 2's
        return {"E": (V, d), "U": (d, len(COLOURS)), "Wv1": (d, h1), "Wo1": (h1, d),
                "Wq2": (d, h2), "Wk2": (d, h2), "Wv2": (d, h2), "Wo2": (h2, d)}

    check_weights(params, WEIGHTS, V, expected,
                  lambda what: ValueError(f"two-layer-model.json {what}: {then}"))
    return {"tokenizer": training_tokenizer(), "params": params, "layers": 2}


def predict(model, text):
    """(answer, weights) as model.predict gives them, the weights layer 2's."""
    return one_layer.predict(model, text, forward, WEIGHTS)


def correct(model, tests, answer=predict):
    """{set: how many of its stories model answers with their colour}."""
    return {kind: sum(answer(model, question(s))[0] == " " + s.colour for s in test)
            for kind, test in tests.items()}


def run(seed, count=None, progress=None, way=None):
    """(record, model): the correct answers on every set of held_out, beside one layer's; or, with
    way (from_scratch), the way's answers and layer 1's weights at the end (way.record)."""
    tests, start = held_out(seed), time.perf_counter()
    model = train_model(seed, count, progress=progress, watch=tests["second object"], way=way)
    seconds = round(time.perf_counter() - start)
    found = way.record(model, tests) if way else {
        "two layers": correct(model, tests),
        "one layer": correct(one_layer_train.train_model(seed), tests, one_layer.predict)}
    return {"seed": seed, "stories": model["stories"], "seconds": seconds, **found,
            "losses": model["losses"], "second_object_curve": model["curve"]}, model


"""Both layers learned from scratch: two_layers.py's model with two changes that let training alone
find the circuit given_layer.py sets by hand. For a prompt of T tokens:

    x0     = E[ids] + position(0…T−1)                  (T, d_model), token + place
    w1[i]  = softmax over the PLACES j before i of B1[i − j − 1]   layer 1's weights, from place
    x1     = x0 + w1·(x0·Wv1)·Wo1                      (T, d_model), no Wq1 or Wk1
    next   = x1[0…T−2]·A                               (T−1, N): row i's scores for the class
                                                       (of NEXT) of token i + 1
    out2   = layer 2's question row on x1              (d_model), as given_layer's
    logits = (x1[T−1] + out2)·U
    loss   = −log softmax(logits)[colour] + the mean over i of −log softmax(next[i])[its class]

Row 0 of w1 reads place 0 itself, the only place it may read. B1 starts at zero (the places before
alike) and learns at RATES["B1"]; the rest as given_layer's, with A. The next-token loss rewards
layer 1 for reading the tokens before each row before layer 2 has any use for them.
"""

import math
import random
from functools import lru_cache
from math import fsum
from operator import mul

from attention import add
from training import given_layer, model as one_layer
from training.given_layer import combine, matmul, outer, softmax_row, transpose, vec  # unchecked
from training.model import INIT_SCALE, embed, embedding_grads
from training.stories import COLOURS, training_tokenizer
from training.two_layers import D_HEAD, D_MODEL, init_params as given_params

PLACES = 4               # layer 1 reads the four tokens before each row, weighed by B1
NEXT = COLOURS + ["the", ".", "is", ",", "a", "anything else"]   # the classes next scores
RATES = {"B1": 0.1}      # B1's learning rate: at given_layer's 0.005 it barely moves
STORIES = 100_000        # the second object sits near chance for tens of thousands
WEIGHTS = ("E", "U", "B1", "Wv1", "Wo1", "A", "Wq2", "Wk2", "Wv2", "Wo2")
LEARNED = ("both layers learned from scratch: layer 1's weights from place alone, over the "
           f"{PLACES} tokens before each row, and a next-token loss read from layer 1's output")


def init_params(vocab_size, seed, d_model=D_MODEL, d_head=D_HEAD):
    """two_layers.init_params(…), then B1 (1, PLACES) at zero and A (d_model, N) from
    uniform(−INIT_SCALE, INIT_SCALE), of its own draws."""
    rng = random.Random(f"aux {seed}")
    return {**given_params(vocab_size, seed, d_model, d_head), "B1": [[0.0] * PLACES],
            "A": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in NEXT] for _ in range(d_model)]}


@lru_cache(maxsize=1)
def next_classes():
    """The class of NEXT of every token of training_tokenizer(): its word, else "anything else"."""
    words = [t.strip() for t in training_tokenizer().vocab]
    return [NEXT.index(w) if w in NEXT else len(NEXT) - 1 for w in words]


def layer_1_row(bias, i):
    """(places, weights): the places row i of layer 1 reads, and its weight on each."""
    if i == 0:
        return [0], [1.0]
    places = range(max(0, i - PLACES), i)
    return list(places), softmax_row([bias[i - j - 1] for j in places])


def forward(params, ids):
    """Every intermediate on a prompt: x0; rows1 (layer_1_row of each row), v1 = x0·Wv1, mixed1
    (row i: Σ_j w1[i][j]·v1_j), x1 and next; layer 2's q (d_head,) and r (d_model,), its scores_j
    = x1_j·r, row (its weights (1, T)), x_mixed = Σ_j weights_j·x1_j, mixed = x_mixed·Wv2; stream
    (d_model,); and the logits (C,)."""
    x0 = embed(params, ids)
    rows1 = [layer_1_row(params["B1"][0], i) for i in range(len(ids))]
    v1 = matmul(x0, params["Wv1"])
    mixed1 = [combine(zip(w, (v1[j] for j in places))) for places, w in rows1]
    x1 = add(x0, matmul(mixed1, params["Wo1"]))
    q = vec(x1[-1], params["Wq2"])                        # layer 2's query, at the question only
    r = [g / math.sqrt(len(q)) for g in vec(q, transpose(params["Wk2"]))]   # = Wk2·q / √d_head
    weights = softmax_row([fsum(map(mul, x, r)) for x in x1])
    x_mixed = combine(zip(weights, x1))
    mixed = vec(x_mixed, params["Wv2"])
    stream = add([x1[-1]], [vec(mixed, params["Wo2"])])[0]
    return {"x0": x0, "rows1": rows1, "v1": v1, "mixed1": mixed1, "x1": x1,
            "next": matmul(x1[:-1], params["A"]), "q": q, "r": r, "row": {"weights": [weights]},
            "x_mixed": x_mixed, "mixed": mixed, "stream": stream,
            "logits": vec(stream, params["U"])}


def loss_and_grads(params, prompt, answer):
    """The loss on one prompt of 2 tokens or more (a story and its question), and its gradient
    for every parameter (E's as {token id: row})."""
    fw = forward(params, prompt)
    x1, weights, classes = fw["x1"], fw["row"]["weights"][0], next_classes()
    probs = softmax_row(fw["logits"])
    d_logits = list(probs)                                  # softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = stream·U, stream = x1[T−1] + mixed·Wo2
    grads = {"U": outer(fw["stream"], d_logits)}
    d_stream = vec(d_logits, transpose(params["U"]))
    grads["Wo2"] = outer(fw["mixed"], d_stream)
    d_mixed = vec(d_stream, transpose(params["Wo2"]))
    # forward: mixed = x_mixed·Wv2, x_mixed = Σ_j weights_j·x1_j
    grads["Wv2"] = outer(fw["x_mixed"], d_mixed)
    p = vec(d_mixed, transpose(params["Wv2"]))              # d_weights_j = x1_j·p
    d_weights = [fsum(map(mul, x, p)) for x in x1]
    w_dw = fsum(map(mul, weights, d_weights))
    d_scores = [w * (dw - w_dw) for w, dw in zip(weights, d_weights)]
    # forward: scores_j = x1_j·r, r = Wk2·q / √d_head, q = x1[T−1]·Wq2
    x_scored = combine(zip(d_scores, x1))                   # Σ_j d_scores_j·x1_j
    scale = 1 / math.sqrt(len(fw["q"]))
    d_q = [scale * g for g in vec(x_scored, params["Wk2"])]
    grads["Wk2"], grads["Wq2"] = outer(x_scored, [scale * g for g in fw["q"]]), outer(x1[-1], d_q)
    d_x1 = [[w * a + ds * b for a, b in zip(p, fw["r"])] for w, ds in zip(weights, d_scores)]
    d_x1[-1] = combine(((1.0, d_x1[-1]), (1.0, d_stream),
                        (1.0, vec(d_q, transpose(params["Wq2"])))))
    # forward: next = x1[0…T−2]·A, its loss the mean over its T − 1 rows
    n, next_losses, d_next = len(fw["next"]), [], []
    for row, token in zip(fw["next"], prompt[1:]):
        p_next = softmax_row(row)
        next_losses.append(-math.log(p_next[classes[token]]))
        p_next[classes[token]] -= 1.0
        d_next.append([g / n for g in p_next])
    grads["A"] = matmul(transpose(x1[:-1]), d_next)
    d_x1[:-1] = add(d_x1[:-1], matmul(d_next, transpose(params["A"])))
    # forward: x1 = x0 + mixed1·Wo1
    grads["Wo1"] = matmul(transpose(fw["mixed1"]), d_x1)
    d_mixed1 = matmul(d_x1, transpose(params["Wo1"]))
    # forward: mixed1_i = Σ_j w1[i][j]·v1_j, w1[i] the softmax of B1 over its places
    d_v1 = [[0.0] * len(d_mixed1[0]) for _ in prompt]
    d_bias = [[] for _ in params["B1"][0]]
    for i, (places, w) in enumerate(fw["rows1"]):
        for j, w_j in zip(places, w):
            d_v1[j] = [d + w_j * g for d, g in zip(d_v1[j], d_mixed1[i])]
        if i:
            d_w = [fsum(map(mul, d_mixed1[i], fw["v1"][j])) for j in places]
            w_dw = fsum(map(mul, w, d_w))
            for j, w_j, dw in zip(places, w, d_w):
                d_bias[i - j - 1].append(w_j * (dw - w_dw))
    grads["B1"] = [[fsum(terms) for terms in d_bias]]
    # forward: v1 = x0·Wv1
    grads["Wv1"] = matmul(transpose(fw["x0"]), d_v1)
    # forward: x0_i = E[prompt[i]] + position(i)
    grads["E"] = embedding_grads(prompt, add(d_x1, matmul(d_v1, transpose(params["Wv1"]))))
    return -math.log(probs[answer]) + fsum(next_losses) / n, grads


def predict(model, text):
    """(answer, weights) as model.predict gives them, the weights layer 2's."""
    return one_layer.predict(model, text, forward, WEIGHTS)


def layer_1_weights(params):
    """Layer 1's weights on the tokens one, two, … PLACES back, at a row with PLACES before it."""
    return layer_1_row(params["B1"][0], PLACES)[1][::-1]


def curve_point(model, watch):
    """What the curve keeps as training goes: how many of the stories watch model answers, and
    layer 1's weights one to PLACES back."""
    return {"correct": given_layer.correct(model, {0: watch}, predict)[0],
            "layer_1_weights": [round(w, 4) for w in layer_1_weights(model["params"])]}


def record(model, tests):
    """What from-scratch-run.json keeps of a seed beside given_layer.run's: how many of each set
    of tests model answers, and layer 1's weights at the end."""
    return {"from scratch": given_layer.correct(model, tests, predict),
            "layer_1_weights": [round(w, 4) for w in layer_1_weights(model["params"])]}

"""Two layers joined by a residual stream, which can answer the colour of the thing the question
names, where one layer answers the first colour. For a prompt of T tokens:

    x0     = E[ids] + position(0…T−1)                              (T, d_model), token + place
    x1     = x0 + previous_token_head(params, x0)["out"]          (T, d_model), the residual stream
    out2   = the second layer's question row on x1                 (1, d_model)
    logits = (x1[T−1] + out2)·U                                    (C,), a score for each colour
    loss   = −log softmax(logits)[colour]

E starts at random, so that objects differ before training. Layer 1 is GIVEN: a previous-token
head, row i the mean of places max(i−2, 0) and max(i−1, 0), its Wv1 and Wo1 learned.
"""

import math
import random
from math import fsum

from attention import add, init_attention, matmul, softmax_row, transpose
from common import checks
from training.model import (INIT_SCALE, embed, embedding_grads, layer, question_row_backward,
                            question_row_forward)
from training.stories import COLOURS

LAYERS = (1, 2)                          # layer n's weights are Wq{n}, Wk{n}, Wv{n}, Wo{n}
D_MODEL, D_HEAD = 32, 16                 # what train.py trains with layer 1 given


def init_params(vocab_size, seed, d_model, d_head):
    """E (V, d_model) and U (d_model, C) from uniform(−INIT_SCALE, INIT_SCALE), and layer n's Wq …
    Wo from init_attention of the seed 2·seed + n − 1, but Wq1 and Wk1 (layer 1 is given)."""
    checks.check_seed(seed)
    rng = random.Random(seed)
    params = {"E": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in range(d_model)]
                    for _ in range(vocab_size)],
              "U": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in COLOURS]
                    for _ in range(d_model)]}
    for n in LAYERS:
        for name, matrix in init_attention(d_model, d_head, 2 * seed + n - 1).items():
            if not (n == 1 and name in ("Wq", "Wk")):
                params[f"{name}{n}"] = matrix
    return params


def previous_tokens(i):
    """The places row i of the given layer 1 reads, each with weight 1/len: the two before it
    (place 1 the one, and place 0 itself, the only place it may read)."""
    return [i - 2, i - 1] if i >= 2 else [0]


def given_weights(T):
    """The given layer 1's weights (T, T): row i's 1/len on each of previous_tokens(i).

    >>> given_weights(3)
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    """
    return [[1 / len(previous_tokens(i)) if j in previous_tokens(i) else 0.0 for j in range(T)]
            for i in range(T)]


def previous_token_head(params, x0):
    """The given layer 1 on x0 (T, d_model): v = x0·Wv1 (T, d_head), mixed (T, d_head), row i the
    mean of v over previous_tokens(i) (given_weights·v), and out = mixed·Wo1 (T, d_model)."""
    v = matmul(x0, params["Wv1"])
    mixed = [[fsum(column) / len(previous_tokens(i))
              for column in zip(*(v[j] for j in previous_tokens(i)))] for i in range(len(x0))]
    return {"v": v, "mixed": mixed, "out": matmul(mixed, params["Wo1"])}


def previous_token_head_backward(params, x0, first, d_out):
    """({"Wv", "Wo"} of layer 1, d_x0 (T, d_model)) from d_out (T, d_model): no query or key."""
    # forward: out = mixed·Wo1
    grads = {"Wo": matmul(transpose(first["mixed"]), d_out)}
    d_mixed = matmul(d_out, transpose(params["Wo1"]))
    # forward: mixed_i = the mean of v_j over previous_tokens(i)
    d_v = [[0.0] * len(d_mixed[0]) for _ in x0]
    for i, d_row in enumerate(d_mixed):
        n = len(previous_tokens(i))
        for j in previous_tokens(i):
            d_v[j] = [d + g / n for d, g in zip(d_v[j], d_row)]
    # forward: v = x0·Wv1
    grads["Wv"] = matmul(transpose(x0), d_v)
    return grads, matmul(d_v, transpose(params["Wv1"]))


def forward(params, ids):
    """Every intermediate on a prompt: x0, x1 (T, d_model); first, layer 1's on x0; row and out2
    (1, d_model), layer 2's question row on x1; stream (1, d_model); the logits (C,)."""
    x0 = embed(params, ids)
    first = previous_token_head(params, x0)
    x1 = add(x0, first["out"])                              # the residual stream after layer 1
    row, out2 = question_row_forward(layer(params, 2), x1)
    stream = add(x1[-1:], out2)                             # the stream's question row
    return {"x0": x0, "first": first, "x1": x1, "row": row, "out2": out2, "stream": stream,
            "logits": matmul(stream, params["U"])[0]}


def loss_and_grads(params, prompt, answer):
    """−log softmax(logits)[answer] on one prompt, and its gradient for every parameter."""
    fw = forward(params, prompt)
    checks.check_index("answer", answer, len(fw["logits"]), "an index of COLOURS")
    probs = softmax_row(fw["logits"])
    d_logits = list(probs)                                  # softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = stream·U
    grads = {"U": [[s * d for d in d_logits] for s in fw["stream"][0]]}
    d_stream = matmul([d_logits], transpose(params["U"]))
    # forward: stream = x1[T−1] + out2, out2 = question_row_forward(layer(params, 2), x1)
    second, d_x1 = question_row_backward(layer(params, 2), fw["x1"], fw["row"], d_stream, d_stream)
    grads.update({f"{name}2": grad for name, grad in second.items()})
    # forward: x1 = x0 + layer 1's out; the residual passes d_x1 to x0 as it is
    first_grads, d_x0 = previous_token_head_backward(params, fw["x0"], fw["first"], d_x1)
    grads.update({f"{name}1": grad for name, grad in first_grads.items()})
    # forward: x0_i = E[prompt[i]] + position(i)
    grads["E"] = embedding_grads(prompt, add(d_x0, d_x1))
    return -math.log(probs[answer]), grads

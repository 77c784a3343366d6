"""Two layers joined by a residual stream: the model that can answer the colour of the thing the
question names, which one layer cannot (the README's "What one layer cannot do": the query at " is"
knows only " is" and its place, so one layer answers the first colour whatever is asked).

For a prompt of T tokens (a story up to "the ball is"):

    x0     = E[ids] + position(0…T−1)                              (T, d_model), token + place
    x1     = x0 + attention_forward(layer(params, 1), x0)["out"]   (T, d_model), the residual stream
    out2   = the second layer's question row on x1                 (1, d_model)
    logits = (x1[T−1] + out2)·U                                    (C,), a score for each colour
    loss   = −log softmax(logits)[colour]

Both layers are the lesson's: the first is attention_forward / attention_backward on every row;
the second is read only at the question, so `forward` computes that row alone, as the one-layer
model does (q from x1[T−1], k and v from every row of x1, attention_core, Wo), `==` to row T−1
of attention_forward(layer(params, 2), x1). Layer 1 can bring the word before " is" (the object
asked about) into the question's row of the stream, and a colour into its object's row or the
object into its colour's; layer 2's query, made from x1[T−1], can then find the row that holds
both.

The parameters are E, U and each layer's Wq, Wk, Wv, Wo, as Wq1 … Wo1 and Wq2 … Wo2. E is drawn
at random, not at zero as for one layer, so that objects differ before any story has trained them:
layer 2 must tell the object asked about from the others. The price is the one layer's guard: a
piece no story trains keeps a random row, not zeros that score as an empty place would.

Layer 1 may also be GIVEN, set by hand and not learned (init_params(..., given=True) leaves out
Wq1 and Wk1): a previous-token head whose row i puts weight 1/2 on places i−2 and i−1 (place 1 reads
place 0, place 0 itself), by position alone; its value Wv1 and output Wo1 are learned. Its
weights are fixed, so its backward is the value's and the output's alone. train.py trains this one
(train_model(seed, layers=2)). tests/test_two_layers.py checks both backwards against central
differences and the question row against attention_forward.
"""

import math
import random
from math import fsum

from attention import (add, attention_backward, attention_forward, init_attention, matmul,
                       softmax_row, transpose)
from common import checks
from core.masked import attention_core, attention_core_backward
from training.model import INIT_SCALE, embed
from training.stories import COLOURS

LAYERS = (1, 2)
WEIGHTS = ("Wq", "Wk", "Wv", "Wo")       # each layer's, as Wq1 … Wo1 and Wq2 … Wo2
D_MODEL, D_HEAD = 32, 16                 # what train.py trains with layer 1 given


def init_params(vocab_size, seed, d_model, d_head, given=False):
    """E (V, d_model) and U (d_model, len(COLOURS)) from uniform(−INIT_SCALE, INIT_SCALE), drawn
    from random.Random(seed), and each layer's Wq, Wk, Wv, Wo from init_attention, layer n's with
    the seed 2·seed + n − 1, so that no two layers of two seeds of 0 or more start alike
    (random.Random reads a negative seed as its absolute value). given: layer 1 is the
    previous-token head set by hand, with no Wq1 and Wk1 (its Wv1 and Wo1 drawn all the same)."""
    checks.check_seed(seed)
    rng = random.Random(seed)
    params = {"E": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in range(d_model)]
                    for _ in range(vocab_size)],
              "U": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in COLOURS]
                    for _ in range(d_model)]}
    for n in LAYERS:
        for name, matrix in init_attention(d_model, d_head, 2 * seed + n - 1).items():
            if not (given and n == 1 and name in ("Wq", "Wk")):
                params[f"{name}{n}"] = matrix
    return params


def previous_tokens(i):
    """The places row i of the given layer 1 reads, each with weight 1/len: the two before it;
    place 1 has one before it, and place 0 none, so it reads itself, the only place it may."""
    return [i - 2, i - 1] if i >= 2 else [0]


def given_weights(T):
    """The given layer 1's weights (T, T), fixed by position: 1/len(previous_tokens(i)) in row i
    on each of previous_tokens(i), 0.0 elsewhere (what a view of the layer draws).

    >>> given_weights(3)
    [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]
    """
    return [[1 / len(previous_tokens(i)) if j in previous_tokens(i) else 0.0 for j in range(T)]
            for i in range(T)]


def previous_token_head(params, x0):
    """The given layer 1 on x0 (T, d_model): v = x0·Wv1 (T, d_head), mixed (T, d_head), row i the
    mean of v over previous_tokens(i) (weights·v, summed over the places a row reads: the rest
    weigh 0), and out = mixed·Wo1 (T, d_model)."""
    v = matmul(x0, params["Wv1"])
    mixed = [[fsum(column) / len(previous_tokens(i))
              for column in zip(*(v[j] for j in previous_tokens(i)))] for i in range(len(x0))]
    return {"v": v, "mixed": mixed, "out": matmul(mixed, params["Wo1"])}


def previous_token_head_backward(params, x0, first, d_out):
    """({"Wv", "Wo"} of layer 1, d_x0 (T, d_model)) from what previous_token_head returned and
    d_out (T, d_model). The weights are given, so nothing flows into a query or a key."""
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


def layer(params, n):
    """Layer n's own parameters, as attention_forward takes them: Wq, Wk, Wv and Wo."""
    return {name: params[f"{name}{n}"] for name in WEIGHTS}


def forward(params, ids):
    """Every intermediate of the model on a prompt: x0 and x1 (T, d_model); first, what
    attention_forward (or previous_token_head, layer 1 given) returns for layer 1 on x0; row,
    what attention_core returns for layer 2's question row on x1; out2 (1, d_model); stream
    (1, d_model), x1[T−1] + out2; and the logits (C,)."""
    x0 = embed(params, ids)
    first = (attention_forward(layer(params, 1), x0) if "Wq1" in params
             else previous_token_head(params, x0))
    x1 = add(x0, first["out"])                              # the residual stream after layer 1
    q = matmul(x1[-1:], params["Wq2"])                      # only the question's query
    k, v = matmul(x1, params["Wk2"]), matmul(x1, params["Wv2"])
    row = attention_core(q, k, v, [[True] * len(ids)])      # row T−1 of causal_mask
    out2 = matmul(row["mixed"], params["Wo2"])
    stream = add(x1[-1:], out2)                             # the stream's question row
    return {"x0": x0, "first": first, "x1": x1, "row": row, "out2": out2, "stream": stream,
            "logits": matmul(stream, params["U"])[0]}


def loss_and_grads(params, prompt, answer):
    """−log softmax(logits)[answer] on one prompt, and its gradient for every parameter, E's as
    {token id: its row} for the prompt's tokens (as model.py's loss_and_grads gives it)."""
    fw = forward(params, prompt)
    checks.check_index("answer", answer, len(fw["logits"]), "an index of COLOURS")
    x1, row = fw["x1"], fw["row"]
    probs = softmax_row(fw["logits"])
    d_logits = list(probs)                                  # softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = stream·U
    grads = {"U": [[s * d for d in d_logits] for s in fw["stream"][0]]}
    d_stream = matmul([d_logits], transpose(params["U"]))
    # forward: stream = x1[T−1] + out2, out2 = mixed·Wo2
    grads["Wo2"] = matmul(transpose(row["mixed"]), d_stream)
    d_mixed = matmul(d_stream, transpose(params["Wo2"]))
    d_q, d_k, d_v = attention_core_backward(row, d_mixed)
    # forward: q = x1[T−1]·Wq2, k = x1·Wk2, v = x1·Wv2; x1[T−1] also reaches the stream itself
    grads["Wq2"] = matmul(transpose(x1[-1:]), d_q)
    grads["Wk2"], grads["Wv2"] = matmul(transpose(x1), d_k), matmul(transpose(x1), d_v)
    question_row = add(matmul(d_q, transpose(params["Wq2"])), d_stream)
    no_query = [[0.0] * len(x1[0]) for _ in x1[:-1]]        # rows 0…T−2: no path through q
    d_x1 = add(no_query + question_row, matmul(d_k, transpose(params["Wk2"])),
               matmul(d_v, transpose(params["Wv2"])))
    # forward: x1 = x0 + layer 1's out; the residual passes d_x1 to x0 as it is
    if "Wq1" in params:
        first_grads, d_x0 = attention_backward(layer(params, 1), fw["x0"], fw["first"], d_x1)
    else:
        first_grads, d_x0 = previous_token_head_backward(params, fw["x0"], fw["first"], d_x1)
    for name, grad in first_grads.items():
        grads[f"{name}1"] = grad
    d_x0 = add(d_x0, d_x1)
    # forward: x0_i = E[prompt[i]] + position(i)
    grads["E"] = {}
    for t, d_row in zip(prompt, d_x0):
        grads["E"][t] = [g + d for g, d in zip(grads["E"].get(t, [0.0] * len(d_row)), d_row)]
    return -math.log(probs[answer]), grads

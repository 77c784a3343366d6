"""The one-layer model that learns the colour stories: its weights, its forward pass on the
question's row and that row's hand-written backward. For a prompt of T tokens:

    x      = E[ids] + position(0…T−1)                          (T, d_model), token + place
    out    = attention_forward(layer(params), x)["out"][T−1]   (d_model), the question's row
    logits = out·U                                             (C,), a score for each colour
    loss   = −log softmax(logits)[colour]

Only the question's row is computed, bit for bit the whole layer's. What it leaves out: a
residual (the answer is only what attention brings back), dropout, normalization, a second layer.
"""

import math
import random

from attention import add, init_attention, unchecked
from bpe import Tokenizer
from common import checks
from core.masked import attention_core, attention_core_backward
from training.stories import COLOURS, MAX_TOKENS, encode_question

# the model's own products, of weights its door checked and Adam keeps finite: unchecked
matmul, softmax_row, transpose = unchecked.matmul, unchecked.softmax_row, unchecked.transpose

D_MODEL, D_HEAD = 12, 8
INIT_SCALE = 0.5               # U from uniform(−0.5, 0.5); E starts at zero
RAMP, LOG_RAMP = 5.0, 4.0      # position()'s two scales: 0 at the first place, these at the last


def init_params(vocab_size, seed, d_model=D_MODEL, d_head=D_HEAD):
    """E (V, d_model) at zero, so that a token no story trains is its place alone (never above a
    colour at its place), U (d_model, C) from uniform(−INIT_SCALE, INIT_SCALE), Wq … Wo."""
    checks.check_seed(seed)
    rng = random.Random(seed)
    params = {"E": [[0.0] * d_model for _ in range(vocab_size)],
              "U": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in COLOURS]
                    for _ in range(d_model)]}
    params.update(init_attention(d_model, d_head, seed))
    return params


def position(i, d_model=D_MODEL):
    """The fixed position vector of place i: RAMP · i / (T − 1) and LOG_RAMP · log(1 + i/8) /
    log(1 + (T − 1)/8), T = MAX_TOKENS (fine near the start, where a distractor follows close on
    the first colour), then zeros. Both grow with i, the same at every place and for every seed,
    so the query can prefer the earliest colour at places no training story reached.

    >>> position(127)[:3], position(0)[:3]
    ([5.0, 4.0, 0.0], [0.0, 0.0, 0.0])
    """
    last = MAX_TOKENS - 1
    return [RAMP * i / last, LOG_RAMP * math.log(1 + i / 8) / math.log(1 + last / 8)] + [
        0.0] * (d_model - 2)


_POSITIONS = [position(i) for i in range(MAX_TOKENS)]     # position(i) of every place, made once


def embed(params, ids):
    """x (T, d_model): row i is E[ids[i]] + position(i), the token's embedding plus its place's."""
    d_model = len(params["E"][0])
    places = (_POSITIONS if d_model == D_MODEL and len(ids) <= MAX_TOKENS
              else [position(i, d_model) for i in range(len(ids))])
    return [[e + p for e, p in zip(params["E"][t], places[i])] for i, t in enumerate(ids)]


def layer(params, n=""):
    """The attention layer's own Wq, Wk, Wv and Wo (two_layers.py's Wq2 … Wo2 for n = 2): what its
    checks at the door read, not the embeddings."""
    return {name: params[f"{name}{n}"] for name in ("Wq", "Wk", "Wv", "Wo")}


def question_row_forward(head, x):
    """(row, out (1, d_model)): attention_forward(head, x)'s last row alone, `==` to it; row is
    attention_core's: q (1, d_head), k and v (T, d_head), scores and weights (1, T), mixed."""
    q = matmul(x[-1:], head["Wq"])                   # only the question's query
    k, v = matmul(x, head["Wk"]), matmul(x, head["Wv"])      # every position's key and value
    row = attention_core(q, k, v, [[True] * len(x)])   # row T−1 of causal_mask: all of 0…T−1
    return row, matmul(row["mixed"], head["Wo"])


def question_row_backward(head, x, row, d_out, d_question=None):
    """(the head's grads {"Wq", "Wk", "Wv", "Wo"}, d_x (T, d_model)) from d_out (1, d_model);
    d_question (1, d_model), when given, reaches x[T−1] by a path of its own (a residual)."""
    # forward: out = mixed·Wo
    grads = {"Wo": matmul(transpose(row["mixed"]), d_out)}
    d_mixed = matmul(d_out, transpose(head["Wo"]))
    # forward: scores, weights, mixed = attention_core(q, k, v, ...)
    d_q, d_k, d_v = attention_core_backward(row, d_mixed)
    # forward: q = x[T−1]·Wq, k = x·Wk, v = x·Wv; x[T−1] reaches out along all three paths, the
    # rows before it along k and v only
    x_t = transpose(x)
    grads["Wq"] = matmul(transpose(x[-1:]), d_q)            # only x[T−1] made a query
    grads["Wk"], grads["Wv"] = matmul(x_t, d_k), matmul(x_t, d_v)
    question = matmul(d_q, transpose(head["Wq"]))
    if d_question is not None:
        question = add(question, d_question)
    no_query = [[0.0] * len(x[0]) for _ in x[:-1]]          # rows 0…T−2: no path through q
    return grads, add(no_query + question,                  # the list + stacks rows
                      matmul(d_k, transpose(head["Wk"])), matmul(d_v, transpose(head["Wv"])))


def embedding_grads(prompt, d_x):
    """E's gradient as {token id: d_x summed over its places}: every other row's is zeros."""
    grads = {}
    for t, d_row in zip(prompt, d_x):
        grads[t] = [g + d for g, d in zip(grads.get(t, [0.0] * len(d_row)), d_row)]
    return grads


def forward(params, ids):
    """Every intermediate of the model on a prompt: x (T, d_model); row and out (1, d_model), as
    question_row_forward returns them; and the logits (C,), a score for each colour."""
    x = embed(params, ids)
    row, out = question_row_forward(layer(params), x)
    return {"x": x, "row": row, "out": out, "logits": matmul(out, params["U"])[0]}


def loss_and_grads(params, prompt, answer):
    """−log softmax(logits)[answer] on one prompt, and its gradient for every parameter: bit for
    bit attention_backward's with dLoss/d(out) zero but in the question's row."""
    fw = forward(params, prompt)
    checks.check_index("answer", answer, len(fw["logits"]), "an index of COLOURS")   # not −1
    probs = softmax_row(fw["logits"])
    d_logits = list(probs)                               # d loss / d logits = softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = out·U
    grads = {"U": [[o * d for d in d_logits] for o in fw["out"][0]]}   # outᵀ·d_logits
    d_out = matmul([d_logits], transpose(params["U"]))
    # forward: out = question_row_forward(layer(params), x)
    head_grads, d_x = question_row_backward(layer(params), fw["x"], fw["row"], d_out)
    grads.update(head_grads)
    # forward: x_i = E[prompt[i]] + position(i), the position fixed
    grads["E"] = embedding_grads(prompt, d_x)
    return -math.log(probs[answer]), grads


def answer_of(logits):
    """The colour of the largest of the logits (C,) as a token, the first of COLOURS on a tie.

    >>> answer_of([0.5, 2.0] + [0.0] * 9)
    ' blue'
    """
    return " " + COLOURS[max(range(len(logits)), key=lambda c: (logits[c], -c))]


def check_model(model, names=("E", "U", "Wq", "Wk", "Wv", "Wo")):
    """Raise TypeError, naming the part, unless model is a dict train_model returns: a
    bpe.Tokenizer and params holding every weight of names."""
    if not isinstance(model, dict):
        raise TypeError(f"model must be the dict train_model returns, with a tokenizer and params, "
                        f"got {type(model).__name__}")
    if missing := [key for key in ("tokenizer", "params") if key not in model]:
        raise TypeError(f"model must be the dict train_model returns: it has no "
                        f"{' and no '.join(missing)}")
    if not isinstance(model["tokenizer"], Tokenizer):
        raise TypeError(f"model's tokenizer must be a bpe.Tokenizer, got "
                        f"{type(model['tokenizer']).__name__}")
    if not isinstance(model["params"], dict) or not set(names) <= model["params"].keys():
        raise TypeError(f"model's params must be a dict of the weights {', '.join(names)}, got "
                        f"{type(model['params']).__name__}"
                        + (f" of {', '.join(map(str, model['params']))}"
                           if isinstance(model["params"], dict) else ""))


def predict(model, text, run=forward, names=("E", "U", "Wq", "Wk", "Wv", "Wo")):
    """(answer, weights) on text, a story up to its question: the answer (" red") and the question's
    (token, weight) pairs; run, names: another model's. Raises as check_model, encode_question."""
    check_model(model, names)
    tokenizer = model["tokenizer"]
    ids = encode_question(tokenizer, text)
    fw = run(model["params"], ids)
    return answer_of(fw["logits"]), [(tokenizer.vocab[t], w)
                                     for t, w in zip(ids, fw["row"]["weights"][0])]

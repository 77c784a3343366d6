"""The model around the lesson's layer that learns the colour stories (stories.py): its weights,
its forward pass on the question's row, and that row's hand-written backward. For a prompt of T
tokens (a story up to "the ball is"):

    x      = E[ids] + position(0…T−1)                          (T, d_model), token + place
    out    = attention_forward(layer(params), x)["out"][T−1]   (d_model), the question's row
    logits = out·U                                             (C,), a score for each colour
    loss   = −log softmax(logits)[colour]

position(i) is fixed, not learned, and E starts at zero: position and init_params say why. U scores
the colours alone: a question's answer is always one of them, and a step costs the story's rows,
not the vocabulary's (E's gradient keeps the rows of the prompt's tokens only, and Adam steps
those alone). There is no residual (out + x): the answer is only what the question's attention
brings back. With one, x[T−1] (" is" and its position) spoke in every answer too; trained on
seeds 101 to 110 both ways, the runs without it did better on their worst held-out sets.

Only the question's row of out is scored, so forward computes that row alone and loss_and_grads
its gradients, each bit for bit what the whole layer gives (test_training checks both); predict
gives the answer and the question's weights. What it leaves out: dropout, layer normalization, a
second layer (two_layers.py).
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
    """E (V, d_model) at zero, U (d_model, len(COLOURS)) from uniform(−INIT_SCALE, INIT_SCALE),
    and the layer's Wq, Wk, Wv, Wo from init_attention.

    E starts at zero, so a token no training story holds keeps a row of zeros: its x is its
    position alone, and it scores as an empty place would, never above a colour at its place (a
    random row would score at random, and a trained query makes that score large)."""
    checks.check_seed(seed)
    rng = random.Random(seed)
    params = {"E": [[0.0] * d_model for _ in range(vocab_size)],
              "U": [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in COLOURS]
                    for _ in range(d_model)]}
    params.update(init_attention(d_model, d_head, seed))
    return params


def position(i, d_model=D_MODEL):
    """The position vector of place i, fixed, not learned: how far into the story a token stands,
    on two scales, in the first two coordinates (zeros in the rest): evenly, RAMP · i / (T − 1),
    and finely near the start, LOG_RAMP · log(1 + i/8) / log(1 + (T − 1)/8), with T = MAX_TOKENS,
    where a distractor follows close on the first colour. Both grow with i at every place, the
    same for every seed, so the query can prefer the earliest colour at places no training story
    reached (a learned row for each place knew only the places the stories reached).

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


def layer(params):
    """The attention layer's own parameters, Wq, Wk, Wv and Wo: all it is given, so that its checks
    at the door read those and not the embeddings."""
    return {name: params[name] for name in ("Wq", "Wk", "Wv", "Wo")}


def forward(params, ids):
    """Every intermediate of the model on a prompt: x (T, d_model); row, what attention_core
    returns for the question's row (q (1, d_head), k and v (T, d_head), scores and weights (1, T),
    mixed (1, d_head)); out (1, d_model); and the logits (C,), a score for each colour.

    Only the last row of out is scored, so only that row is computed, as attention_step computes
    it: each number is `==` to row T−1 of attention_forward(layer(params), x)."""
    x = embed(params, ids)
    q = matmul(x[-1:], params["Wq"])                 # only the question's query
    k, v = matmul(x, params["Wk"]), matmul(x, params["Wv"])    # every position's key and value
    row = attention_core(q, k, v, [[True] * len(ids)])   # row T−1 of causal_mask: all of 0…T−1
    out = matmul(row["mixed"], params["Wo"])
    return {"x": x, "row": row, "out": out, "logits": matmul(out, params["U"])[0]}


def loss_and_grads(params, prompt, answer):
    """−log softmax(logits)[answer] on one prompt, and its gradient for every parameter: those
    attention_backward gives with dLoss/d(out) zero except in the question's row, bit for bit
    (test_training checks it), without computing the rows of zeros."""
    fw = forward(params, prompt)
    checks.check_index("answer", answer, len(fw["logits"]), "an index of COLOURS")   # not −1
    x, row, out = fw["x"], fw["row"], fw["out"]
    probs = softmax_row(fw["logits"])
    d_logits = list(probs)                               # d loss / d logits = softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = out·U
    grads = {"U": [[o * d for d in d_logits] for o in out[0]]}   # outᵀ·d_logits
    d_out = matmul([d_logits], transpose(params["U"]))
    # forward: out = mixed·Wo
    grads["Wo"] = matmul(transpose(row["mixed"]), d_out)
    d_mixed = matmul(d_out, transpose(params["Wo"]))
    # forward: scores, weights, mixed = attention_core(q, k, v, ...)
    d_q, d_k, d_v = attention_core_backward(row, d_mixed)
    # forward: q = x[T−1]·Wq, k = x·Wk, v = x·Wv; x[T−1] reaches out along all three paths, the
    # rows before it along k and v only
    x_t = transpose(x)
    grads["Wq"] = matmul(transpose(x[-1:]), d_q)            # only x[T−1] made a query
    grads["Wk"], grads["Wv"] = matmul(x_t, d_k), matmul(x_t, d_v)
    no_query = [[0.0] * len(x[0]) for _ in x[:-1]]          # rows 0…T−2: no path through q
    d_x = add(no_query + matmul(d_q, transpose(params["Wq"])),    # the list + stacks rows
              matmul(d_k, transpose(params["Wk"])), matmul(d_v, transpose(params["Wv"])))
    # forward: x_i = E[prompt[i]] + position(i), the position fixed; E's gradient is kept as
    # {token id: its row}, the rows of the prompt's tokens: every other row's is zeros
    grads["E"] = {}
    for t, d_row in zip(prompt, d_x):
        grads["E"][t] = [g + d for g, d in zip(grads["E"].get(t, [0.0] * len(d_row)), d_row)]
    return -math.log(probs[answer]), grads


def answer_of(logits):
    """The answer the logits (one per colour) give: the colour of the largest, with its leading
    space as the token (" red"); the first of COLOURS on a tie.

    >>> answer_of([0.5, 2.0] + [0.0] * 9)
    ' blue'
    """
    best = max(range(len(logits)), key=lambda c: (logits[c], -c))
    return " " + COLOURS[best]


def check_model(model, weights=("E", "U", "Wq", "Wk", "Wv", "Wo")):
    """Raise TypeError, naming the part, unless model is a dict train_model returns: a
    bpe.Tokenizer and params holding every weight of the model (weights)."""
    if not isinstance(model, dict):
        raise TypeError(f"model must be the dict train_model returns, with a tokenizer and params, "
                        f"got {type(model).__name__}")
    missing = [key for key in ("tokenizer", "params") if key not in model]
    if missing:
        raise TypeError(f"model must be the dict train_model returns: it has no "
                        f"{' and no '.join(missing)}")
    if not isinstance(model["tokenizer"], Tokenizer):
        raise TypeError(f"model's tokenizer must be a bpe.Tokenizer, got "
                        f"{type(model['tokenizer']).__name__}")
    if not isinstance(model["params"], dict) or not set(weights) <= model["params"].keys():
        raise TypeError(f"model's params must be a dict of the weights {', '.join(weights)}, got "
                        f"{type(model['params']).__name__}"
                        + (f" of {', '.join(map(str, model['params']))}"
                           if isinstance(model["params"], dict) else ""))


def predict(model, text):
    """(answer, weights): the model's next token after text, a story up to its question (" red"),
    and the question's weights on every token of the story, as (token, weight) pairs. Raises
    TypeError unless model is what train_model returns (check_model), and as encode_question."""
    check_model(model)
    tokenizer = model["tokenizer"]
    ids = encode_question(tokenizer, text)
    fw = forward(model["params"], ids)
    logits = fw["logits"]
    return answer_of(logits), [(tokenizer.vocab[t], w)
                                   for t, w in zip(ids, fw["row"]["weights"][0])]

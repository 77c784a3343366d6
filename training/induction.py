"""An induction circuit, set by hand: two of the lesson's layers that continue a repeated sequence.
The sequence: BOS, N distinct tokens of VOCAB drawn by random.Random(seed), the same N again (T =
2N + 1 places, from 0 here); at place N + i the next token is aᵢ₊₁, the one after aᵢ's first copy.

    x1     = x0 + attention_forward(previous_token_head(), x0)["out"]   (T, d_model)
    x2     = x1 + attention_forward(induction_head(), x1)["out"]        (T, d_model)
    logits = x2·U                                                       (T, V)

The stream, d_model = 3V + 4, is four blocks: TOKEN, the token one-hot (V + 1, BOS last); PLACE,
(1, i, i²); PREVIOUS (V), written by layer 1; NEXT (V), written by layer 2. Every other weight is 0.

Layer 1, previous-token head (d_head = V): q_i = (2(i − 1), −1)·PREVIOUS_GAP, k_j = (j, j²), so
score = PREVIOUS_GAP·((i − 1)² − (j − (i − 1))²), which peaks at j = i − 1, PREVIOUS_GAP above
either neighbour (the softmax ignores (i − 1)², the same across the row). v is the token one-hot
(BOS's: zeros); Wo writes it into PREVIOUS.

Layer 2, induction head (d_head = V + 1): q reads the current token a, k the previous token layer
1 wrote, so the score is MATCH times layer 1's weight where that token is a: place N + i finds
place i + 1. The last head dimension is a sink: every query scores BOS at SINK, 9.5 below a match
and so far above the rest that their weights underflow to 0.0; a row with no match reads BOS,
whose value is zeros, rather than copy a token already seen. v is the token one-hot, Wo writes it
into NEXT, and U reads NEXT as the logits. The queries carry √d_head, which the layer's scale
takes back. measure gives the four figures; chance is 1/V. Left out: training, layer norm, MLPs.

    python3 train_attention.py --induction [--seed N] [--svg FILE] [--json]
"""

import random
from math import fsum, sqrt

from attention import add, attention_forward, causal_mask, matmul
from common.checks import check_seed
from common.views import heatmaps_svg, panel, token_labels

VOCAB = "abcdefgh"          # the tokens drawn; BOS is token V
N = 6                       # tokens drawn, then repeated
V = len(VOCAB)
BOS = V
TOKEN, PLACE, PREVIOUS, NEXT = 0, V + 1, V + 4, 2 * V + 4     # where each block of x starts
D_MODEL = 3 * V + 4
PREVIOUS_GAP = 8.0          # layer 1: the score one back, above the next best
SINK = 750.0                # layer 2's score on BOS: exp(−750) underflows to 0.0
MATCH = 760.0               # layer 2's score on a key whose previous token is the query's


def zeros(rows, cols):
    return [[0.0] * cols for _ in range(rows)]


def previous_token_head():
    """Layer 1's Wq, Wk, Wv (D_MODEL, V) and Wo (V, D_MODEL): place i reads place i − 1."""
    Wq, Wk, Wv, Wo = zeros(D_MODEL, V), zeros(D_MODEL, V), zeros(D_MODEL, V), zeros(V, D_MODEL)
    gain = PREVIOUS_GAP * sqrt(V)
    Wq[PLACE][0], Wq[PLACE + 1][0], Wq[PLACE][1] = -2 * gain, 2 * gain, -gain   # (2(i − 1), −1)
    Wk[PLACE + 1][0], Wk[PLACE + 2][1] = 1.0, 1.0                                # (j, j²)
    for a in range(V):
        Wv[TOKEN + a][a] = 1.0
        Wo[a][PREVIOUS + a] = 1.0
    return {"Wq": Wq, "Wk": Wk, "Wv": Wv, "Wo": Wo}


def induction_head():
    """Layer 2's Wq, Wk, Wv (D_MODEL, V + 1) and Wo (V + 1, D_MODEL): token a reads the place
    whose previous token is a, or BOS when none is."""
    d_head = V + 1
    Wq, Wk, Wv = zeros(D_MODEL, d_head), zeros(D_MODEL, d_head), zeros(D_MODEL, d_head)
    Wo = zeros(d_head, D_MODEL)
    for a in range(V):
        Wq[TOKEN + a][a] = MATCH * sqrt(d_head)
        Wq[TOKEN + a][V] = SINK * sqrt(d_head)
        Wk[PREVIOUS + a][a] = 1.0
        Wv[TOKEN + a][a] = 1.0
        Wo[a][NEXT + a] = 1.0
    Wk[TOKEN + BOS][V] = 1.0
    return {"Wq": Wq, "Wk": Wk, "Wv": Wv, "Wo": Wo}


def unembedding():
    """U (D_MODEL, V): the logit of token a is what layer 2 wrote at NEXT + a."""
    U = zeros(D_MODEL, V)
    for a in range(V):
        U[NEXT + a][a] = 1.0
    return U


def repeated_tokens(seed):
    """BOS, N distinct tokens (ids 0…V − 1) drawn by random.Random(seed), and the same N again."""
    drawn = random.Random(check_seed(seed)).sample(range(V), N)
    return [BOS] + drawn + drawn


def embed(tokens):
    """x0 (T, D_MODEL): each place's token as one-hot and its place i as (1, i, i²)."""
    x0 = zeros(len(tokens), D_MODEL)
    for i, token in enumerate(tokens):
        x0[i][TOKEN + token] = 1.0
        x0[i][PLACE:PLACE + 3] = [1.0, float(i), float(i * i)]
    return x0


def forward(tokens, ablate=False):
    """x0, x1, x2 (T, D_MODEL), what attention_forward returns for each layer as first and
    second, and the logits (T, V). ablate: layer 1's output is zeroed before the stream adds it."""
    x0 = embed(tokens)
    first = attention_forward(previous_token_head(), x0)
    x1 = add(x0, zeros(len(x0), D_MODEL) if ablate else first["out"])
    second = attention_forward(induction_head(), x1)
    x2 = add(x1, second["out"])
    return {"x0": x0, "first": first, "x1": x1, "second": second, "x2": x2,
            "logits": matmul(x2, unembedding())}


def accuracy(logits, tokens):
    """The mean over the places N + 1…2N − 1 of 1/k when the next token is one of the k tokens
    sharing the top logit, else 0."""
    credits = []
    for i in range(N + 1, 2 * N):
        top = [a for a, logit in enumerate(logits[i]) if logit == max(logits[i])]
        credits.append(1 / len(top) if tokens[i + 1] in top else 0.0)
    return fsum(credits) / len(credits)


def measure(seed):
    """(figures, run, ablated): the four figures on seed's sequence, with the seed, the sizes and
    the tokens (what --json prints); forward's run; and its run with layer 1 zeroed."""
    tokens = repeated_tokens(seed)
    run, ablated = forward(tokens), forward(tokens, ablate=True)
    first, second = run["first"]["weights"], run["second"]["weights"]
    one_back = [first[i][i - 1] for i in range(1, 2 * N + 1)]
    after_copy = [second[i][i - N + 1] for i in range(N + 1, 2 * N + 1)]
    figures = {"seed": seed, "vocabulary": V, "n": N, "chance": 1 / V,
               "tokens": [VOCAB[t] if t != BOS else "BOS" for t in tokens],
               "previous_token_score": fsum(one_back) / len(one_back),
               "induction_score": fsum(after_copy) / len(after_copy),
               "accuracy": accuracy(run["logits"], tokens),
               "ablated_accuracy": accuracy(ablated["logits"], tokens)}
    return figures, run, ablated


def table(found):
    """The four figures for a person, places counted from 1."""
    rows = [("previous-token score", found["previous_token_score"],
             f"layer 1's weight one place back, mean over places 2 to {2 * N + 1}"),
            ("induction score", found["induction_score"],
             f"layer 2's weight just after the earlier copy, places {N + 2} to {2 * N + 1}"),
            ("accuracy", found["accuracy"],
             f"the next token is the top logit, places {N + 2} to {2 * N}"),
            ("ablated accuracy", found["ablated_accuracy"],
             f"the same with layer 1's output zeroed; chance is 1/{V} = {1 / V:.4f}")]
    return (f"BOS, {N} tokens of {V} drawn with seed {found['seed']}, the same {N} again:\n"
            + " ".join(found["tokens"]) + "\n"
            + "".join(f"{name:<21} {value:.4f}  {what}\n" for name, value, what in rows))


def maps_svg(found, run):
    """Both layers' weights in run as heatmaps, the repeat's rows outlined."""
    labels = token_labels(found["tokens"])
    hatched = [[not ok for ok in row] for row in causal_mask(len(labels))]
    return heatmaps_svg(
        [panel("layer 1: previous-token head", labels, labels, run["first"]["weights"], hatched,
               subtitle="each place reads the one before it"),
         panel("layer 2: induction head", labels, labels, run["second"]["weights"], hatched,
               highlight=list(range(N + 1, 2 * N + 1)), mark="◀ repeat",
               subtitle="the repeat reads the token after the earlier copy; the rest, BOS")],
        note=f"seed {found['seed']}: BOS, {N} tokens, the same {N} again")

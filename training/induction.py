"""An induction circuit, set by hand: two of the lesson's layers that continue a repeated sequence.

The sequence, drawn as TransformerLens's tutorials draw one for its induction detector: BOS, then
N distinct tokens of the V = len(VOCAB) of VOCAB, drawn by random.Random(seed), then the same N
again (T = 2N + 1 places, counted here from 0, from 1 in the table the door prints). At place
N + i, the repeat of token aᵢ, the next token is aᵢ₊₁: the token after aᵢ's earlier copy.

    x0     = each place's token and place                            (T, d_model)
    x1     = x0 + attention_forward(previous_token_head(), x0)["out"]  layer 1 (T, d_model)
    x2     = x1 + attention_forward(induction_head(), x1)["out"]       layer 2 (T, d_model)
    logits = x2·U                                                      (T, V)

Each layer adds its output to the residual stream, so what x0 holds still stands in x1 for layer 2
to read. The stream is four blocks, d_model = 3V + 4 wide: TOKEN, the token as one-hot (V + 1:
BOS last); PLACE, the place i as (1, i, i²); PREVIOUS (V), where layer 1 writes the token one place
back; NEXT (V), where layer 2 writes the token it predicts. Every weight is 0 but these:

Layer 1, the previous-token head (d_head = V). Its query asks for place i − 1 and its key says
place j: q_i = (2(i − 1), −1)·PREVIOUS_GAP and k_j = (j, j²), so the score is
PREVIOUS_GAP·((i − 1)² − (j − (i − 1))²). Across row i, (i − 1)² is the same for every key and
the softmax ignores it; what is left is largest at j = i − 1 and PREVIOUS_GAP lower one place
either side, so the weight one back is about 1 − 2e^(−PREVIOUS_GAP) (place 0 may read only
itself). Its value is the token's one-hot (BOS's: zeros) and Wo writes it into PREVIOUS.

Layer 2, the induction head (d_head = V + 1). Its query reads the current token a and its key the
token layer 1 wrote: the score is MATCH where the previous token is a (times layer 1's weight one
back, so about MATCH − 0.5), so place N + i finds place i + 1, just after aᵢ's earlier copy. The
last head dimension is a sink: every real token's query scores BOS at SINK, about 9.5 below the
match and so far above every other score (layer 1's leftovers times MATCH, under 1) that their
weights underflow to exactly 0.0. A row with no match (the first copy) reads BOS, whose value is
zeros, and writes nothing; without the sink that row would copy the mixture of every earlier
token and predict one already seen. The value is the token's
one-hot, and Wo writes it into NEXT, which the unembedding U reads as the logit of each token.
The queries are multiplied by √d_head, which the layer's scale 1/√d_head takes back.

The four figures: the previous-token score, layer 1's weight one back, mean over places 1…2N; the
induction score, layer 2's weight on the place after the earlier copy, mean over the repeat's
places N + 1…2N; the accuracy, the share of the places N + 1…2N − 1 (those of the repeat with a
next token) whose top logit is the next token's; the ablated accuracy, the same with layer 1's
output zeroed (x1 = x0). Chance is 1/V, a guess among the V tokens that knows nothing of the
sequence. It is measured as accuracy is: a place whose top logit k tokens share counts 1/k if the
next token is one of them, what breaking the tie at random scores on average. With layer 1 gone
no key matches, layer 2 reads BOS alone, every logit is 0.0, and each place counts 1/V.

The N tokens are distinct: a token twice in the first copy has two earlier copies with different
tokens after them, and no head that looks one token back can tell which continues. Left out:
training (every weight is written here), layer norm, MLPs, more than one head a layer.

    python3 train_attention.py --induction [--seed N] [--svg FILE] [--json]
"""

import random
from math import fsum, sqrt

from attention import add, attention_forward, causal_mask, matmul
from common.views import heatmaps_svg, panel, token_labels

VOCAB = "abcdefgh"          # the tokens drawn; BOS is token V
N = 6                       # tokens drawn, then repeated
V = len(VOCAB)
BOS = V
TOKEN, PLACE, PREVIOUS, NEXT = 0, V + 1, V + 4, 2 * V + 4     # where each block of x starts
D_MODEL = 3 * V + 4
PREVIOUS_GAP = 8.0          # layer 1: the score one back, above the next best
SINK = 750.0                # layer 2's score on BOS: exp(−750) underflows, so a score near 0
                            # beside it gets a weight of exactly 0.0
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
    drawn = random.Random(seed).sample(range(V), N)
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
    written = zeros(len(x0), D_MODEL) if ablate else first["out"]
    x1 = add(x0, written)
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
    """The four figures on seed's sequence, with the seed, the sizes, the tokens, and forward's
    run as run and with layer 1 zeroed as ablated."""
    tokens = repeated_tokens(seed)
    run, ablated = forward(tokens), forward(tokens, ablate=True)
    first, second = run["first"]["weights"], run["second"]["weights"]
    return {"seed": seed, "vocabulary": V, "n": N, "chance": 1 / V,
            "tokens": [VOCAB[t] if t != BOS else "BOS" for t in tokens],
            "previous_token_score": fsum(first[i][i - 1] for i in range(1, 2 * N + 1)) / (2 * N),
            "induction_score": fsum(second[i][i - N + 1] for i in range(N + 1, 2 * N + 1)) / N,
            "accuracy": accuracy(run["logits"], tokens),
            "ablated_accuracy": accuracy(ablated["logits"], tokens),
            "run": run, "ablated": ablated}


FIGURES = ("previous_token_score", "induction_score", "accuracy", "ablated_accuracy")


def figures(found):
    """What --json prints: the seed, the sizes, the tokens and the four figures."""
    return {name: found[name] for name in ("seed", "vocabulary", "n", "chance", "tokens")
            + FIGURES}


def table(found):
    """The four figures for a person, places counted from 1."""
    n, v = found["n"], found["vocabulary"]
    rows = [("previous-token score", found["previous_token_score"],
             f"layer 1's weight one place back, mean over places 2 to {2 * n + 1}"),
            ("induction score", found["induction_score"],
             f"layer 2's weight just after the earlier copy, places {n + 2} to {2 * n + 1}"),
            ("accuracy", found["accuracy"],
             f"the next token is the top logit, places {n + 2} to {2 * n}"),
            ("ablated accuracy", found["ablated_accuracy"],
             f"the same with layer 1's output zeroed; chance is 1/{v} = {1 / v:.4f}")]
    return (f"BOS, {n} tokens of {v} drawn with seed {found['seed']}, the same {n} again:\n"
            + " ".join(found["tokens"]) + "\n"
            + "".join(f"{name:<21} {value:.4f}  {what}\n" for name, value, what in rows))


def maps_svg(found):
    """Both layers' weights as heatmaps: layer 1 reads one place back, layer 2 just after the
    earlier copy in the repeat's rows (outlined)."""
    labels = token_labels(found["tokens"])
    hatched = [[not ok for ok in row] for row in causal_mask(len(labels))]
    run, n = found["run"], found["n"]
    return heatmaps_svg(
        [panel("layer 1: previous-token head", labels, labels, run["first"]["weights"], hatched,
               subtitle="each place reads the one before it"),
         panel("layer 2: induction head", labels, labels, run["second"]["weights"], hatched,
               highlight=list(range(n + 1, 2 * n + 1)), mark="◀ repeat",
               subtitle="the repeat reads the token after the earlier copy; the rest, BOS")],
        note=f"seed {found['seed']}: BOS, {n} tokens, the same {n} again")

"""The lesson's recorded run: one causal self-attention layer traced on "mia has a red ball.".

    python3 trace_attention.py            print the trace as JSON
    python3 trace_attention.py --write    rewrite attention-trace.json
    python3 trace_attention.py --check    fail unless attention-trace.json matches a fresh trace
    python3 trace_attention.py --table    the same trace as aligned tables, labelled by token
    python3 trace_attention.py --svg FILE the weights of the three mask modes as heatmaps
    python3 trace_attention.py --sentence "the big dog sees a blue kite." [--changed TEXT] [--table | --svg FILE]

The weights are untrained: drawn from seeded generators, so every number is the same on every machine.
The trace tokenizes the sentence with tokenizer.json, looks each id up in a seeded embedding table to make
x (T, 4), runs attention_forward, and records every intermediate (rounded to 4 decimals, −∞ as null). It
then edits a later token ("ball" -> "hat") under each mask mode to see which output rows move, and checks
the hand-written backward pass against central differences on the loss Σ out·r.
"""

import math
import os
import random
import sys
from math import fsum

from attention import MASK_MODES, attention_backward, attention_forward, init_attention
from bpe import Tokenizer, chunks
from recorded import (changed_rows, guarded, parse_trace_args, rounded, save_view, show,
                      to_json, trace_parser, write_or_check)
from views import MAX_TOKENS, heatmaps_svg, label, panel, text_table

D_MODEL = 4
D_HEAD = 2
SEED = 11
SENTENCE = "mia has a red ball."
CHANGED = "mia has a red hat."
EPS = 1e-6

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_PATH = os.path.join(HERE, "tokenizer.json")
TRACE_PATH = os.path.join(HERE, "attention-trace.json")


def _table(rows, seed):
    """rows × D_MODEL values round(uniform(-1, 1), 2) from random.Random(seed), drawn row by row."""
    rng = random.Random(seed)
    return [[round(rng.uniform(-1, 1), 2) for _ in range(D_MODEL)] for _ in range(rows)]


def embeddings(vocab_size, seed=SEED):
    """(vocab_size, D_MODEL): row i is the input vector of token id i. Drawn from random.Random(seed + 1)."""
    return _table(vocab_size, seed + 1)


def readout(T, seed=SEED):
    """(T, D_MODEL), drawn from random.Random(seed + 2): a fixed weighting r of the output, so that
    loss = Σ out·r and dLoss/d(out) = r."""
    return _table(T, seed + 2)


def loss(params, x, r, mask="causal"):
    """Σ over every entry of out·r, correctly rounded."""
    out = attention_forward(params, x, mask)["out"]
    return fsum(o * w for out_row, r_row in zip(out, r) for o, w in zip(out_row, r_row))


def central_differences(f, matrix):
    """(f(m + EPS) − f(m − EPS)) / 2·EPS for every entry of matrix, changed in place and restored after.
    Returns a matrix of matrix's shape."""
    grad = []
    for row in matrix:
        grad_row = []
        for j, saved in enumerate(row):
            row[j] = saved + EPS
            up = f()
            row[j] = saved - EPS
            down = f()
            row[j] = saved
            grad_row.append((up - down) / (2 * EPS))
        grad.append(grad_row)
    return grad


def numeric_grad(params, x, r, mask="causal"):
    """Central differences of loss for every weight of every matrix: {Wq, Wk, Wv, Wo}."""
    return {name: central_differences(lambda: loss(params, x, r, mask), params[name])
            for name in ("Wq", "Wk", "Wv", "Wo")}


def max_err(a, b):
    """The largest absolute difference between two gradient dicts of matching shapes."""
    return max(abs(p - q) for name in a for row_a, row_b in zip(a[name], b[name]) for p, q in zip(row_a, row_b))


def load_tokenizer():
    return Tokenizer.load(TOKENIZER_PATH)


def inputs(tokenizer, text, table):
    """(ids, x): the token ids of text and their rows of the embedding table. Raises ValueError for
    a text of more than MAX_TOKENS tokens: the trace and its views are read by a person."""
    ids = tokenizer.encode(text)
    if len(ids) > MAX_TOKENS:
        raise ValueError(f"{text[:20]!r}… has {len(ids)} tokens: the trace and its views take at "
                         f"most {MAX_TOKENS}")
    return ids, [list(table[i]) for i in ids]


def lesson_setup(tokenizer=None):
    """(tokenizer, params, table): the tokenizer (tokenizer.json unless given), the lesson's seeded
    weights and its seeded embedding table. inputs(tokenizer, text, table) then gives (ids, x)."""
    tokenizer = tokenizer or load_tokenizer()
    return tokenizer, init_attention(D_MODEL, D_HEAD, SEED), embeddings(len(tokenizer.vocab))


def trace(sentence=SENTENCE, changed=CHANGED, tokenizer=None):
    """Everything the lesson records, in the order attention-trace.json keeps it."""
    tokenizer, params, table = lesson_setup(tokenizer)
    ids, x = inputs(tokenizer, sentence, table)
    _, x_changed = inputs(tokenizer, changed, table)
    cache = attention_forward(params, x)
    r = readout(len(x))

    masks = {}
    for mode in MASK_MODES:
        run = attention_forward(params, x, mode)
        masks[mode] = {
            "rows_changed_by_the_edit": changed_rows(run["out"], attention_forward(params, x_changed, mode)["out"]),
            "weight_on_future_row_0": round(fsum(run["weights"][0][1:]), 4),
        }
    analytic, _ = attention_backward(params, x, cache, r)
    numeric = numeric_grad(params, x, r)

    names = ("q", "k", "v", "scores", "weights", "mixed", "out")
    return {
        "sentence": sentence,
        "tokens": tokenizer.tokens(sentence),
        "ids": ids,
        "changed_sentence": changed,
        "changed_tokens": tokenizer.tokens(changed),
        "d_model": D_MODEL,
        "d_head": D_HEAD,
        "seed": SEED,
        "shapes": {name: [len(cache[name]), len(cache[name][0])] for name in names},
        "x": rounded(x, 4),
        "params": rounded(params, 4),
        **{name: rounded(cache[name], 4) for name in ("q", "k", "v", "scores", "weights", "out")},
        "row_sums": [round(fsum(row), 6) for row in cache["weights"]],
        "masks": masks,
        "gradient_check": {"epsilon": EPS, "max_error_rounded": round(max_err(analytic, numeric), 7)},
    }


# ---- views for a person -------------------------------------------------------------------------------

PANEL_TITLES = {"causal": "causal mask", "none": "no mask: the future leaks",
                "zero": "zero-score bug: future scores 0.0"}


def table(t):
    """The trace t as aligned text: tokens and ids, scores and weights by token, the edit under each mask
    mode, and the gradient check. Numbers as recorded, 4 decimals, −∞ as −∞."""
    labels = [label(token) for token in t["tokens"]]
    blocked = [[s is None for s in row] for row in t["scores"]]
    weights = [["0" if b else w for w, b in zip(row, b_row)] for row, b_row in zip(t["weights"], blocked)]
    lines = ["tokens:  " + "   ".join(f"{name} ({i})" for name, i in zip(labels, t["ids"])), "",
             f"scores = q·kᵀ / √{t['d_head']} (rows: output for; columns: attends to)",
             text_table(labels, labels, t["scores"]), "",
             "weights = softmax of each row of scores",
             text_table(labels, labels, weights), "",
             f"editing {t['sentence']!r} -> {t['changed_sentence']!r}:"]
    for mode, result in t["masks"].items():
        lines.append(f"  {mode:<6}  rows changed {result['rows_changed_by_the_edit']}, "
                     f"row 0's weight on the future {result['weight_on_future_row_0']}")
    check = t["gradient_check"]
    lines += ["", f"gradient check: max |analytic − numeric| = {check['max_error_rounded']} "
                  f"(central differences, ε = {check['epsilon']}, rounded to 7 decimals)"]
    return "\n".join(lines) + "\n"


def weights_svg(sentence=SENTENCE, tokenizer=None):
    """One SVG with the weights of the three mask modes side by side, for any sentence."""
    tokenizer, params, table = lesson_setup(tokenizer)
    _, x = inputs(tokenizer, sentence, table)
    labels = [label(token) for token in tokenizer.tokens(sentence)]
    panels = []
    for mode in MASK_MODES:
        run = attention_forward(params, x, mode)
        hatched = [[s == -math.inf for s in row] for row in run["scores"]]   # the "zero" bug hatches none
        panels.append(panel(PANEL_TITLES[mode], labels, labels, run["weights"], hatched))
    return heatmaps_svg(panels, note=f"{sentence!r}: rows are the token whose output is computed, columns the "
                                     f"tokens it attends to. Untrained weights, seed {SEED}.")


def edited(sentence):
    """The default edit of --sentence: its last word replaced by "hat", as the lesson replaces "ball"."""
    pieces = chunks(sentence)
    for n in range(len(pieces) - 1, -1, -1):
        if pieces[n].strip().isalpha():
            pieces[n] = (" " if pieces[n].startswith(" ") else "") + "hat"
            return "".join(pieces)
    raise ValueError(f"the sentence {sentence!r} has no word to replace: give --changed TEXT")


def main(argv=None):
    parser = trace_parser("Trace one causal self-attention layer on the lesson's sentence.", TRACE_PATH)
    parser.add_argument("--sentence", metavar="TEXT",
                        help=f"trace another sentence of at most {MAX_TOKENS} tokens "
                             f"(default: the lesson's)")
    parser.add_argument("--changed", metavar="TEXT",
                        help="the edited sentence (default: last word -> hat)")
    args = parse_trace_args(parser, argv, other_inputs=("sentence", "changed"))
    return guarded(lambda: _run(args))


def _run(args):
    sentence = SENTENCE if args.sentence is None else args.sentence
    changed = args.changed if args.changed is not None else (CHANGED if args.sentence is None else edited(sentence))
    if args.svg is not None:
        save_view(args.svg, weights_svg(sentence))
    if args.table:
        show(table(trace(sentence, changed)))
    if args.svg is not None or args.table:
        return 0
    return write_or_check(to_json(trace(sentence, changed)), TRACE_PATH, args.write, args.check)


if __name__ == "__main__":
    sys.exit(main())

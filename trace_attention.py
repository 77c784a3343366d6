"""The lesson's recorded run: one causal self-attention layer traced on "mia has a red ball.".

    python3 trace_attention.py            print the trace as JSON
    python3 trace_attention.py --write    rewrite attention-trace.json (--check: compare)
    python3 trace_attention.py --table [--show x,q,k,v,scores,weights,mixed,out]
    python3 trace_attention.py --svg FILE | --html FILE | --export FILE     the views
    python3 trace_attention.py --sentence TEXT [--changed TEXT] [--tokenizer FILE]

Seeded, untrained weights; x (T, 4) from a seeded embedding table. The trace records every
intermediate (4 decimals, −∞ as null), which output rows a later token's edit moves under each
mask mode, and the backward pass against central differences on the loss Σ out·r.
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.checks import check_made, check_matrix, check_seed
import argparse
import math
import os
import random
import sys

from attention import MASK_MODES, attention_backward, attention_forward, init_attention, shape
from bpe import Tokenizer, chunks
from common.cli import check_outputs, guarded, parse_trace_args, save_views, show, trace_parser
from common.export import export_text
from common.golden import changed_rows, rounded, to_json, write_or_check
from common.gradcheck import central_differences, max_err
from common.views import MAX_TOKENS, heatmaps_svg, panel, positions_text, text_table, token_labels
from explorer.page import lesson_page

D_MODEL = 4
D_HEAD = 2
SEED = 11
SENTENCE = "mia has a red ball."
CHANGED = "mia has a red hat."
EPS = 1e-6        # the gradient check's step: gradcheck.EPS, named here as the lesson names it

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_PATH = os.path.join(HERE, "tokenizer.json")
TRACE_PATH = os.path.join(HERE, "attention-trace.json")
FIGURE = "attention-weights.svg"                   # the views this command records itself,
PAGE = os.path.join("explorer", "attention-explorer.html")   # from the project folder


def _table(rows, seed, offset):
    """(rows, D_MODEL) of round(uniform(-1, 1), 2) from random.Random(seed + offset)."""
    check_made("the table", rows=rows, d_model=D_MODEL)
    check_seed(seed)
    rng = random.Random(seed + offset)
    return [[round(rng.uniform(-1, 1), 2) for _ in range(D_MODEL)] for _ in range(rows)]


def embeddings(vocab_size, seed=SEED):
    """(vocab_size, D_MODEL): row i is the input vector of token id i."""
    return _table(vocab_size, seed, 1)


def readout(T, seed=SEED):
    """(T, D_MODEL): a fixed weighting r of the output, so that loss = Σ out·r and d_out = r."""
    return _table(T, seed, 2)


def loss(params, x, r, mask="causal"):
    """Σ of every entry of out·r, correctly rounded. Raises ValueError unless r is (T, d_model)."""
    out = attention_forward(params, x, mask)["out"]
    rows, _ = check_matrix("r", r, cols=len(out[0]), label="r")
    if rows != len(out):
        raise ValueError(f"loss needs r of out's shape {shape(out)}, got {rows} rows")
    return math.fsum(o * w for out_row, r_row in zip(out, r) for o, w in zip(out_row, r_row))


def numeric_grad(params, x, r, mask="causal"):
    """Central differences of loss for every weight of every matrix: {Wq, Wk, Wv, Wo}."""
    return {name: central_differences(lambda: loss(params, x, r, mask), params[name], EPS)
            for name in ("Wq", "Wk", "Wv", "Wo")}


def load_tokenizer():
    return Tokenizer.load(TOKENIZER_PATH)


def _shown(text):
    """A text for a message: whole up to 40 characters, else its start and "…"."""
    return repr(text) if len(text) <= 40 else repr(text[:40]) + "…"


def inputs(tokenizer, text, embedding, what="the sentence"):
    """(ids, x): the token ids of text and their rows of the embedding table. Raises ValueError for
    a text of no token or more than MAX_TOKENS tokens, naming it as `what`."""
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a bpe.Tokenizer, got {type(tokenizer).__name__}")
    try:
        ids = tokenizer.encode(text)    # raises TypeError for a text that is not a str
    except ValueError as e:     # a character outside the alphabet: say which text holds it
        raise ValueError(f"{what} {_shown(text)}: {e}") from None
    if not ids:
        raise ValueError(f"{what} {text!r} has no token: expected at least one")
    if len(ids) > MAX_TOKENS:
        raise ValueError(f"{what} {_shown(text)} has {len(ids)} tokens: the trace and its views "
                         f"take at most {MAX_TOKENS}")
    return ids, [list(embedding[i]) for i in ids]


def lesson_setup(tokenizer=None):
    """(tokenizer, params, embedding): tokenizer.json unless given, the lesson's seeded weights."""
    tokenizer = load_tokenizer() if tokenizer is None else tokenizer
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"tokenizer must be a bpe.Tokenizer (bpe.Tokenizer.load(path) reads one), "
                        f"got {type(tokenizer).__name__}")
    return tokenizer, init_attention(D_MODEL, D_HEAD, SEED), embeddings(len(tokenizer.vocab))


def trace(sentence=SENTENCE, changed=CHANGED, tokenizer=None):
    """Everything the lesson records, in the order attention-trace.json keeps it."""
    tokenizer, params, embedding = lesson_setup(tokenizer)
    ids, x = inputs(tokenizer, sentence, embedding)
    _, x_changed = inputs(tokenizer, changed, embedding, "the edited sentence")
    cache = attention_forward(params, x)
    r = readout(len(x))

    masks = {}
    for mode in MASK_MODES:
        run = attention_forward(params, x, mode)
        edited_out = attention_forward(params, x_changed, mode)["out"]
        masks[mode] = {"rows_changed_by_the_edit": changed_rows(run["out"], edited_out),
                       "weight_on_future_row_0": round(math.fsum(run["weights"][0][1:]), 4)}
    analytic, _ = attention_backward(params, x, cache, r)
    numeric = numeric_grad(params, x, r)

    return {
        "sentence": sentence, "tokens": tokenizer.tokens(sentence), "ids": ids,
        "changed_sentence": changed, "changed_tokens": tokenizer.tokens(changed),
        "d_model": D_MODEL, "d_head": D_HEAD, "seed": SEED,
        "shapes": {name: list(shape(cache[name]))
                   for name in ("q", "k", "v", "scores", "weights", "mixed", "out")},
        "x": rounded(x, 4), "params": rounded(params, 4),
        **{name: rounded(cache[name], 4) for name in ("q", "k", "v", "scores", "weights", "out")},
        "row_sums": [round(math.fsum(row), 6) for row in cache["weights"]], "masks": masks,
        "gradient_check": {"epsilon": EPS,
                           "max_error_rounded": round(max_err(analytic, numeric), 7)},
    }


# ---- views for a person -----------------------------------------------------------------------

PANEL_TITLES = {"causal": "causal mask", "none": "no mask: the future leaks",
                "zero": "zero-score bug: future scores 0.0"}

INTERMEDIATES = ("x", "q", "k", "v", "scores", "weights", "mixed", "out")
CAPTIONS = {"x": "x: the input rows, one per token (T, d_model)",
            "q": "q = x·Wq (T, d_head)", "k": "k = x·Wk (T, d_head)", "v": "v = x·Wv (T, d_head)",
            "scores": "scores = q·kᵀ / √d_head, −∞ where masked (rows: output for; columns: "
                      "attends to)",
            "weights": "weights = softmax of each row of scores",
            "mixed": "mixed = weights·v (T, d_head)", "out": "out = mixed·Wo (T, d_model)"}


def trace_table(t, shown=("scores", "weights"), run=None):
    """The trace t as aligned text: tokens and ids, the intermediates in shown, labelled by token,
    the edit under each mask mode and the gradient check. run, the causal attention_forward of the
    sentence, gives "mixed", which t does not record. Raises ValueError for another name."""
    unknown = [name for name in shown if name not in INTERMEDIATES]
    if unknown or ("mixed" in shown and run is None):
        raise ValueError(f"trace_table shows names from {', '.join(INTERMEDIATES)} (mixed with "
                         f"run), got {', '.join(map(repr, unknown)) or 'mixed without run'}")
    labels = token_labels(t["tokens"])
    values = {name: t.get(name) or (run or {}).get(name) for name in shown}
    values["weights"] = [["0" if s is None else w for w, s in zip(w_row, s_row)]   # blocked: 0
                         for w_row, s_row in zip(t["weights"], t["scores"])]
    lines = ["tokens:  " + "   ".join(f"{name} ({i})" for name, i in zip(labels, t["ids"])), ""]
    for name in shown:
        matrix = values[name]
        columns = (labels if name in ("scores", "weights")     # else features, from 1 as Lab 06's
                   else [str(c) for c in range(1, len(matrix[0]) + 1)])
        lines += [CAPTIONS[name], text_table(labels, columns, matrix), ""]
    edit = f"editing {t['sentence']!r} -> {t['changed_sentence']!r}"
    before, after = len(t["tokens"]), len(t["changed_tokens"])
    if before != after:     # a row only one side has counts as changed
        edit += (f" ({before} -> {after} tokens: {positions_text([min(before, after)])} and later "
                 f"are on one side only)")
    lines.append(edit + ":")
    for mode, result in t["masks"].items():
        changed = positions_text(result["rows_changed_by_the_edit"])
        lines.append(f"  {mode:<6}  the edit changes {changed}, position 1's weight on the future "
                     f"{result['weight_on_future_row_0']}")
    check = t["gradient_check"]
    lines += ["", f"gradient check: max |analytic − numeric| = {check['max_error_rounded']} "
                  f"(central differences, ε = {check['epsilon']}, rounded to 7 decimals)"]
    return "\n".join(lines) + "\n"


def weights_svg(sentence=SENTENCE, tokenizer=None):
    """One SVG with the weights of the three mask modes side by side, for any sentence."""
    tokenizer, params, embedding = lesson_setup(tokenizer)
    _, x = inputs(tokenizer, sentence, embedding)
    labels = token_labels(tokenizer.tokens(sentence))
    panels = []
    for mode in MASK_MODES:
        run = attention_forward(params, x, mode)
        # hatched where the score is −∞: the "zero" bug hatches none
        hatched = [[s == -math.inf for s in row] for row in run["scores"]]
        panels.append(panel(PANEL_TITLES[mode], labels, labels, run["weights"], hatched,
                            future=mode != "causal"))
    return heatmaps_svg(panels, note=f"{sentence!r}: rows are the token whose output is computed, "
                                     f"columns the tokens it attends to; with no mask and with the "
                                     f"zero-score bug, the outlined future gets weight. Untrained "
                                     f"weights, seed {SEED}.")


def explorer_page(sentence=SENTENCE, tokenizer=None):
    """The explorer page (explorer/page.py) of the three mask modes, for any sentence."""
    tokenizer, params, embedding = lesson_setup(tokenizer)
    _, x = inputs(tokenizer, sentence, embedding)
    return lesson_page(params, x, tokenizer.tokens(sentence), sentence)


def edited(sentence):
    """The default edit of --sentence: its last word replaced by "hat" (ValueError if none is)."""
    pieces = chunks(sentence)
    for n in range(len(pieces) - 1, -1, -1):
        if pieces[n].strip().isalpha():
            if pieces[n].strip() == "hat":
                raise ValueError(f"the default edit (last word -> hat) would change nothing in "
                                 f"{sentence!r}: give --changed TEXT")
            pieces[n] = (" " if pieces[n].startswith(" ") else "") + "hat"
            return "".join(pieces)
    raise ValueError(f"the sentence {sentence!r} has no word to replace: give --changed TEXT")


def main(argv=None):
    parser = trace_parser("Trace one causal self-attention layer on the lesson's sentence.",
                          TRACE_PATH, "the causal weights")
    parser.add_argument("--sentence", metavar="TEXT", help=f"trace another sentence of at most "
                        f"{MAX_TOKENS} tokens (default: the lesson's)")
    parser.add_argument("--changed", metavar="TEXT",
                        help="the edited sentence (default: last word -> hat)")
    parser.add_argument("--show", metavar="NAMES", type=_names, default=("scores", "weights"),
                        help=f"with --table, the intermediates to print, from "
                             f"{','.join(INTERMEDIATES)} (default: scores,weights)")
    parser.add_argument("--tokenizer", metavar="FILE",
                        help="a tokenizer saved by `bpe.py train` (default: tokenizer.json)")
    args = parse_trace_args(parser, argv, other_inputs=("sentence", "changed", "tokenizer"))
    if args.show != ("scores", "weights") and not args.table:
        parser.error("--show chooses what --table prints: add --table")
    return guarded(lambda: _run(args))


def _names(text):
    """--show's argument: names from INTERMEDIATES, separated by commas."""
    names = tuple(name.strip() for name in text.split(","))
    unknown = [name for name in names if name not in INTERMEDIATES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--show takes names from {','.join(INTERMEDIATES)}, "
                                         f"got {', '.join(unknown) or 'none'}")
    return names


def _run(args):
    check_outputs([("--svg", args.svg, FIGURE), ("--html", args.html, PAGE),
                   ("--export", args.export, None)], [("--tokenizer", args.tokenizer)])
    tokenizer = Tokenizer.load(args.tokenizer) if args.tokenizer is not None else None
    sentence = SENTENCE if args.sentence is None else args.sentence
    changed = args.changed if args.changed is not None else (
        CHANGED if args.sentence is None else edited(sentence))
    tokenizer, params, embedding = lesson_setup(tokenizer)
    _, x = inputs(tokenizer, sentence, embedding)      # both sentences checked before any output
    inputs(tokenizer, changed, embedding, "the edited sentence")
    save_views([(args.svg, args.svg and weights_svg(sentence, tokenizer), FIGURE, weights_svg),
                (args.html, args.html and explorer_page(sentence, tokenizer), PAGE, explorer_page),
                (args.export, args.export and export_text(
                    tokenizer.tokens(sentence), [[attention_forward(params, x)["weights"]]]),
                 None, None)])
    if args.table:
        run = attention_forward(params, x) if "mixed" in args.show else None   # not recorded
        show(trace_table(trace(sentence, changed, tokenizer), args.show, run))
    if args.svg is not None or args.table or args.html is not None or args.export is not None:
        return 0
    return write_or_check(to_json(trace(sentence, changed, tokenizer)), TRACE_PATH, args.write,
                          args.check)


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

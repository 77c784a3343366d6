"""Watch the cache of keys and values work: the lesson's sentence one token at a time.

    python3 step_attention.py               each row of weights as attention_step gives it, == the
                                            full pass's (or the command fails)
    python3 step_attention.py --mask none   against the full pass with no mask (--mask zero: the
                                            bug): what a cache gets wrong
    python3 step_attention.py --write       rewrite kv-cache-trace.json (--check: compare)

The sentence, tokens, x and params come from attention-trace.json (two decimals each, exact).
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, guarded, show
import os
import sys
from textwrap import fill

from attention import MASK_MODES, attention_forward
from common.golden import to_json, write_or_check
from common.safe_io import read_json
from common.views import positions_text, text_table, token_labels
from kv_cache.step import attention_step, kv_trace, matches_full_pass, row_errors

HERE = os.path.dirname(os.path.abspath(__file__))
LESSON_TRACE_PATH = os.path.join(HERE, "attention-trace.json")
KV_TRACE_PATH = os.path.join(HERE, "kv_cache", "kv-cache-trace.json")
WIDTH = 100
MODES = {"causal": "the causal mask", "none": "no mask", "zero": "the zero-score bug"}


def recorded_lesson(path=LESSON_TRACE_PATH):
    """(sentence, tokens, params, x) from the lesson's recorded trace. Raises ValueError naming the
    file when it is not such a trace: not a JSON object, a key missing, or a sentence, tokens,
    params or x that the layer or the view would refuse (that refusal, said of the file)."""
    trace = read_json(path, "the lesson's recorded trace", then="run trace_attention.py --write")
    try:
        sentence, tokens, params, x = (trace[key] for key in ("sentence", "tokens", "params", "x"))
        if type(sentence) is not str:
            raise TypeError(f"the sentence must be a str, got {type(sentence).__name__}")
        token_labels(tokens)                        # a list of token strings
        attention_forward(params, x)                # params and x the layer can run on
        if len(x) != len(tokens):
            raise ValueError(f"expected one row of x per token, got {len(x)} rows and "
                             f"{len(tokens)} tokens")
    except (ValueError, KeyError, TypeError) as e:     # JSON that is not a trace
        raise ValueError(f"{os.path.basename(path)} is not the lesson's recorded trace "
                         f"({type(e).__name__}: {e}): run trace_attention.py --write") from None
    return sentence, tokens, params, x


def watch(sentence, tokens, params, x, mask="causal"):
    """The view's lines, as they come: each step's weights, == or ≠ row t of the full pass in mode
    mask, then a summary. Raises ValueError when a causal row is not the full pass's."""
    full = attention_forward(params, x, mask)
    labels = token_labels(tokens)
    width = max(map(len, labels))
    yield fill(f"{sentence!r} one token at a time: attention_step keeps the keys and values of the "
               f"tokens so far and computes only the new row. Each row is compared, with ==, to "
               f"its row of the full pass: attention_forward on the whole sentence, with "
               f"{MODES[mask]}.", WIDTH) + "\n"
    yield "weights (rows: the token that has just arrived; columns: the tokens it attends to)"
    kv, wrong = {"k": [], "v": []}, []
    for t, x_t in enumerate(x):
        step = attention_step(params, x_t, kv)
        if matches_full_pass(step, full, t):
            mark = f"== full pass row {t + 1}"
        else:
            wrong.append(t)
            unseen, difference = row_errors(step, full, t)
            mark = (f"≠ full pass row {t + 1}: weight {unseen:.4f} on unseen tokens, out off by up "
                    f"to {difference:.4f}")
        blank = " " * len("0.0000")       # a token that has not arrived: no column yet
        cells = step["weights"] + [blank] * (len(x) - t - 1)
        table = text_table([labels[t].ljust(width)], labels, [cells], marks={0: mark})
        yield table if t == 0 else table.split("\n")[1]     # the header once
    if mask == "causal" and wrong:
        raise ValueError(f"the rows of {positions_text(wrong)} are not the full pass's: the "
                         f"cache is wrong")
    if mask == "causal":
        summary = (f"All {len(x)} rows equal the full pass's bit for bit (q, k, v, scores, "
                   f"weights, mixed, out): the causal mask lets each row read only its own "
                   f"position and those before it, so nothing cached ever has to change.")
    else:
        summary = (f"A cache gets {positions_text(wrong)} wrong: with {MODES[mask]}, a later "
                   f"token changes the earlier rows, so every row the cache gave would have to "
                   f"be computed again. Only the causal mask makes a cache exact.")
    yield "\n" + fill(summary, WIDTH)


def main(argv=None):
    parser = OneLineParser(description="Run the lesson's sentence one token at a time with the "
                                       "cache of keys and values.")
    parser.add_record_flags(KV_TRACE_PATH)
    parser.add_argument("--mask", choices=MASK_MODES, help="compare the cache's rows with the full "
                        "pass in this mode (default: causal)")
    args = parser.parse_args(argv)
    if (args.write or args.check) and args.mask is not None:
        parser.error("--write and --check work on the recorded file alone; drop --mask")
    return guarded(lambda: _run(args))


def _run(args):
    sentence, tokens, params, x = recorded_lesson()
    if args.write or args.check:
        return write_or_check(to_json(kv_trace(sentence, tokens, params, x)), KV_TRACE_PATH,
                              args.write, args.check)
    for lines in watch(sentence, tokens, params, x, args.mask or "causal"):
        show(lines + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

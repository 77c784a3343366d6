"""Why attention: train the lesson's layer on the colour stories, and measure it honestly.

A story names a colour in its first sentence and asks for it back in its last; half the training
stories hold a distractor, another colour later on. colour_stories.py holds the stories, the two
bigrams, the model around the lesson's layer and its training; this is their command line.

    python3 train_attention.py               train seed 1 and print its run (about 9 s)
    python3 train_attention.py --story "mia has a red ball. tom has a blue cup too. the ball is"
                                             train seed 1, then answer the story and print the
                                             question's weight on each of its tokens
    python3 train_attention.py --seeds 10    train seeds 1…10, a row each (on every core)
    python3 train_attention.py --write       record seeds 1…30 in training-run.json (minutes)
    python3 train_attention.py --check       fail unless seed 1 trains as training-run.json says
    python3 train_attention.py --check --all-seeds    the same for seeds 1…30 (minutes)
    python3 train_attention.py --svg FILE    draw the recorded figure: a question, two colours

From Python:

    import train_attention
    model = train_attention.train_model(1)          # as the recorded run trains it
    answer, weights = train_attention.predict(model, "today ana has a pink kite. the kite is")
                                        # the answer's text, and (token, weight) for each token

The stories use the words of COLOURS, NAMES and OBJECTS; a story may use others, in lower case.
A story may have up to MAX_TOKENS = 128 tokens; a longer one is refused, naming the limit.
What it leaves out is colour_stories.py's: batches, dropout, normalization, a second layer.
"""

import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from attention import causal_mask
from common.cli import OneLineParser, guarded, save_view, show
from common.golden import to_json, write_or_check
from common.safe_io import read_text
from common.views import heatmaps_svg, panel, text_table, token_labels
from training.colour_stories import (COLOURS, LOSS_EVERY, MAX_TOKENS, NAMES, OBJECTS,
                                     RECORDED_SEEDS, SEED, STEPS, cannot_line, encode_question,
                                     held_out_table, make_tokenizer, predict, run, seed_row,
                                     seeds_header, seeds_line, stories, train_model)

__all__ = ["COLOURS", "NAMES", "OBJECTS", "train_model", "predict", "main"]   # from Python

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PATH = os.path.join(HERE, "training", "training-run.json")
FIGURE = os.path.join("training", "learned-attention.svg")   # the view --svg records


def run_seeds(seeds, steps=STEPS):
    """The records of several seeds, trained side by side on every core, in the order of seeds."""
    with ProcessPoolExecutor(max_workers=min(len(seeds), os.cpu_count() or 1)) as pool:
        yield from (record for record, _ in pool.map(run, seeds, [steps] * len(seeds)))


def summary(record, seconds):
    """Seed's run for a person: each held-out set beside both bigrams, the unseen-object question,
    the losses."""
    config, held_out = record["config"], record["held_out"]
    lines = [f"seed {config['seed']}: {config['steps']} steps in {seconds:.1f} s; held-out "
             f"stories answered with their colour, of {held_out['plain']['total']} each:", "",
             held_out_table(record)]
    unseen, after_is = record["unseen_object"], record["bigram_after_is"]
    lines += ["", f"after \" is\" the next-token bigram says {after_is['next token']!r}, "
                  f"the question bigram {after_is['question']!r}",
              f"asked about an object the story never mentions, the layer answers its first colour "
              f"in {unseen['first_colour_answers']} of {unseen['total']} stories:",
              f"  {unseen['question']!r} -> {unseen['answer']!r}",
              cannot_line(record),
              f"loss every {LOSS_EVERY} steps: "
              + " ".join(str(entry["mean_loss"]) for entry in record["losses"])]
    return "\n".join(lines) + "\n"


def weights_table(weights):
    """The question's weight on each token of a story, one line each, the largest marked."""
    top = max(range(len(weights)), key=lambda i: weights[i][1])
    return text_table(token_labels([token for token, _ in weights]), ["weight"],
                      [[w] for _, w in weights], marks={top: "◀ most weight"}) + "\n"


def example_svg(record):
    """The recorded example: every row's weights, the question's row outlined, choosing between the
    first sentence's colour and the distractor's."""
    example = record["example"]
    labels = token_labels(example["tokens"])
    weights = example["weights"]
    hatched = [[not ok for ok in row] for row in causal_mask(len(weights))]
    return heatmaps_svg(
        [panel("trained attention", labels, labels, weights, hatched,
               highlight=[len(labels) - 1], mark="◀ the question",
               subtitle=f"last row: {example['colour']} or {example['distractor']}? it answers "
                        f"{example['answer'].strip()}, after {record['config']['steps']} steps")],
        note=f"{example['story']!r}: the question is the last row")


def main(argv=None):
    parser = OneLineParser(description="Train the lesson's attention layer on the colour stories.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true",
                       help=f"record seeds 1…{RECORDED_SEEDS} in training-run.json")
    group.add_argument("--check", action="store_true",
                       help="fail unless seed 1 trains as training-run.json records")
    parser.add_argument("--all-seeds", action="store_true",
                        help=f"with --check: check seeds 2…{RECORDED_SEEDS} too")
    parser.add_argument("--steps", type=int, help=f"default {STEPS}")
    parser.add_argument("--seed", type=int, help=f"default {SEED}")
    parser.add_argument("--seeds", type=int, metavar="N", help="train seeds 1…N, a row each")
    parser.add_argument("--story", metavar="TEXT",
                        help=f"a story ending with its question (\"… the ball is\") to answer, "
                             f"of at most {MAX_TOKENS} tokens")
    parser.add_argument("--svg", metavar="FILE", help="draw the recorded figure")
    args = parser.parse_args(argv)
    given = [f"--{name}" for name in ("steps", "seed", "seeds", "story", "svg")
             if getattr(args, name) is not None]
    if (args.write or args.check) and given:
        parser.error(f"--write and --check record the default run: drop {', '.join(given)}")
    if args.all_seeds and not args.check:
        parser.error("--all-seeds goes with --check")
    if args.svg is not None and given != ["--svg"]:
        parser.error(f"--svg draws the recorded run: drop {', '.join(given[:-1])}")
    if args.seeds is not None and (args.seed is not None or args.story is not None):
        parser.error("--seeds trains seeds 1…N: drop --seed and --story")
    for name in ("steps", "seeds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1, got {getattr(args, name)}")
    return guarded(lambda: _run(args))


def _progress(step, loss):
    print(f"step {step}: loss {loss}", file=sys.stderr, flush=True)


def _run(args):
    seed = SEED if args.seed is None else args.seed
    steps = STEPS if args.steps is None else args.steps
    if args.svg is not None:
        save_view(args.svg, example_svg(_recorded()["run"]), FIGURE)
    elif args.write or args.check:
        return _write_or_check(args.write, args.all_seeds)
    elif args.seeds is not None:
        show(seeds_header())
        for record in run_seeds(list(range(1, args.seeds + 1)), steps):
            show(seeds_line(seed_row(record)))
    elif args.story is not None:
        encode_question(make_tokenizer(stories(seed)[0]), args.story)   # refused before training
        answer, weights = predict(train_model(seed, steps, _progress), args.story)
        show(f"answer: {answer!r}\nthe question's weight on each token:\n"
             + weights_table(weights))
    else:
        record, seconds = run(seed, steps, _progress)
        show(summary(record, seconds))
    return 0


def _recorded():
    """training-run.json as written by --write: the run of seed 1 and a row for each seed. Raises
    ValueError when it is not."""
    try:
        recorded = json.loads(read_text(RUN_PATH))
    except json.JSONDecodeError as e:
        raise ValueError(f"training-run.json is not valid JSON ({e}): run --write") from None
    if (not isinstance(recorded, dict) or not isinstance(recorded.get("run"), dict)
            or not isinstance(recorded.get("seeds"), list)
            or len(recorded["seeds"]) != RECORDED_SEEDS):
        raise ValueError(f"training-run.json must hold the run of seed 1 and {RECORDED_SEEDS} "
                         f"seeds' rows: run --write")
    return recorded


def _write_or_check(write, all_seeds):
    if write or all_seeds:
        records = list(run_seeds(list(range(1, RECORDED_SEEDS + 1))))
        rows = [seed_row(record) for record in records]
    else:   # seed 1 alone: the rows of the other seeds as recorded
        recorded_rows = _recorded()["seeds"]
        records = [run(SEED, STEPS, _progress)[0]]
        rows = [seed_row(records[0])] + recorded_rows[1:]
    status = write_or_check(to_json({"run": records[0], "seeds": rows}), RUN_PATH, write, not write)
    if status == 0 and not (write or all_seeds):
        print(f"(seed {SEED} trained again; seeds 2…{RECORDED_SEEDS} as recorded: "
              f"--check --all-seeds trains them too)")
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Why attention: train the lesson's layer on the colour stories (training/README.md), and ask
what it learned. Run from the top folder:

    python3 train_attention.py                        train seed 1 and print its run
    python3 train_attention.py --story "mia has a red ball. the ball is"    its answer and weights
    python3 train_attention.py --write                record every run (minutes); --check
    python3 train_attention.py --story TEXT --block 4      (or --ablate-value 4, --export FILE)
    python3 train_attention.py --patch CLEAN --into CORRUPTED         activation patching
    python3 train_attention.py --induction            two layers set by hand; no training
    python3 train_attention.py --layers 2             two layers, layer 1 given (minutes)
    python3 train_attention.py --from-scratch         both layers from scratch (over an hour)

--help lists the rest. From Python: train_model, predict, recorded_model, intervene and patch.
A story may have up to MAX_TOKENS = 128 tokens; a longer one is refused, naming the limit.
What the one-layer model leaves out: batches, dropout, normalization, a second layer.
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import (OneLineParser, check_outputs, check_stdout, fail, guarded, integer,
                        note, save_view, show)
import argparse
import os
import signal
import sys
from concurrent.futures import ProcessPoolExecutor

from attention import attention_forward, causal_mask
from common.export import export_text
from common.golden import rounded, to_json, write_or_check
from common.safe_io import STOPPING, read_json, stopping, write_atomic
from common.views import heatmaps_svg, numbered_labels, panel, text_table, token_labels
from training.model import embed, layer, predict as predict_one_layer
from training.stories import (COLOURS, MAX_TOKENS, NAMES, OBJECTS, encode_question, stories,
                              training_tokenizer)
from training.tables import (cannot_line, held_out_table, seed_row, seeds_header,
                             seeds_line, two_layer_table)
from training.train import LOSS_EVERY, RECORDED_SEEDS, SEED, STEPS, measure, run
from training.train import train_model as train_one_layer
from training import from_scratch, given_layer, induction, two_layers
from training.interventions import (evidence, intervene, intervention_table, patch,
                                    patch_svg, patch_table)
from training.recorded_model import model_from_record, model_record, read_model
from training.rule import rule_record

__all__ = ["COLOURS", "NAMES", "OBJECTS", "train_model", "predict", "recorded_model",
           "intervene", "patch", "main"]   # from Python

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PATH = os.path.join(HERE, "training", "training-run.json")
MODEL_PATH = os.path.join(HERE, "training", "trained-model.json")
EVIDENCE_PATH = os.path.join(HERE, "training", "interventions-run.json")
RULE_PATH = os.path.join(HERE, "training", "rule-run.json")
FIGURE = os.path.join("training", "learned-attention.svg")   # the view --svg records
TWO_RUN_PATH = os.path.join(HERE, "training", "two-layer-run.json")
TWO_MODEL_PATH = os.path.join(HERE, "training", "two-layer-model.json")
SCRATCH_RUN_PATH = os.path.join(HERE, "training", "from-scratch-run.json")

MAX_SEEDS = 1000          # --seeds N: N at most this (each seed trains for seconds)
MAX_STEPS = 1_000_000     # --steps: at most this (over an hour at a few ms a step)


def _run_keeping_model(seed, steps):
    """A seed's record and its model's: what a process of the pool sends back."""
    model = train_model(seed, steps)
    return measure(model, seed, steps), model_record(model, seed, steps)


HELD = (signal.SIGINT, *STOPPING)       # held while the pool starts (where the system can)
_sigmask = getattr(signal, "pthread_sigmask", lambda how, signals: None)    # none on Windows


def _worker_signals():
    """A worker ignores Ctrl-C (the main process's alone) and ends on a terminate; under nohup
    it goes on ignoring SIGHUP."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for stop in stopping():
        signal.signal(stop, signal.SIG_DFL)
    _sigmask(signal.SIG_UNBLOCK, HELD)


def run_seeds(seeds, steps=STEPS, models=None):
    """The records of seeds trained by _pooled, in order; models, a dict, gets each model_record."""
    results = _pooled(_run_keeping_model, seeds, [steps] * len(seeds))
    for seed, (record, model) in zip(seeds, results):
        if models is not None:
            models[seed] = model
        yield record


def _pooled(work, *arguments, workers=None):
    """work(*each) for each of zip(*arguments), in order, on every core (at most workers): Ctrl-C,
    SIGTERM or SIGHUP (but under nohup) stops the workers with the pool, and the work under way."""
    count = min(len(arguments[0]), workers or os.cpu_count() or 1)
    pool = ProcessPoolExecutor(max_workers=count, initializer=_worker_signals)
    before = {stop: signal.signal(stop, signal.default_int_handler) for stop in stopping()}
    try:
        # HELD waits until the pool has started whole: stopped while it starts, it cannot shut down
        _sigmask(signal.SIG_BLOCK, HELD)
        try:
            results = pool.map(work, *arguments)
        finally:
            _sigmask(signal.SIG_UNBLOCK, HELD)
        yield from results
    except BaseException:       # Ctrl-C or an error: the seeds under way are stopped, not awaited
        for process in getattr(pool, "_processes", {}).values():  # no public way before 3.14
            process.terminate()
        # the pool's own thread must end before the interpreter does: else its exit hook can
        # write to a pipe that thread is closing, and print a traceback after the error line
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        for stop, handler in before.items():
            signal.signal(stop, handler)


def train_model(seed=SEED, steps=STEPS, progress=None, layers=1):
    """train.train_model's model, or given_layer.train_model's for layers=2 (steps unused)."""
    return (given_layer.train_model(seed, progress=progress) if _layers(layers) == 2
            else train_one_layer(seed, steps, progress))


def _layers(layers):
    """layers, 1 or 2 (ValueError if it is neither)."""
    if layers not in (1, 2):
        raise ValueError(f"layers must be 1 or 2, got {layers!r}")
    return layers


def predict(model, text):
    """(answer, weights): model.predict's, or given_layer.predict's for a two-layer model."""
    two = isinstance(model, dict) and model.get("layers") == 2
    return (given_layer.predict if two else predict_one_layer)(model, text)


def recorded_model(layers=1):
    """train_model(SEED, layers=layers), bit for bit, read from trained-model.json or, for
    layers=2, two-layer-model.json (ValueError if it is not, or layers is neither 1 nor 2)."""
    return (given_layer.read_model(TWO_MODEL_PATH) if _layers(layers) == 2
            else read_model(MODEL_PATH))


def story_attention(model, text):
    """The export of every row's weights on a story: attention[1][1][T][T], or [2][1][T][T] for
    the two-layer model (layer 1's given weights, then layer 2's on x1)."""
    ids = encode_question(model["tokenizer"], text)
    params = model["params"]
    if model.get("layers") == 2:
        x1 = two_layers.forward(params, ids)["x1"]
        maps = [[two_layers.given_weights(len(ids))],
                [attention_forward(two_layers.layer(params, 2), x1)["weights"]]]
    else:
        maps = [[attention_forward(layer(params), embed(params, ids))["weights"]]]
    return export_text([model["tokenizer"].vocab[t] for t in ids], maps)


def summary(record, seconds):
    """A run's record for a person: held_out_table, the bigrams, what one layer cannot do."""
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
    return text_table(numbered_labels([t for t, _ in weights]), ["weight"],
                      [[w] for _, w in weights], marks={top: "◀ most weight"}) + "\n"


def example_svg(record):
    """The recorded example's weights, every row, the question's outlined."""
    example = record["example"]
    labels = token_labels(example["tokens"])
    hatched = [[not ok for ok in row] for row in causal_mask(len(labels))]
    return heatmaps_svg(
        [panel("trained attention", labels, labels, example["weights"], hatched,
               highlight=[len(labels) - 1], mark="◀ the question",
               subtitle=f"last row: {example['colour']} or {example['distractor']}? it answers "
                        f"{example['answer'].strip()}, after {record['config']['steps']} steps")],
        note=f"{example['story']!r}: the question is the last row")


def main(argv=None):
    parser = OneLineParser(description="Train the lesson's attention layer on the colour stories.")
    group, add = parser.add_mutually_exclusive_group(), parser.add_argument
    group.add_argument("--write", action="store_true",
                       help=f"record seeds 1…{RECORDED_SEEDS} in training-run.json, and seed 1's "
                            f"model, interventions and rule")
    group.add_argument("--check", action="store_true",
                       help="fail unless seed 1 trains as training-run.json records")
    add("--all-seeds", action="store_true",
        help=f"with --check: check seeds 2…{RECORDED_SEEDS} too")
    add("--steps", type=integer, help=f"default {STEPS}, at most {MAX_STEPS}")
    add("--seed", type=integer, help=f"default {SEED}")
    add("--seeds", type=integer, metavar="N",
        help=f"train seeds 1…N, a row each (N at most {MAX_SEEDS})")
    add("--story", metavar="TEXT", help=f"a story ending with its question (\"… the ball is\") to "
                                        f"answer, of at most {MAX_TOKENS} tokens")
    add("--block", metavar="N[,M…]", type=_positions, action="extend",
        help="with --story: the question may no longer read these tokens (from 1); the rest "
             "renormalised; may be repeated")
    add("--ablate-value", metavar="N", type=integer, action="append",
        help="with --story: token N's value becomes zeros, nothing renormalised")
    add("--patch", metavar="CLEAN", help="activation patching: the clean story, put into --into's")
    add("--into", metavar="CORRUPTED", help="with --patch: the corrupted story, of as many tokens")
    add("--json", action="store_true", help="with --story or --patch: print JSON")
    add("--export", metavar="FILE", help="write the layer's map on --story (default: the figure's "
                                         "story) as {tokens, attention} for CircuitsVis or bertviz")
    add("--svg", metavar="FILE", help="draw the recorded figure; with --patch, the patching "
                                      "heatmap; with --induction, both layers' maps")
    add("--induction", action="store_true", help="the induction circuit set by hand, on a repeated "
                                                 "sequence drawn with --seed: its four figures")
    add("--layers", type=integer, default=1,
        help="2: the two-layer model, its layer 1 given (a previous-token head set by hand), "
             "everything else trained")
    add("--from-scratch", action="store_true",
        help="both layers learned from scratch, layer 1 from place alone with a next-token loss: "
             "train --seed, or with --write seeds 1…3 (--write --seed N: N alone, kept beside "
             "the record's others)")
    args = parser.parse_args(argv)
    if args.ablate_value is not None:
        if len(args.ablate_value) > 1:
            parser.error(f"--ablate-value zeroes one token's value: give it once, got "
                         f"{', '.join(map(str, args.ablate_value))}")
        args.ablate_value = args.ablate_value[0]
    given = [f"--{name.replace('_', '-')}" for name in
             ("steps", "seed", "seeds", "story", "block", "ablate_value", "patch", "into",
              "export", "svg") if getattr(args, name) is not None] + ["--json"] * args.json
    answering = [flag for flag in given if flag in ("--story", "--patch", "--export")]
    not_two_layer = ["--induction"] * args.induction + ["--all-seeds"] * args.all_seeds
    try:
        _layers(args.layers)
    except ValueError as e:
        parser.error(f"--{e}")
    if args.from_scratch:
        dropped = ([f for f in given if f != "--seed" or args.check]
                   + ["--layers"] * (args.layers != 1) + not_two_layer)
        if dropped:
            parser.error(f"--from-scratch trains seed --seed, records seeds 1…3 (or --seed) "
                         f"with --write or checks their record with --check: drop "
                         f"{', '.join(dropped)}")
    if args.layers == 2:
        dropped = [f for f in given if f in ("--steps", "--seeds") or f == "--svg" and args.patch
                   is None or f == "--seed" and answering] + not_two_layer
        if dropped:
            parser.error(f"--layers 2 takes no --steps, --seeds, --induction or --all-seeds, "
                         f"--svg only with --patch, and --seed only to train (it answers from "
                         f"the recorded seed 1): drop {', '.join(dropped)}")
    if args.induction:
        dropped = (["--write"] * args.write + ["--check"] * args.check + ["--all-seeds"]
                   * args.all_seeds + [f for f in given if f not in ("--seed", "--svg", "--json")])
        if dropped:
            parser.error(f"--induction sets its weights by hand and draws its own sequence: "
                         f"drop {', '.join(dropped)}")
        return guarded(lambda: _induction(args))
    again = args.write and (args.layers == 2 or args.from_scratch)   # --seed: one seed again
    if (args.write or args.check) and (dropped := [f for f in given if f != "--seed" or not again]):
        parser.error(f"--write and --check record the default run: drop {', '.join(dropped)}")
    if args.all_seeds and not args.check:
        parser.error("--all-seeds goes with --check")
    if args.svg is not None and args.patch is None and given != ["--svg"]:
        parser.error(f"--svg draws the recorded run: drop {', '.join(given[:-1])}")
    if args.seeds is not None and (args.seed is not None or answering):
        parser.error(f"--seeds trains seeds 1…N: drop "
                     f"{', '.join(['--seed'] * (args.seed is not None) + answering)}")
    if (args.block is not None or args.ablate_value is not None) and args.story is None:
        parser.error("--block and --ablate-value change the question's run on one story: "
                     + ("they do not go with --patch" if args.patch is not None
                        else "add --story TEXT"))
    if (args.patch is None) != (args.into is None):
        parser.error("--patch CLEAN and --into CORRUPTED go together")
    if args.patch is not None and args.story is not None:
        parser.error("--patch compares two stories of its own: drop --story")
    if args.export is not None and (args.patch is not None or args.block is not None
                                    or args.ablate_value is not None or args.json):
        parser.error("--export writes the layer's map of one story: drop --patch, --block, "
                     "--ablate-value and --json")
    if args.json and not (args.story is not None or args.patch is not None):
        parser.error("--json goes with --story or --patch")
    for name, limit in (("steps", MAX_STEPS), ("seeds", MAX_SEEDS)):
        if (value := getattr(args, name)) is not None and not 1 <= value <= limit:
            parser.error(f"--{name} must be at {'least 1' if value < 1 else f'most {limit}'}, "
                         f"got {value}")
    return guarded(lambda: (_two_layers if args.layers == 2 or args.from_scratch else _run)(args))


def _positions(text):
    """--block's argument: positions from 1, separated by commas ("4" or "4,10")."""
    try:
        return [integer(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--block takes positions counted from 1, such as 4 or "
                                         f"4,10, got {text!r}") from None


def _progress(step, loss):
    note(f"step {step}: loss {loss}")


def _run(args):
    check_stdout()          # every run prints; a closed standard output is said before training
    seed = SEED if args.seed is None else args.seed
    steps = STEPS if args.steps is None else args.steps
    figure = args.story is None and args.patch is None and args.export is None
    check_outputs([("--svg", args.svg, FIGURE if figure else None),
                   ("--export", args.export, None)])
    if args.write or args.check:
        status = _write_or_check(args.write, args.all_seeds)
        return _check_two_layers() if args.check and status == 0 else status
    if args.seeds is not None:
        show(seeds_header())
        for record in run_seeds(list(range(1, args.seeds + 1)), steps):
            show(seeds_line(seed_row(record)))
        return 0
    if figure:
        if args.svg is not None:
            try:
                svg = example_svg(_recorded()["run"])
            except (KeyError, TypeError, ValueError) as e:    # a record that is no run's
                raise ValueError(f"training-run.json does not hold the recorded run's example "
                                 f"({type(e).__name__}: {e}): run --write") from None
            save_view(args.svg, svg, FIGURE)
            return 0
        show(summary(*run(seed, steps, _progress)))
        return 0
    if seed == SEED and steps == STEPS:
        return _answer(args, recorded_model())
    for text in (args.story, args.patch, args.into):
        if text is not None:
            encode_question(training_tokenizer(), text)       # refused before training
    return _answer(args, train_model(seed, steps, _progress))


def _answer(args, model):
    """--export, --patch, --block and --ablate-value, or --story, on model (either model)."""
    two = model.get("layers") == 2
    given = f"({given_layer.GIVEN})\n" if two and not args.json else ""
    whose = "layer 2's" if two else "the question's"
    if args.export is not None:
        text = args.story if args.story is not None else _recorded()["run"]["example"]["story"]
        save_view(args.export, story_attention(model, text), None)
    elif args.patch is not None:
        result = patch(model, args.patch, args.into)
        if args.svg is not None:     # said on standard error when standard output is JSON
            save_view(args.svg, patch_svg(result), None, say=note if args.json else None)
        show(to_json(rounded(result, 4)) if args.json else given + patch_table(result))
    elif args.block is not None or args.ablate_value is not None:
        before, after = intervene(model, args.story, args.block or (), args.ablate_value)
        marks = {n - 1: "◀ blocked" for n in args.block or ()}
        if args.ablate_value is not None:
            marks[args.ablate_value - 1] = marks.get(args.ablate_value - 1, "◀") + " value zeroed"
        show(to_json({name: after[name] for name in ("answer", "tokens", "weights")})
             if args.json else given + intervention_table(before, after, marks, whose))
    else:
        answer, weights = predict(model, args.story)
        show(to_json({"answer": answer, "tokens": [t for t, _ in weights],
                      "weights": [w for _, w in weights]}) if args.json else given
             + f"answer: {answer!r}\n{whose} weight on each token:\n" + weights_table(weights))
    return 0


def _induction(args):
    """--induction: the four figures of the circuit on --seed's sequence, and its maps in --svg."""
    check_stdout()
    check_outputs([("--svg", args.svg, None)])
    found, run, _ = induction.measure(SEED if args.seed is None else args.seed)
    if args.svg is not None:    # said on standard error when standard output is JSON
        save_view(args.svg, induction.maps_svg(found, run), None, say=note if args.json else None)
    show(to_json(found) if args.json else induction.table(found))
    return 0


def _two_layer_seed(seed, scratch=False):
    """(record, prefix, model record) of a seed's two-layer run (scratch: both layers learned)."""
    record, model = given_layer.run(seed, progress=lambda stories, loss: note(
        f"seed {seed}, {stories} stories: loss {loss}"), way=from_scratch if scratch else None)
    return record, model["prefix"], given_layer.model_record(model, seed)


def _two_layers(args):
    """--layers 2 or --from-scratch: answer from the recorded model, check, train or record all."""
    check_stdout()
    if args.story is not None or args.export is not None or args.patch is not None:
        check_outputs([("--export", args.export, None), ("--svg", args.svg, None)])
        return _answer(args, recorded_model(layers=2))
    scratch = args.from_scratch
    path = SCRATCH_RUN_PATH if scratch else TWO_RUN_PATH
    if args.check:
        return _check_two_layers([(path, from_scratch if scratch else None)])
    if not args.write:
        record = _two_layer_seed(SEED if args.seed is None else args.seed, scratch)[0]
        show(f"({from_scratch.LEARNED if scratch else given_layer.GIVEN})\n" + two_layer_table(
            [record], ("from scratch",) if scratch else ("two layers", "one layer")))
        return 0
    same = {"batch": given_layer.BATCH, "learning_rate": given_layer.LEARNING_RATE}
    header = ({"learned": from_scratch.LEARNED, **same, "rates": from_scratch.RATES,
               "places": from_scratch.PLACES} if scratch else {"given": given_layer.GIVEN, **same})
    header.update(d_model=given_layer.D_MODEL, d_head=given_layer.D_HEAD)
    seeds, records, prefix = given_layer.SEEDS, [], None
    if args.seed is not None:     # one seed again, beside the record's others: a run resumed
        if args.seed not in seeds:
            raise ValueError(f"--write --seed records one of seeds 1…3, not {args.seed}")
        (old, then), seeds = _two_layer_run(path, scratch), [args.seed]
        rows = old.get("seeds")
        if {key: old.get(key) for key in header} != header or not (
                isinstance(rows, list) and all(isinstance(r, dict) and "seed" in r for r in rows)):
            raise ValueError(f"{os.path.basename(path)} is not a run recorded this way: {then}")
        records, prefix = [r for r in rows if r["seed"] != args.seed], old.get("prefix")
    for record, trained, model in _pooled(_two_layer_seed, seeds, [scratch] * len(seeds),
                                          workers=3 if scratch else 2):
        # each recorded as it ends: a run stopped keeps them
        records = sorted(records + [record], key=lambda row: row["seed"])
        if record["seed"] == SEED:
            prefix = trained
            if not scratch:
                write_atomic(TWO_MODEL_PATH, to_json(model))
        write_atomic(path, to_json({**header, "prefix": prefix, "seeds": records}))
        show(f"wrote seed {record['seed']} in {os.path.basename(path)}\n")
    return 0


def _two_layer_run(path, scratch):
    """(the two-layer run recorded at path, what to run when it is wrong): --layers 2's, or
    --from-scratch's."""
    then = f"run {'--from-scratch' if scratch else '--layers 2'} --write"
    return read_json(path, "a recorded two-layer run", then=then), then


def _check_two_layers(runs=((TWO_RUN_PATH, None), (SCRATCH_RUN_PATH, from_scratch))):
    """--check of two-layer-run.json and from-scratch-run.json (or of runs, (path, way) pairs,
    way None for layer 1 given): the first given_layer.PREFIX batches of each trained again."""
    for path, way in runs:
        (whole, then), name = _two_layer_run(path, way is not None), os.path.basename(path)
        recorded = whole.get("prefix")
        if not isinstance(recorded, dict) or "seed" not in recorded:
            raise ValueError(f"{name} holds no recorded prefix: {then}")
        fresh = given_layer.train_model(recorded["seed"], batches=given_layer.PREFIX,
                                        way=way)["prefix"]
        first = f"{name}'s first {fresh['stories']} stories of seed {fresh['seed']}"
        if fresh != recorded:
            return fail(f"{first} differ from a fresh run: {then}")
        show(f"{first} trained again, bit for bit ({way.LEARNED if way else given_layer.GIVEN})\n")
    return 0


def _recorded():
    """training-run.json as written by --write (ValueError when it is not)."""
    recorded = read_json(RUN_PATH, "the recorded training run", then="run --write")
    if not (isinstance(recorded.get("run"), dict) and isinstance(recorded.get("seeds"), list)
            and len(recorded["seeds"]) == RECORDED_SEEDS):
        raise ValueError(f"training-run.json must hold the run of seed 1 and {RECORDED_SEEDS} "
                         f"seeds' rows: run --write")
    return recorded


def _write_or_check(write, all_seeds):
    """--write or --check of the default run's four records, found below."""
    if write or all_seeds:
        models, recorded_rows = {}, []
        records = list(run_seeds(list(range(1, RECORDED_SEEDS + 1)), models=models))
        model = model_from_record(models[SEED])
    else:   # seed 1 alone: the rows of the other seeds as recorded
        recorded_rows = _recorded()["seeds"][1:]
        model = train_model(SEED, STEPS, _progress)
        records = [measure(model, SEED, STEPS)]
    found = {RUN_PATH: {"run": records[0], "seeds": [seed_row(r) for r in records] + recorded_rows},
             MODEL_PATH: model_record(model, SEED, STEPS),
             EVIDENCE_PATH: evidence(model, stories(SEED)[1]), RULE_PATH: rule_record(model, SEED)}
    status = max([write_or_check(to_json(record), path, write, not write)
                  for path, record in found.items()])
    if status == 0 and not (write or all_seeds):
        show(f"(seed {SEED} trained again; seeds 2…{RECORDED_SEEDS} as recorded: "
             f"--check --all-seeds trains them too)\n")
    return status


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""Why attention: train the lesson's layer on the task the lesson opens with.

A story names a colour in its first sentence and asks for it back in its last:

    one day, mia has a big red ball. tom sees a dog. the ball is red.

A bigram model reads one token back: after " is" it can only guess. The attention layer can look
back to the first sentence, and after training it does. This script trains it, in pure Python,
with the gradients of attention_backward, and scores it against the bigram on held-out stories.

    python3 train_attention.py                 train and print the run (about 10 s)
    python3 train_attention.py --write         record it in training-run.json
    python3 train_attention.py --check         fail unless training-run.json matches a fresh run
    python3 train_attention.py --seeds 10      train with seeds 1…10 and print their accuracy
    python3 train_attention.py --svg FILE      draw the trained layer's weights on a test story

The model, for a story of T tokens:

    x      = E[ids] + P[0…T−1]                 token embedding + position embedding, (T, d_model)
    out    = attention_forward(params, x)      the lesson's causal layer, unchanged
    h      = x + out                           a residual
    logits = h[T−1]·U                          (V,): a score for every token after the last one
    loss   = −log softmax(logits)[colour]      the prompt ends "the ball is": the answer is next

Its gradients: attention_backward for Wq, Wk, Wv, Wo and x, and a few lines below for E, P and U.
Adam updates every parameter, with a learning rate that falls linearly to 0.

The tokenizer is trained on the stories with bpe.train until no pair is left, so every word with its
leading space is one token and the colour is one prediction; the lesson's tokenizer.json cuts some
colours ("yellow", "purple") into several tokens, and one greedy prediction could not name them.

What it leaves out: batches (one story per step), dropout, layer normalization, a second layer.
"""

import math
import os
import random
import sys
import time
from collections import Counter, defaultdict
from math import fsum
from operator import mul

from attention import attention_backward, attention_forward, init_attention, matmul
from bpe import train as train_tokenizer
from cli import OneLineParser, guarded, save_view, show
from golden import rounded, to_json, write_or_check
from views import heatmaps_svg, panel, token_labels

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_PATH = os.path.join(HERE, "training-run.json")

SEED = 1
D_MODEL, D_HEAD = 16, 8
STEPS = 1500                   # one story per step
LEARNING_RATE = 0.01           # Adam's, falling linearly to 0 at the last step
BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
INIT_SCALE = 0.3               # token embedding and unembedding from uniform(−0.3, 0.3)
TRAIN_STORIES, TEST_STORIES = 1000, 60
LOSS_EVERY = 100               # steps between two recorded losses
PROGRESS_EVERY = 500           # steps between two progress lines on stderr

COLOURS = ["red", "blue", "green", "yellow", "pink", "brown", "black", "white"]
NAMES = ["mia", "tom", "sam", "lily", "max", "zoe", "ben", "ana"]
OBJECTS = ["ball", "hat", "kite", "cup", "car", "box", "sock", "bike"]
OPENERS = ["", "", "one day, ", "today ", "look! "]
ADJECTIVES = ["", "", "big ", "small ", "new "]
FILLERS = ["{name} likes to play.", "the sun is hot.", "{name} runs to the park.",
           "{name} sees a dog.", "it is a nice day.", "{name} has a {object} too.",
           "they sing a song.", "{name} is happy."]
SHIFT = "they play in the sun."   # the sentence put before the first one in the shifted test


# ---- the stories ------------------------------------------------------------------------------

def story(rng):
    """(text, colour): a first sentence that names a colour, 0 to 3 fillers, and a last sentence
    that asks for it back. The colour's place varies with the opener, adjective and word order."""
    name, colour, thing = rng.choice(NAMES), rng.choice(COLOURS), rng.choice(OBJECTS)
    adjective = rng.choice(ADJECTIVES)
    if rng.random() < 0.75:
        first = f"{rng.choice(OPENERS)}{name} has a {adjective}{colour} {thing}."
    else:
        first = f"{rng.choice(OPENERS)}the {adjective}{thing} of {name} is {colour}."
    fillers = [rng.choice(FILLERS).format(name=rng.choice(NAMES), object=rng.choice(OBJECTS))
               for _ in range(rng.randint(0, 3))]
    return " ".join([first] + fillers + [f"the {thing} is {colour}."]), colour


def stories(seed):
    """(train, test, shifted): TRAIN_STORIES training stories and TEST_STORIES test stories, none of
    them in the training set, and the test stories again with SHIFT before them."""
    rng = random.Random(seed)
    train = [story(rng) for _ in range(TRAIN_STORIES)]
    seen = {text for text, _ in train}
    test = []
    while len(test) < TEST_STORIES:
        text, colour = story(rng)
        if text not in seen:
            seen.add(text)
            test.append((text, colour))
    shifted = [(f"{SHIFT} {text}", colour) for text, colour in test]
    return train, test, shifted


def question(ids):
    """(prompt, answer): a story's ids up to " is" in its last sentence, and the colour's id."""
    return ids[:-2], ids[-2]    # the story ends with " red", "."


# ---- the bigram baseline ----------------------------------------------------------------------

def bigram(train_ids):
    """For each token, the token that most often came next in the training stories (the smallest
    id on a tie): all a model that reads one token back can know."""
    counts = defaultdict(Counter)
    for ids in train_ids:
        for prev, nxt in zip(ids, ids[1:]):
            counts[prev][nxt] += 1
    return {prev: min(after, key=lambda t: (-after[t], t)) for prev, after in counts.items()}


def bigram_score(next_token, tokenizer, tests):
    """How many of the stories the bigram answers with their colour."""
    correct = 0
    for text, _ in tests:
        prompt, answer = question(tokenizer.encode(text))
        correct += next_token.get(prompt[-1]) == answer
    return {"correct": correct, "total": len(tests)}


# ---- the model --------------------------------------------------------------------------------

def init_model(vocab_size, max_len, seed):
    """E (V, d_model) and U (d_model, V) from uniform(−INIT_SCALE, INIT_SCALE), P (max_len,
    d_model) at zero, and the attention layer's Wq, Wk, Wv, Wo from init_attention.

    P starts at zero, so at first every position looks alike and the layer must find the colour by
    what it is; training adds what position it needs. Drawn as large as E, P let the layer learn
    where the colour usually stands: seed 1 then answered 60 of 60 stories but only 44 of the
    shifted ones."""
    rng = random.Random(seed)

    def draw(rows, cols):
        return [[rng.uniform(-INIT_SCALE, INIT_SCALE) for _ in range(cols)] for _ in range(rows)]

    model = {"E": draw(vocab_size, D_MODEL), "P": [[0.0] * D_MODEL for _ in range(max_len)],
             "U": draw(D_MODEL, vocab_size)}
    model.update(init_attention(D_MODEL, D_HEAD, seed))
    return model


def forward(model, ids):
    """Every intermediate of the model on a prompt: x, the attention cache, h, and the logits of
    the token after the last one."""
    x = [[e + p for e, p in zip(model["E"][t], model["P"][i])] for i, t in enumerate(ids)]
    cache = attention_forward(model, x)
    h = [[a + b for a, b in zip(x_i, out_i)] for x_i, out_i in zip(x, cache["out"])]
    return {"x": x, "cache": cache, "h": h, "logits": matmul([h[-1]], model["U"])[0]}


def log_softmax(row):
    """log softmax(row), computed as (row − max) − log Σ exp(row − max), so that no exp overflows
    and no log sees 0."""
    top = max(row)
    log_total = math.log(fsum(math.exp(s - top) for s in row))
    return [s - top - log_total for s in row]


def loss_and_grads(model, prompt, answer):
    """−log softmax(logits)[answer] on one prompt, and its gradient for every parameter."""
    fw = forward(model, prompt)      # x, cache, h, logits
    logp = log_softmax(fw["logits"])
    loss = -logp[answer]
    d_logits = [math.exp(v) for v in logp]          # d loss / d logits = softmax − one-hot
    d_logits[answer] -= 1.0
    # forward: logits = h[T−1]·U; only the last position reaches the loss
    grads = {"U": [[h_c * d for d in d_logits] for h_c in fw["h"][-1]]}
    d_h = [[0.0] * D_MODEL for _ in prompt]
    d_h[-1] = [fsum(map(mul, u_row, d_logits)) for u_row in model["U"]]
    # forward: h = x + out, out = attention_forward(params, x)
    attention_grads, d_x_attention = attention_backward(model, fw["x"], fw["cache"], d_h)
    grads.update(attention_grads)
    d_x = [[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(d_h, d_x_attention)]
    # forward: x_i = E[prompt[i]] + P[i]
    grads["E"] = [[0.0] * D_MODEL for _ in model["E"]]
    grads["P"] = [[0.0] * D_MODEL for _ in model["P"]]
    for i, (t, d_row) in enumerate(zip(prompt, d_x)):
        grads["E"][t] = [g + d for g, d in zip(grads["E"][t], d_row)]
        grads["P"][i] = d_row
    return loss, grads


class Adam:
    """Adam with the learning rate falling linearly from LEARNING_RATE to 0 over STEPS."""

    def __init__(self, model, steps):
        self.steps, self.t = steps, 0
        self.m = {name: [[0.0] * len(row) for row in m] for name, m in model.items()}
        self.v = {name: [[0.0] * len(row) for row in m] for name, m in model.items()}

    def step(self, model, grads):
        self.t += 1
        lr = LEARNING_RATE * (1 - (self.t - 1) / self.steps)
        b1, b2 = BETAS
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for name, g in grads.items():
            for w_row, g_row, m_row, v_row in zip(model[name], g, self.m[name], self.v[name]):
                m_row[:] = [b1 * m + (1 - b1) * grad for m, grad in zip(m_row, g_row)]
                v_row[:] = [b2 * v + (1 - b2) * grad * grad for v, grad in zip(v_row, g_row)]
                w_row[:] = [w - lr * (m / c1) / (math.sqrt(v / c2) + ADAM_EPS)
                            for w, m, v in zip(w_row, m_row, v_row)]


def predict(model, prompt):
    """The model's greedy next token after prompt."""
    logits = forward(model, prompt)["logits"]
    return max(range(len(logits)), key=lambda t: (logits[t], -t))


def score(model, tokenizer, tests):
    """How many of the stories the model answers with their colour."""
    correct = 0
    for text, colour in tests:
        prompt, answer = question(tokenizer.encode(text))
        correct += predict(model, prompt) == answer
    return {"correct": correct, "total": len(tests)}


# ---- training and the recorded run ------------------------------------------------------------

def run(seed=SEED, steps=STEPS, progress=None):
    """Train from seed for steps and return everything the run records, in training-run.json's
    order. progress(step, loss) is called every PROGRESS_EVERY steps when given."""
    train, test, shifted = stories(seed)
    # every word of every story, with its leading space, becomes one token
    tokenizer = train_tokenizer("\n".join(text for text, _ in train + test + shifted), 10_000)
    train_ids = [tokenizer.encode(text) for text, _ in train]
    questions = [question(ids) for ids in train_ids]
    max_len = max(len(tokenizer.encode(text)) for text, _ in train + test + shifted)
    model = init_model(len(tokenizer.vocab), max_len, seed)
    adam = Adam(model, steps)
    order = random.Random(seed + 1)
    losses, recent = [], []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        loss, grads = loss_and_grads(model, *order.choice(questions))
        adam.step(model, grads)
        recent.append(loss)
        if step % LOSS_EVERY == 0:
            losses.append({"step": step, "mean_loss": round(fsum(recent) / len(recent), 4)})
            recent = []
        if progress and step % PROGRESS_EVERY == 0:
            progress(step, losses[-1]["mean_loss"] if losses else loss)
    seconds = time.perf_counter() - start

    example = test[0][0]
    return {
        "config": {"seed": seed, "steps": steps, "d_model": D_MODEL, "d_head": D_HEAD,
                   "learning_rate": LEARNING_RATE, "train_stories": TRAIN_STORIES,
                   "vocab_size": len(tokenizer.vocab), "colours": COLOURS},
        "bigram": bigram_score(bigram(train_ids), tokenizer, test),
        "attention": score(model, tokenizer, test),
        "shifted": score(model, tokenizer, shifted),
        "weight_on_colour": round(weight_on_colour(model, tokenizer, test), 4),
        "losses": losses,
        "example": learned_weights(model, tokenizer, example),
        "seconds": seconds,
    }


def weight_on_colour(model, tokenizer, tests):
    """The mean weight the last position of each prompt puts on the first sentence's colour."""
    total = []
    for text, colour in tests:
        prompt, answer = question(tokenizer.encode(text))
        weights = forward(model, prompt)["cache"]["weights"][-1]
        total.append(weights[prompt.index(answer)])
    return fsum(total) / len(total)


def learned_weights(model, tokenizer, text):
    """The trained layer's weights on the prompt of one story, with its tokens."""
    prompt, _ = question(tokenizer.encode(text))
    return {"story": text, "tokens": [tokenizer.vocab[t] for t in prompt],
            "weights": rounded(forward(model, prompt)["cache"]["weights"], 4)}


def as_recorded(result):
    """The run as training-run.json keeps it: everything but the time it took."""
    return {key: value for key, value in result.items() if key != "seconds"}


def summary(result):
    """The run for a person: accuracy, weight on the colour, the loss."""
    lines = [f"held-out stories answered with their colour (of {result['attention']['total']}):",
             f"  bigram      {result['bigram']['correct']}",
             f"  attention   {result['attention']['correct']}",
             f"  shifted     {result['shifted']['correct']}   (one more sentence before the first)",
             f"mean weight of the last position on the colour word: {result['weight_on_colour']}",
             "loss every {0} steps: ".format(LOSS_EVERY)
             + " ".join(str(entry["mean_loss"]) for entry in result["losses"]),
             f"trained {result['config']['steps']} steps in {result['seconds']:.1f} s"]
    return "\n".join(lines) + "\n"


def example_svg(result):
    """The trained layer's weights on one test story: the last row bright on the colour word."""
    example = result["example"]
    labels = token_labels(example["tokens"])
    weights = example["weights"]
    hatched = [[w is None or j > i for j, w in enumerate(row)] for i, row in enumerate(weights)]
    weights = [[0.0 if h else w for w, h in zip(row, h_row)]
               for row, h_row in zip(weights, hatched)]
    return heatmaps_svg([panel("trained attention", labels, labels, weights, hatched,
                               highlight=[len(labels) - 1], mark="◀ the question",
                               subtitle=f"last row: where the answer looks, after "
                                        f"{result['config']['steps']} steps")],
                        note=f"{example['story']!r}: the question is the last row")


def main(argv=None):
    parser = OneLineParser(description="Train the lesson's attention layer on the colour stories.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="record training-run.json")
    group.add_argument("--check", action="store_true",
                       help="fail unless training-run.json matches a fresh run")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"default {STEPS}")
    parser.add_argument("--seed", type=int, default=SEED, help=f"default {SEED}")
    parser.add_argument("--seeds", type=int, metavar="N",
                        help="train with seeds 1…N and print a table")
    parser.add_argument("--svg", metavar="FILE", help="draw the learned weights on a test story")
    args = parser.parse_args(argv)
    if (args.write or args.check) and (args.steps != STEPS or args.seed != SEED or args.seeds):
        parser.error("--write and --check record the default run: drop --steps, --seed, --seeds")
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    return guarded(lambda: _run(args))


def _progress(step, loss):
    print(f"step {step}: loss {loss}", file=sys.stderr, flush=True)


def _run(args):
    if args.seeds:
        show("| seed | bigram | attention | shifted | weight on colour | seconds |\n"
             "|---|---|---|---|---|---|\n")
        for seed in range(1, args.seeds + 1):
            r = run(seed, args.steps)
            show(f"| {seed} | {r['bigram']['correct']} | {r['attention']['correct']} | "
                 f"{r['shifted']['correct']} | {r['weight_on_colour']} | {r['seconds']:.1f} |\n")
        return 0
    result = run(args.seed, args.steps, progress=_progress)
    if args.svg is not None:
        save_view(args.svg, example_svg(result), "train_attention.py --svg")
        return 0
    if args.write or args.check:
        return write_or_check(to_json(as_recorded(result)), RUN_PATH, args.write, args.check)
    show(summary(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

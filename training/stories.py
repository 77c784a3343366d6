"""The colour stories: a task one attention layer learns and a bigram cannot, the two bigrams it is
measured against, and the model around the lesson's layer that learns it.

A story gives a thing its colour in one sentence and asks for it back in its last:

    today mia has a red ball. tom has a brown kite too. ben runs. the ball is red.

The generator covers the task's whole range: 0 to 18 colour-free sentences before the first colour
(story_shape), so it stands anywhere in the context of MAX_TOKENS tokens; a distractor, a sentence
with another colour about another object, in half the stories, anywhere after it; fillers written
from a broad vocabulary (story_words.py: some 2,200 words) in 40 sentence forms with the
punctuation . , ! ? and '; the eleven basic colour terms, given in 13 forms ("the colour of
the kite was red", "mia painted the kite red", ...). Each held-out set (HELD_OUT) tests one case
apart, "new words" in words no training story holds.

The model, for a prompt of T tokens (a story up to "the ball is"):

    x      = E[ids] + position(0…T−1)                          (T, d_model), token + place
    out    = attention_forward(layer(params), x)["out"][T−1]   (d_model), the question's row
    logits = out·U                                             (C,), a score for each colour
    loss   = −log softmax(logits)[colour]

position(i) is fixed, not learned: how far into the story place i is, evenly and on a log scale.
A colour is told from a later distractor by place alone (the key says which word and where), and
a fixed scale means the same at every place, trained or not. E starts at zero, so a token no story
trains scores as an empty place would. U scores the colours alone: a question's answer is always
one of them, and a step costs the story's rows, not the vocabulary's (E's gradient keeps the rows
of the prompt's tokens only, and Adam steps those alone).

There is no residual (out + x): the answer is only what the question's attention brings back.
With one, x[T−1] (" is" and its position) spoke in every answer too; trained on seeds 101 to 110
both ways, the runs without it did better on their worst held-out sets.

Only the question's row of out is scored, so `forward` computes that row alone, as attention_step
computes a last position: q from x[T−1], k and v from every row, attention_core, Wo. Each number
is `==` to row T−1 of attention_forward(layer(params), x), and each gradient of loss_and_grads to
attention_backward's (test_training checks both): the T−1 rows before it, which no loss reads,
are never made. The figure's rows come from attention_forward itself. Adam updates every weight
a story reaches, with a learning rate that falls linearly to 0.

    model = train_model(seed)            the recorded run's training, one story per step
    predict(model, "mia has a red ball. the ball is")   -> (answer, [(token, weight), …])

python3 train_attention.py trains and measures it from the command line (see there).

The tokenizer (training_tokenizer, the same for every seed) is bpe.train on every word a training
story can hold (story_vocabulary) until no pair is left, so every word the stories use is one token
and the colour is one prediction; its alphabet is ALPHABET, so a story in other lower-case words is
encoded too, in pieces. Of its more than 6,000 tokens most are pieces no story holds, and they keep
E's starting zeros: read as their place alone, each scores below every colour at its place
(test_training checks it on the recorded model), so an untrained piece cannot draw the weight a
colour beside it would. One training filler in ten is a sentence around a made-up word, so that
pieces are also trained as what a colour is not.

What it leaves out: batches (one story per step), dropout, layer normalization, a second layer.
"""

import functools
import math
import random
import re
import time
from collections import Counter, defaultdict, namedtuple
from math import fsum, sqrt

from attention import add, attention_forward, init_attention, matmul, softmax_row, transpose
from bpe import Tokenizer
from bpe import train as train_tokenizer
from common import checks
from training import story_words
from core.masked import attention_core, attention_core_backward

SEED = 1
D_MODEL, D_HEAD = 12, 8
MAX_TOKENS = 128               # the longest prompt the model takes: position() is defined on 0…127
STEPS = 3000                   # one story per step; at 2500, 4 of seeds 1…10 fell short
LEARNING_RATE = 0.006          # Adam's, falling to 0 at the last step; 0.005 and 0.01 fell short
BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
INIT_SCALE = 0.5               # U from uniform(−0.5, 0.5); E starts at zero
RAMP, LOG_RAMP = 5.0, 4.0      # position()'s two scales: 0 at the first place, these at the last
TRAIN_STORIES, TEST_STORIES = 1000, 60
LOSS_EVERY = 100               # steps between two recorded mean losses
RECORDED_SEEDS = 30            # train_attention.py --write trains seeds 1…30, TUNED_ON of them
TUNED_ON = 10                  # seeds 1…10, on which STEPS was chosen; 11…30 trained only after
CLAIM = 57                     # of TEST_STORIES: what every held-out set of seeds 1…10 reaches

COLOURS = ["red", "blue", "green", "yellow", "pink", "purple", "orange", "brown", "black",
           "white", "grey"]            # the eleven basic colour terms of English
NAMES = story_words.NAMES             # the people of the stories
OBJECTS = story_words.NOUNS           # the things a colour is given to, and the rest
OPENERS = ["", "", "", "one day, ", "today ", "look, ", "so ", "oh, ", "then ", "later, "]
SIZES = ["", "", "", "big ", "small ", "new ", "old ", "little "]   # before a coloured thing
FILLERS = [   # colour-free sentences: {did} a verb in the past, {verb} in the present
    "{name} {verb}.", "{name} {verb} in the {place}.", "the {noun} is {adjective}.",
    "it is {adjective} {time}.", "{name} sees a {noun}.", "{name} has a {noun} too.",
    "they go to the {place}.", "{name} is {adjective}!", "{name}'s {noun} {verb}.",
    "where is the {noun}?", "oh no, the {noun} {verb}!", "it's {adjective}, isn't it?",
    "{name} and {name} play.", "we see the {noun}, don't we?", "the {noun} {verb}.",
    "{time}, {name} {did} {adverb}.", "the {adjective} {noun} {did} near the {place}.",
    "{name} {did} the {noun} {time}.", "{name} saw some {nouns} at the {place}.",
    "{name} ate {food} {time}.", "the {place} was {adjective} and {adjective}.",
    "{name} didn't want any {food}.", "what a {adjective} day!", "{name} {did}, then {did}.",
    "{name} gave the {noun} some {food}.", "{name} couldn't find the {noun}.",
    "everyone at the {place} {did}.", "there were {nouns} everywhere!",
    "is the {noun} {adjective}, or not?", "{name} said hello to the {noun}.",
    "the {noun} {did} {adverb}.", "{name} wanted to visit the {place}.",
    "a {adjective} {noun} lived in the {place}.", "{name} {did} {adverb}, didn't {name}?",
    "{name} and the {noun} {did} to the {place}.", "{time}, the {nouns} {did}.",
    "so {name} {did}, and {name} {did} too!", "the {nouns} at the {place} were {adjective}.",
    "{name} had {food} with the {noun}.", "{name} {verb} {adverb} every day."]
COLOUR_FORMS = [   # sentences that give a thing its colour
    "{opener}{name} has a {size}{colour} {thing}{too}.",
    "{opener}{name} has a {size}{colour} {thing}{too}.",
    "{opener}the {size}{thing} of {name} is {colour}.",
    "{opener}{name}'s {size}{thing} is {colour}.",
    "{opener}{name} got a {size}{colour} {thing}{too}!",
    "{opener}the {thing} was {colour}.",
    "{opener}{name} painted the {thing} {colour}.",
    "{opener}{name} found a {size}{colour} {thing} in the {place}.",
    "{opener}in the {place} there was a {colour} {thing}.",
    "{opener}{name}'s {thing} is {colour}, isn't it?",
    "{opener}{name} bought a {colour} {thing} at the {place}.",
    "{opener}the colour of the {thing} was {colour}.",
    "{opener}look, a {colour} {thing}!",
    "{opener}{name} liked the {colour} {thing} best."]
SHIFTING_SENTENCE = "the sun is hot."    # put before each plain story in the shifted set
ALPHABET = " !',.?abcdefghijklmnopqrstuvwxyz"
HELD_OUT = ("plain", "distractor early", "distractor late", "lead-in", "shifted", "long",
            "long lead-in", "late colour", "lead-in and distractor", "punctuation", "new words",
            "full context")
CANNOT = ("second object", "distractor's object")    # the question asks about the second colour

Story = namedtuple("Story", "text colour thing distractor")
Story.__doc__ = """A story, its answer, the object it asks about, and the distractor's colour (None
without one)."""


# ---- the stories ------------------------------------------------------------------------------

Words = namedtuple("Words", "names nouns nouns_plural places adjectives verbs dids adverbs times "
                            "foods fillers")
TRAINING_WORDS = Words(story_words.NAMES, story_words.NOUNS, story_words.PLURALS,
                       story_words.PLACES, story_words.ADJECTIVES, story_words.VERBS_PRESENT,
                       story_words.VERBS_PAST, story_words.ADVERBS, story_words.TIMES,
                       story_words.FOODS, FILLERS)
PUNCTUATION_WORDS = TRAINING_WORDS._replace(fillers=[f for f in FILLERS if any(
    mark in f for mark in "!?',")])     # the held-out set "punctuation": these fillers alone
# words and sentences no training story holds (test_training checks it): "new words" uses them
NEW_WORDS = Words(
    ["oliver", "grace", "jack", "nora", "felix", "iris", "oscar", "mateo", "wren", "beatrix",
     "thaddeus", "octavia", "ignatius", "cornelius", "persephone", "florian"],
    ["spyglass", "thimble", "abacus", "quill", "ocarina", "zither", "kaleidoscope",
     "pinwheel", "satchel", "gramophone", "ladle", "trowel", "colander", "bellows", "sextant",
     "mandolin"],
    ["spyglasses", "thimbles", "abacuses", "quills", "ocarinas", "zithers",
     "kaleidoscopes", "pinwheels", "satchels", "gramophones", "ladles", "trowels", "colanders",
     "bellows", "sextants", "mandolins"],
    ["observatory", "apothecary", "boathouse", "planetarium"],
    ["peculiar", "dismal", "resplendent", "quizzical", "lugubrious", "effervescent", "gleaming",
     "rickety"],
    ["moseys", "dawdles", "galumphs", "pirouettes", "harrumphs", "sashays"],
    ["moseyed", "dawdled", "galumphed", "pirouetted", "harrumphed", "sashayed"],
    ["ponderously", "jauntily", "fitfully", "serenely"],
    ["at twilight", "by lamplight", "in midsummer", "at daybreak"],
    ["marzipan", "crumpets", "kedgeree", "gazpacho", "stollen", "baklava"],
    ["the {noun} {did} all morning.", "nobody knew where the {noun} had gone.",
     "outside, the {noun} {verb} {adverb}.", "{name} {did}, then {did} again!",
     "why does the {noun} look so {adjective}?", "the {place} wasn't {adjective} anymore.",
     "everyone at the {place} {did}.", "later, {name} {did} near the {noun}.",
     "what a {adjective} afternoon it was!", "{name} couldn't stop thinking about {food}.",
     "the {noun}'s friend {did} at the {place} {time}.", "grandpa made {food} for the {nouns}."])
MADE_UP_SHARE = 0.1             # of the training fillers: a sentence around a made-up word
MADE_UP_FILLERS = ["{name} says{word}.", "the{word} {verb}.", "{name} sees a{word}!",
                   "is it{word}?"]


def articled(text):
    """text with "a" made "an" before a vowel.

    >>> articled("mia has a orange ball and a hat.")
    'mia has an orange ball and a hat.'
    """
    return re.sub(r"\ba (?=[aeiou])", "an ", text)


def fill(template, rng, words=TRAINING_WORDS, **given):
    """template with each {slot} replaced, left to right: by given[slot], or by a word drawn for
    it from the slot's list of words (each slot its own draw, so "{name} and {name}" are two).

    >>> fill("{name} has a {size}{colour} {thing}.", random.Random(5), colour="red", thing="kite")
    'nils has a new red kite.'
    """
    lists = {"name": words.names, "noun": words.nouns, "nouns": words.nouns_plural,
             "place": words.places, "adjective": words.adjectives, "verb": words.verbs,
             "did": words.dids, "adverb": words.adverbs, "time": words.times,
             "food": words.foods, "size": SIZES}

    def word(slot):
        return given[slot] if slot in given else rng.choice(lists[slot])

    return articled(re.sub(r"\{(\w+)\}", lambda match: word(match.group(1)), template))


def filler(rng, words=TRAINING_WORDS, made_up=None):
    """A colour-free sentence of words: a filler, or a lead-in before the first sentence. With
    made_up, a list of made-up words, one filler in ten is a sentence around one of them."""
    if made_up is not None and rng.random() < MADE_UP_SHARE:
        return fill(rng.choice(MADE_UP_FILLERS), rng, words, word=rng.choice(made_up))
    return fill(rng.choice(words.fillers), rng, words)


def colour_sentence(rng, name, colour, thing, opener="", too="", words=TRAINING_WORDS):
    """A sentence that gives a thing a colour, in one of the word orders of COLOUR_FORMS.

    >>> colour_sentence(random.Random(28), "mia", "red", "ball")
    'mia has a red ball.'
    """
    return fill(rng.choice(COLOUR_FORMS), rng, words, opener=opener, name=name, colour=colour,
                thing=thing, too=too)


def story(rng, lead_ins=0, fillers=0, distractor_at=None, words=TRAINING_WORDS, made_up=None):
    """A Story: lead_ins colour-free sentences, the first sentence with the colour, fillers
    colour-free sentences with a distractor inserted at index distractor_at among them when given
    (0: right after the first sentence), and the question with its answer; words gives the names,
    things and the rest, made_up the made-up words of the training stories.

    >>> story(random.Random(2974), fillers=1, distractor_at=0).text
    'mia has a yellow pond. hana got a small blue bus too! fatima sneaks. the pond is yellow.'
    """
    name, colour, thing = rng.choice(words.names), rng.choice(COLOURS), rng.choice(words.nouns)
    before = [filler(rng, words, made_up) for _ in range(lead_ins)]
    first = colour_sentence(rng, name, colour, thing, rng.choice(OPENERS), words=words)
    after = [filler(rng, words, made_up) for _ in range(fillers)]
    distractor = None
    if distractor_at is not None:
        distractor = rng.choice([c for c in COLOURS if c != colour])
        other_thing = thing
        while other_thing == thing:
            other_thing = rng.choice(words.nouns)
        after.insert(distractor_at, colour_sentence(rng, rng.choice(words.names), distractor,
                                                    other_thing, too=" too", words=words))
    text = " ".join(before + [first] + after + [f"the {thing} is {colour}."])
    return Story(text, colour, thing, distractor)


def story_shape(rng):
    """(lead_ins, fillers, distractor_at) of a training story: no lead-in in 30 stories of 100, 1
    to 3 in 25, 4 to 8 in 20 and 9 to 18 in 25, so the first colour stands anywhere in the
    context; 0 to 5 fillers after it (6 to 12 in one story of ten); and a distractor in half,
    anywhere after the first sentence."""
    roll = rng.random()
    lead_ins = (0 if roll < 0.3 else rng.randint(1, 3) if roll < 0.55
                else rng.randint(4, 8) if roll < 0.75 else rng.randint(9, 18))
    fillers = rng.randint(0, 5) if rng.random() < 0.9 else rng.randint(6, 12)
    distractor_at = rng.randint(0, fillers) if rng.random() < 0.5 else None
    return lead_ins, fillers, distractor_at


def fits(s):
    """Whether a story's question is at most MAX_TOKENS tokens of the training tokenizer."""
    return len(training_tokenizer().encode(question(s))) <= MAX_TOKENS


def training_story(rng, made_up):
    """A story of story_shape that fits, with made_up's words in one filler of ten."""
    while True:
        s = story(rng, *story_shape(rng), made_up=made_up)
        if fits(s):
            return s


def held_out_story(rng, kind):
    """A story of one held-out kind (HELD_OUT, but "shifted", which moves the plain ones)."""
    fillers = rng.randint(6, 8) if kind == "long" else rng.randint(0, 5)
    if kind == "distractor early":
        return story(rng, 0, fillers, distractor_at=0)
    if kind == "distractor late":
        return story(rng, 0, fillers, distractor_at=fillers)
    if kind == "lead-in":
        return story(rng, rng.randint(1, 3), fillers)
    if kind == "long lead-in":
        return story(rng, rng.randint(4, 8), fillers)
    if kind == "late colour":
        return story(rng, rng.randint(9, 14), rng.randint(0, 1))
    if kind == "lead-in and distractor":
        return story(rng, rng.randint(1, 8), fillers, distractor_at=rng.randint(0, fillers))
    if kind == "punctuation":
        return story(rng, rng.randint(0, 4), fillers, rng.choice([None, 0]),
                     words=PUNCTUATION_WORDS)
    if kind == "new words":
        fillers = rng.randint(0, 4)
        return story(rng, rng.randint(0, 4), fillers, rng.choice([None, rng.randint(0, fillers)]),
                     words=NEW_WORDS)
    if kind == "full context":
        return full_story(rng)
    return story(rng, 0, fillers)


def full_story(rng):
    """A story of 96 to MAX_TOKENS tokens: the first sentence anywhere, a distractor after it."""
    while True:
        fillers = rng.randint(1, 14)
        s = story(rng, rng.randint(0, 14), fillers, distractor_at=rng.randint(0, fillers))
        if MAX_TOKENS * 3 // 4 <= len(training_tokenizer().encode(question(s))) <= MAX_TOKENS:
            return s


@functools.lru_cache(maxsize=None)
def made_up_words():
    """For every token of the training tokenizer but the colours, a made-up word (with its leading
    space) whose tokens hold it and no colour: the token itself as a word, or a letter before
    it."""
    tokenizer = training_tokenizer()
    colours = {tokenizer.encode(" " + c)[0] for c in COLOURS}
    found = []
    for t, piece in enumerate(tokenizer.vocab):
        if t in colours or not piece.strip(" ").isalpha():
            continue
        for word in [" " + piece.lstrip(" ")] + [" " + letter + piece.lstrip(" ")
                                                 for letter in ALPHABET[6:]]:
            ids = tokenizer.encode(word)
            if t in ids and not colours & set(ids):
                found.append(word)
                break
    return tuple(found)


def stories(seed):
    """(train, tests): TRAIN_STORIES training stories, and for each kind of HELD_OUT a list of
    TEST_STORIES stories, none of them in the training set or in another set. The shifted set is
    the plain set with SHIFTING_SENTENCE before each story. Drawn once a process for each seed
    (training and measuring a seed both ask), and each call's lists are its own."""
    train, tests = _drawn(seed)
    return list(train), {kind: list(test) for kind, test in tests.items()}


@functools.lru_cache(maxsize=4)
def _drawn(seed):
    """stories(seed)'s draw, as tuples."""
    rng = random.Random(seed)
    train = [training_story(rng, made_up_words()) for _ in range(TRAIN_STORIES)]
    seen = {s.text for s in train}
    tests = {}
    for kind in HELD_OUT:
        if kind == "shifted":
            tests[kind] = [s._replace(text=f"{SHIFTING_SENTENCE} {s.text}")
                           for s in tests["plain"]]
            continue
        tests[kind] = distinct(lambda: held_out_story(rng, kind), seen)
    return tuple(train), {kind: tuple(test) for kind, test in tests.items()}


def distinct(draw, seen):
    """TEST_STORIES stories of draw() that fit, in the order drawn, none of them in seen; seen
    gains each."""
    found = []
    while len(found) < TEST_STORIES:
        s = draw()
        if s.text not in seen and fits(s):
            seen.add(s.text)
            found.append(s)
    return found


def second_colour_story(rng, kind):
    """Two objects with a colour each and the question about the second, which one layer cannot
    answer: both in the first sentence ("second object"), or the second in the sentence after it,
    a distractor's place ("distractor's object"); 0 to 3 fillers after. The Story's colour is the
    second colour, its distractor the first.

    >>> second_colour_story(random.Random(32), "second object").text
    'marco has a green sledge and a pink bike. the bike is pink.'
    """
    name, other_name = rng.sample(NAMES, 2)
    (first, second), (thing, other_thing) = rng.sample(COLOURS, 2), rng.sample(OBJECTS, 2)
    if kind == "second object":
        told = [articled(f"{name} has a {first} {thing} and a {second} {other_thing}.")]
    else:
        told = [colour_sentence(rng, name, first, thing),
                colour_sentence(rng, other_name, second, other_thing, too=" too")]
    told += [filler(rng) for _ in range(rng.randint(0, 3))]
    return Story(" ".join(told + [f"the {other_thing} is {second}."]), second, other_thing, first)


def cannot_stories(seed, drawn=None):
    """For each kind of CANNOT, TEST_STORIES stories of second_colour_story, none of them among
    stories(seed) (drawn, when the caller has it already) or repeated. Their own generator, so
    that stories(seed) is what it was."""
    train, tests = drawn or stories(seed)
    seen = {s.text for s in train} | {s.text for test in tests.values() for s in test}
    rng = random.Random(f"cannot {seed}")
    return {kind: distinct(lambda: second_colour_story(rng, kind), seen) for kind in CANNOT}


def question(s):
    """A story's text up to its question, without the answer.

    >>> question(Story("mia has a red ball. the ball is red.", "red", "ball", None))
    'mia has a red ball. the ball is'
    """
    return s.text[:-len(f" {s.colour}.")]


def unseen_question(s):
    """The story's question about an object it never mentions: the first of OBJECTS not in it.

    >>> unseen_question(Story("mia has a red ball. the ball is red.", "red", "ball", None))
    'mia has a red ball. the cat is'
    """
    words = set(s.text.replace(".", " ").split())
    other_thing = next(o for o in OBJECTS if o not in words)
    return question(s)[:-len(f"the {s.thing} is")] + f"the {other_thing} is"


def story_vocabulary():
    """Every word a training story can hold but the made-up ones: story_words', the colours, and
    the words of the sentence forms, in order and once each."""
    forms = " ".join(FILLERS + COLOUR_FORMS + MADE_UP_FILLERS + OPENERS + SIZES
                     + [SHIFTING_SENTENCE, "the is too"])
    listed = [word for name in story_words.__all__ for phrase in getattr(story_words, name)
              for word in phrase.split()]
    return list(dict.fromkeys(listed + COLOURS + re.findall(r"[a-z]+", re.sub(r"\{\w+\}", " ",
                                                                             forms))))


def make_tokenizer(words):
    """bpe.train over ALPHABET on words, each once with its leading space and once without (as a
    story's first word stands), until no pair is left: every word is one token, so a colour is
    one prediction, and a word not among them splits into pieces of them."""
    text = "\n".join(words) + "\n" + "".join(" " + word for word in words)
    learned = train_tokenizer(text, 100_000)
    return Tokenizer(ALPHABET, learned.merges)


@functools.lru_cache(maxsize=None)
def training_tokenizer():
    """The tokenizer of every seed: make_tokenizer on story_vocabulary()."""
    return make_tokenizer(story_vocabulary())


# ---- the two bigrams ----------------------------------------------------------------------------

def most_frequent_next(pairs):
    """For each token, the token that most often came next in pairs (the smallest on a tie): all
    a model that reads one token back can know.

    >>> most_frequent_next([(1, 2), (2, 1), (1, 2), (1, 3), (2, 3)])
    {1: 2, 2: 1}
    """
    counts = defaultdict(Counter)
    for prev, nxt in pairs:
        counts[prev][nxt] += 1
    return {prev: min(after, key=lambda t: (-after[t], t)) for prev, after in counts.items()}


def bigrams(tokenizer, train):
    """The two bigrams of the training stories: "next token", fitted on every pair of adjacent
    tokens, and "question", fitted on the pairs the layer learns from (" is" → the colour)."""
    ids = [tokenizer.encode(s.text) for s in train]
    questions = [tokenizer.encode(question(s) + " " + s.colour)[-2:] for s in train]
    return {"next token": most_frequent_next(p for one in ids for p in zip(one, one[1:])),
            "question": most_frequent_next(questions)}


def bigram_score(next_token, tokenizer, tests):
    """How many of the stories a bigram answers with their colour."""
    answers = [next_token.get(tokenizer.encode(question(s))[-1]) for s in tests]
    return sum(a == tokenizer.encode(" " + s.colour)[0] for a, s in zip(answers, tests))


# ---- the model ----------------------------------------------------------------------------------

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


class Adam:
    """Adam, with the learning rate falling linearly from learning_rate to 0 over steps. For each
    weight: mean_grad and mean_sq_grad, running means of its gradient and of its square."""

    def __init__(self, params, steps, learning_rate=LEARNING_RATE):
        self.steps, self.learning_rate, self.t = steps, learning_rate, 0
        self.mean_grad = {name: [[0.0] * len(row) for row in m] for name, m in params.items()}
        self.mean_sq_grad = {name: [[0.0] * len(row) for row in m] for name, m in params.items()}

    def step(self, params, grads):
        """Update params in place with grads: for each weight w, w −= lr · m̂ / (√ŝ + eps),
        where m̂ = mean / (1 − b1ᵗ) and ŝ = mean_sq / (1 − b2ᵗ) are its running means
        undone of their start at zero. grads[name] is a matrix, or {row: its gradient} for the
        rows a story reaches (E's). A row with no gradient or one of zeros is left as it is,
        running means and all: Adam made lazy, as for embeddings (PyTorch's SparseAdam), so a
        step costs the story's rows, not the vocabulary's."""
        self.t += 1
        lr = self.learning_rate * (1 - (self.t - 1) / self.steps)
        (b1, b2), (a1, a2) = BETAS, (1 - BETAS[0], 1 - BETAS[1])    # a: the new gradient's share
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for name, grad in grads.items():
            rows = grad.items() if isinstance(grad, dict) else enumerate(grad)   # {row: gradient}
            for i, g_row in rows:
                if not any(g_row):
                    continue
                w_row, mean_row = params[name][i], self.mean_grad[name][i]
                mean_sq_row = self.mean_sq_grad[name][i]
                mean_row[:] = [b1 * m + a1 * g for m, g in zip(mean_row, g_row)]
                mean_sq_row[:] = [b2 * s + a2 * g * g for s, g in zip(mean_sq_row, g_row)]
                w_row[:] = [w - lr * (m / c1) / (sqrt(s / c2) + ADAM_EPS)
                            for w, m, s in zip(w_row, mean_row, mean_sq_row)]


# ---- training and answering ---------------------------------------------------------------------

def train_model(seed=SEED, steps=STEPS, progress=None):
    """Train on the stories of seed for steps, one story per step, as the recorded run does.
    Returns the model: {"tokenizer", "params", "losses"}, the losses being the mean loss of every
    LOSS_EVERY steps. progress(step, mean_loss) is called with each when given. Raises TypeError
    unless seed and steps are ints, and ValueError for fewer than 1 step."""
    checks.check_seed(seed)
    checks.check_sizes(steps=steps)
    checks.check_callable("progress", progress, optional=True)
    train, _ = stories(seed)
    tokenizer = training_tokenizer()
    pairs = [(tokenizer.encode(question(s)), COLOURS.index(s.colour)) for s in train]
    params = init_params(len(tokenizer.vocab), seed)
    adam = Adam(params, steps)
    order = random.Random(seed + 1)
    losses, recent = [], []
    for step in range(1, steps + 1):
        with checks.inside():   # the model's own products, of weights Adam keeps finite
            loss, grads = loss_and_grads(params, *order.choice(pairs))
        adam.step(params, grads)
        recent.append(loss)
        if step % LOSS_EVERY == 0 or step == steps:
            losses.append({"step": step, "mean_loss": round(fsum(recent) / len(recent), 4)})
            recent = []
            if progress:
                progress(step, losses[-1]["mean_loss"])
    return {"tokenizer": tokenizer, "params": params, "losses": losses}


def check_story(text):
    """Raise unless text can be asked: TypeError for a text that is not a str, ValueError for a
    character outside ALPHABET or a text that does not end with its question (" is")."""
    if not isinstance(text, str):
        raise TypeError(f"a story must be a str, got {type(text).__name__}")
    position = next((n for n, ch in enumerate(text, 1) if ch not in ALPHABET), None)
    if position is not None:
        raise ValueError(f"a story may hold lower-case letters, spaces and {ALPHABET[1:6]!r}, got "
                         f"{text[position - 1]!r} at position {position}")
    if not text.endswith(" is"):
        raise ValueError(f"a story must end with its question, such as \"the ball is\", got "
                         f"one ending in {text[-20:]!r}")


def encode_question(tokenizer, text):
    """The ids of a story that ends with its question ("… the ball is"). Raises as check_story,
    and ValueError for a story of more than MAX_TOKENS tokens."""
    check_story(text)
    ids = tokenizer.encode(text)
    if len(ids) > MAX_TOKENS:
        raise ValueError(f"a story may have at most {MAX_TOKENS} tokens, got {len(ids)}")
    return ids


def answer_of(logits):
    """The answer the logits (one per colour) give: the colour of the largest, with its leading
    space as the token (" red"); the first of COLOURS on a tie.

    >>> answer_of([0.5, 2.0] + [0.0] * 9)
    ' blue'
    """
    best = max(range(len(logits)), key=lambda c: (logits[c], -c))
    return " " + COLOURS[best]


def check_model(model):
    """Raise TypeError, naming the part, unless model is a dict train_model returns: a
    bpe.Tokenizer and params holding every weight of the model."""
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
    weights = ("E", "U", "Wq", "Wk", "Wv", "Wo")
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


def evaluate(model, tests):
    """How many of the stories the model answers with their colour, and the mean weight the
    question puts on the colour word and on the distractor's (None without distractors)."""
    correct, on_colour, on_distractor = 0, [], []
    for s in tests:
        answer, weights = predict(model, question(s))
        correct += answer == " " + s.colour
        tokens = [token for token, _ in weights]
        on_colour.append(weights[tokens.index(" " + s.colour)][1])
        if s.distractor:
            on_distractor.append(weights[tokens.index(" " + s.distractor)][1])
    return {"correct": correct, "total": len(tests),
            "weight_on_colour": round(fsum(on_colour) / len(on_colour), 4),
            "weight_on_distractor": (round(fsum(on_distractor) / len(on_distractor), 4)
                                     if on_distractor else None)}


# ---- the recorded run ---------------------------------------------------------------------------

def run(seed=SEED, steps=STEPS, progress=None):
    """(record, seconds): train on seed's stories, measure the model on every held-out set beside
    both bigrams, and ask each plain story about an object it never mentions. record is what
    training-run.json keeps of a run; seconds is how long the training took."""
    start = time.perf_counter()
    model = train_model(seed, steps, progress)
    seconds = time.perf_counter() - start
    return measure(model, seed, steps), seconds


def measure(model, seed=SEED, steps=STEPS):
    """The record of a model trained on seed's stories for steps (what run returns first): every
    held-out set beside both bigrams, the unseen-object questions and the figure's example."""
    train, tests = stories(seed)
    tokenizer = model["tokenizer"]
    fitted = bigrams(tokenizer, train)
    held_out = {}
    for kind, test in tests.items():
        held_out[kind] = evaluate(model, test)
        for name, next_token in fitted.items():
            held_out[kind][f"{name} bigram"] = bigram_score(next_token, tokenizer, test)
    unseen = []     # (a question about an object the story never mentions, its answer, colour)
    for s in tests["plain"]:
        text = unseen_question(s)
        unseen.append((text, predict(model, text)[0], s.colour))
    shortest = min(unseen, key=lambda one: len(one[0]))
    cannot = {}     # the question about the second colour: what is answered, and whether the
    # object asked about changes it at all
    for kind, test in cannot_stories(seed, (train, tests)).items():
        cannot[kind] = evaluate(model, test)
        answers = [predict(model, question(s))[0] for s in test]
        cannot[kind]["first_colour_answers"] = sum(a == " " + s.distractor
                                                   for a, s in zip(answers, test))
        cannot[kind]["same_for_an_unseen_object"] = sum(a == predict(model, unseen_question(s))[0]
                                                        for a, s in zip(answers, test))
    # the figure: the shortest story whose distractor follows the first sentence, every row of
    # the layer's weights
    example = min(tests["distractor early"], key=lambda s: len(question(s)))
    example_ids = tokenizer.encode(question(example))
    every_row = attention_forward(layer(model["params"]), embed(model["params"], example_ids))
    after_is = tokenizer.encode(" is")[0]
    record = {
        "config": {"seed": seed, "steps": steps, "d_model": D_MODEL, "d_head": D_HEAD,
                   "learning_rate": LEARNING_RATE, "train_stories": TRAIN_STORIES,
                   "vocab_size": len(tokenizer.vocab)},
        "held_out": held_out,
        "bigram_after_is": {name: tokenizer.vocab[next_token[after_is]]
                            for name, next_token in fitted.items()},
        "unseen_object": {"question": shortest[0], "answer": shortest[1],
                          "first_colour_answers": sum(answer == " " + colour
                                                      for _, answer, colour in unseen),
                          "total": len(unseen)},
        "cannot": cannot,
        "longest_training_prompt": max(len(tokenizer.encode(question(s))) for s in train),
        "losses": model["losses"],
        "example": {"story": question(example), "colour": example.colour,
                    "distractor": example.distractor,
                    "answer": predict(model, question(example))[0],
                    "tokens": [tokenizer.vocab[t] for t in example_ids],
                    "weights": [[round(w, 4) for w in row] for row in every_row["weights"]]},
    }
    return record


def seed_row(record):
    """A run as one row of the seeds table: how many of each held-out set it answers, and the
    question's mean weight on the colour and on the distractor in the two distractor sets."""
    held_out = record["held_out"]
    distractor_sets = [kind for kind, result in held_out.items()
                       if result["weight_on_distractor"] is not None]
    return {"seed": record["config"]["seed"],
            "correct": {kind: result["correct"] for kind, result in held_out.items()},
            "weight_on_colour": {kind: held_out[kind]["weight_on_colour"]
                                 for kind in distractor_sets},
            "weight_on_distractor": {kind: held_out[kind]["weight_on_distractor"]
                                     for kind in distractor_sets},
            "cannot": {kind: result["correct"] for kind, result in record["cannot"].items()},
            "same_for_an_unseen_object": {kind: result["same_for_an_unseen_object"]
                                          for kind, result in record["cannot"].items()}}


def held_out_table(record):
    """A run's held-out sets in Markdown, each beside both bigrams and with the question's weights,
    as the command line prints it and the README quotes it."""
    lines = ["| held-out set | next-token bigram | question bigram | the layer "
             "| weight on colour | on distractor |", "|---|---|---|---|---|---|"]
    for kind, result in record["held_out"].items():
        distractor = result["weight_on_distractor"]
        lines.append(f"| {kind} | {result['next token bigram']} | {result['question bigram']} "
                     f"| {result['correct']} | {result['weight_on_colour']} "
                     f"| {'' if distractor is None else distractor} |")
    return "\n".join(lines)


def seeds_header():
    """The head of the seeds table in Markdown: a column per held-out set."""
    return "| seed | " + " | ".join(HELD_OUT) + " |\n" + "|---" * (len(HELD_OUT) + 1) + "|\n"


def seeds_line(row):
    """One seed's line of the seeds table: how many of each held-out set it answers."""
    return f"| {row['seed']} | " + " | ".join(str(row["correct"][k]) for k in HELD_OUT) + " |\n"


def cannot_line(record):
    """What one layer cannot do, in a line: how often the question about the second colour is
    answered with it, how often with the first colour, and how often the answer is the same when
    the question names an object the story never mentions.

    >>> cannot_line({"cannot": {"second object": {"correct": 0, "first_colour_answers": 60,
    ...                                           "same_for_an_unseen_object": 59, "total": 60}}})
    'asked about the second of two colours: second object 0 of 60 (the first colour 60; the same \
answer about an unseen object 59)'
    """
    return "asked about the second of two colours: " + ", ".join(
        f"{kind} {result['correct']} of {result['total']} (the first colour "
        f"{result['first_colour_answers']}; the same answer about an unseen object "
        f"{result['same_for_an_unseen_object']})" for kind, result in record["cannot"].items())

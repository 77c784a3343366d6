"""The colour stories: a task one attention layer learns and a bigram cannot, and their tokenizer.
A story gives a thing its colour in one sentence and asks for it back in its last:

    today mia has a red ball. tom has a brown kite too. ben runs. the ball is red.

stories(seed) gives TRAIN_STORIES training stories and TEST_STORIES of each set of HELD_OUT;
training_tokenizer holds each vocabulary word as one token, a made-up word in pieces. What it
leaves out: a question about anything but a colour.
"""

import functools
import os
import random
import re
from collections import namedtuple

from bpe import Tokenizer
from bpe import train as train_tokenizer
from common.safe_io import read_text

WORDS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "story-words.txt")


def word_lists(text):
    """{section: its words} of a list laid out as story-words.txt is ('## NAME: ...', then words
    each ending in a comma; '#' a comment).

    >>> word_lists("# a list\\n## TIMES: when\\nat night, today,\\nlater,\\n")
    {'TIMES': ['at night', 'today', 'later']}
    """
    sections, name = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].partition(":")[0]
            sections[name] = []
        elif name and line and not line.startswith("#"):
            sections[name] += [word.strip() for word in line.split(",") if word.strip()]
    return sections


STORY_WORDS = word_lists(read_text(WORDS_PATH))   # the vocabulary of the colour-free sentences

MAX_TOKENS = 128          # the longest prompt the model takes: model.position is defined on 0…127
TRAIN_STORIES, TEST_STORIES = 1000, 60
COLOURS = ["red", "blue", "green", "yellow", "pink", "purple", "orange", "brown", "black",
           "white", "grey"]            # the eleven basic colour terms of English
NAMES = STORY_WORDS["NAMES"]          # the people of the stories
OBJECTS = STORY_WORDS["NOUNS"]        # the things a colour is given to, and the rest
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
COLOUR_FORMS = ["{opener}" + form for form in (   # sentences that give a thing its colour
    "{name} has a {size}{colour} {thing}{too}.", "{name} has a {size}{colour} {thing}{too}.",
    "the {size}{thing} of {name} is {colour}.", "{name}'s {size}{thing} is {colour}.",
    "{name} got a {size}{colour} {thing}{too}!", "the {thing} was {colour}.",
    "{name} painted the {thing} {colour}.", "{name} found a {size}{colour} {thing} in the {place}.",
    "in the {place} there was a {colour} {thing}.", "{name}'s {thing} is {colour}, isn't it?",
    "{name} bought a {colour} {thing} at the {place}.", "the colour of the {thing} was {colour}.",
    "look, a {colour} {thing}!", "{name} liked the {colour} {thing} best.")]
SHIFTING_SENTENCE = "the sun is hot."    # put before each plain story in the shifted set
ALPHABET = " !',.?abcdefghijklmnopqrstuvwxyz"
HELD_OUT = ("plain", "distractor early", "distractor late", "lead-in", "shifted", "long",
            "long lead-in", "late colour", "lead-in and distractor", "punctuation", "new words",
            "full context")
CANNOT = ("second object", "distractor's object")    # the question asks about the second colour
TWO_LAYER_SETS = CANNOT + ("third object", "first of three", "middle of three")   # and HELD_OUT

Story = namedtuple("Story", "text colour thing distractor")
Story.__doc__ = """A story, its answer, the object asked about, the distractor's colour or None."""

Words = namedtuple("Words", "name noun nouns place adjective verb did adverb time food fillers")
Words.__doc__ = """Each slot's list of words, by the slot's name, and the fillers."""
TRAINING_WORDS = Words(*(STORY_WORDS[name] for name in (
    "NAMES", "NOUNS", "PLURALS", "PLACES", "ADJECTIVES", "VERBS_PRESENT", "VERBS_PAST", "ADVERBS",
    "TIMES", "FOODS")), FILLERS)
PUNCTUATION_WORDS = TRAINING_WORDS._replace(fillers=[f for f in FILLERS if any(
    mark in f for mark in "!?',")])     # the held-out set "punctuation": these fillers alone
# words and sentences no training story holds (test_training checks it): "new words" uses them
NEW_WORDS = Words(
    ["oliver", "grace", "jack", "nora", "felix", "iris", "oscar", "mateo", "wren", "beatrix",
     "thaddeus", "octavia", "ignatius", "cornelius", "persephone", "florian"],
    ["spyglass", "thimble", "abacus", "quill", "ocarina", "zither", "kaleidoscope", "pinwheel",
     "satchel", "gramophone", "ladle", "trowel", "colander", "bellows", "sextant", "mandolin"],
    ["spyglasses", "thimbles", "abacuses", "quills", "ocarinas", "zithers", "kaleidoscopes",
     "pinwheels", "satchels", "gramophones", "ladles", "trowels", "colanders", "bellows",
     "sextants", "mandolins"],
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
    """template with each {slot} replaced, left to right: by given[slot], or by a word drawn
    from the slot's list (each slot its own draw).

    >>> fill("{name} has a {size}{colour} {thing}.", random.Random(5), colour="red", thing="kite")
    'nils has a new red kite.'
    """
    lists = dict(words._asdict(), size=SIZES)

    def word(slot):
        return given[slot] if slot in given else rng.choice(lists[slot])

    return articled(re.sub(r"\{(\w+)\}", lambda match: word(match.group(1)), template))


def filler(rng, words=TRAINING_WORDS, made_up=None):
    """A colour-free sentence; with made_up, one in ten is around one of those made-up words."""
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


def story(rng, lead_ins=0, fillers=0, distractor_at=None, words=TRAINING_WORDS, made_up=None,
          ask_distractor=False):
    """A Story: lead_ins fillers, the colour's sentence, fillers with a distractor's sentence at
    index distractor_at among them (0: right after the first), and the question; ask_distractor:
    the question asks about the distractor's object (its colour then the Story's).

    >>> story(random.Random(2974), fillers=1, distractor_at=0).text
    'mia has a yellow pond. hana got a small blue bus too! fatima sneaks. the pond is yellow.'
    """
    name, colour, thing = rng.choice(words.name), rng.choice(COLOURS), rng.choice(words.noun)
    before = [filler(rng, words, made_up) for _ in range(lead_ins)]
    first = colour_sentence(rng, name, colour, thing, rng.choice(OPENERS), words=words)
    after = [filler(rng, words, made_up) for _ in range(fillers)]
    distractor = None
    if distractor_at is not None:
        distractor = rng.choice([c for c in COLOURS if c != colour])
        other_thing = thing
        while other_thing == thing:
            other_thing = rng.choice(words.noun)
        after.insert(distractor_at, colour_sentence(rng, rng.choice(words.name), distractor,
                                                    other_thing, too=" too", words=words))
    if ask_distractor and distractor is not None:
        colour, thing, distractor = distractor, other_thing, colour
    text = " ".join(before + [first] + after + [f"the {thing} is {colour}."])
    return Story(text, colour, thing, distractor)


def story_shape(rng):
    """(lead_ins, fillers, distractor_at) of a training story: a distractor in half."""
    roll = rng.random()
    lead_ins = (0 if roll < 0.3 else rng.randint(1, 3) if roll < 0.55
                else rng.randint(4, 8) if roll < 0.75 else rng.randint(9, 18))
    fillers = rng.randint(0, 5) if rng.random() < 0.9 else rng.randint(6, 12)
    distractor_at = rng.randint(0, fillers) if rng.random() < 0.5 else None
    return lead_ins, fillers, distractor_at


def fits(s):
    """Whether a story's question is at most MAX_TOKENS tokens of the training tokenizer."""
    return len(story_ids(training_tokenizer(), question(s))) <= MAX_TOKENS


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
        while True:     # 96 to MAX_TOKENS tokens: the first sentence anywhere, a distractor after
            fillers = rng.randint(1, 14)
            s = story(rng, rng.randint(0, 14), fillers, distractor_at=rng.randint(0, fillers))
            if (MAX_TOKENS * 3 // 4 <= len(story_ids(training_tokenizer(), question(s)))
                    <= MAX_TOKENS):
                return s
    return story(rng, 0, fillers)


@functools.lru_cache(maxsize=None)
def made_up_words():
    """For each token of the training tokenizer but the colours, a made-up word (" " first) whose
    tokens hold it and no colour: the token as a word, or a letter before it."""
    tokenizer = training_tokenizer()
    colours = {tokenizer.encode(" " + c)[0] for c in COLOURS}
    found = []
    for t, piece in enumerate(tokenizer.vocab):
        if t in colours or not piece.strip(" ").isalpha():
            continue
        for word in [" " + piece.lstrip(" ")] + [" " + letter + piece.lstrip(" ")
                                                 for letter in ALPHABET[6:]]:
            if t in (ids := tokenizer.encode(word)) and not colours & set(ids):
                found.append(word)
                break
    return tuple(found)


def stories(seed):
    """(train, {kind of HELD_OUT: its stories}), none in two sets; each call's lists its own."""
    train, tests = _drawn(seed)
    return list(train), {kind: list(test) for kind, test in tests.items()}


@functools.lru_cache(maxsize=4)
def _drawn(seed):
    rng = random.Random(seed)
    train = [training_story(rng, made_up_words()) for _ in range(TRAIN_STORIES)]
    seen, tests = {s.text for s in train}, {}
    for kind in HELD_OUT:
        tests[kind] = ([s._replace(text=f"{SHIFTING_SENTENCE} {s.text}") for s in tests["plain"]]
                       if kind == "shifted" else distinct(lambda: held_out_story(rng, kind), seen))
    return tuple(train), {kind: tuple(test) for kind, test in tests.items()}


def distinct(draw, seen):
    """TEST_STORIES stories of draw() that fit and are not in seen, which gains each."""
    found = []
    while len(found) < TEST_STORIES:
        s = draw()
        if s.text not in seen and fits(s):
            seen.add(s.text)
            found.append(s)
    return found


def listed(name, colours, things):
    """A sentence that gives each thing its colour, in a list.

    >>> listed("mia", ["red", "blue", "orange"], ["ball", "kite", "cup"])
    'mia has a red ball, a blue kite and an orange cup.'
    """
    each = [f"a {colour} {thing}" for colour, thing in zip(colours, things)]
    return articled(f"{name} has {', '.join(each[:-1])} and {each[-1]}.")


def second_colour_story(rng, kind):
    """Two objects with a colour each, both in the first sentence ("second object") or the second
    in the next ("distractor's object"), or three ("third object", "first of three", "middle of
    three"), then 0 to 3 fillers and the question about the last (the first, the middle): the
    Story's colour is that thing's, its distractor the first colour of another thing.

    >>> second_colour_story(random.Random(32), "second object").text
    'marco has a green sledge and a pink bike. the bike is pink.'
    """
    name, other_name = rng.sample(NAMES, 2)
    n = 2 if kind in CANNOT else 3
    colours, things = rng.sample(COLOURS, n), rng.sample(OBJECTS, n)
    asked = {"first of three": 0, "middle of three": 1}.get(kind, n - 1)   # else the last
    if kind != "distractor's object":
        told = [listed(name, colours, things)]
    else:
        told = [colour_sentence(rng, name, colours[0], things[0]),
                colour_sentence(rng, other_name, colours[1], things[1], too=" too")]
    told += [filler(rng) for _ in range(rng.randint(0, 3))]
    colour, thing = colours[asked], things[asked]
    return Story(" ".join(told + [f"the {thing} is {colour}."]), colour, thing,
                 colours[1 if asked == 0 else 0])


def cannot_stories(seed, drawn=None, kinds=CANNOT):
    """{kind: TEST_STORIES stories of second_colour_story} for kinds, none among stories(seed)
    (drawn, when given); their own generator, so CANNOT's sets are the same in TWO_LAYER_SETS."""
    train, tests = drawn or stories(seed)
    seen = {s.text for s in train} | {s.text for test in tests.values() for s in test}
    rng = random.Random(f"cannot {seed}")
    return {kind: distinct(lambda: second_colour_story(rng, kind), seen) for kind in kinds}


def two_layer_story(rng, made_up):
    """A two-layer training story: in one of three, two or three things listed with their colours
    and the question about any; else one of story_shape, asking about either colour's thing."""
    while True:
        lead_ins, fillers, distractor_at = story_shape(rng)
        if rng.random() < 1 / 3:
            n = rng.randint(2, 3)
            colours, things = rng.sample(COLOURS, n), rng.sample(OBJECTS, n)
            asked = rng.randrange(n)
            told = ([filler(rng, made_up=made_up) for _ in range(lead_ins)]
                    + [rng.choice(OPENERS) + listed(rng.choice(NAMES), colours, things)]
                    + [filler(rng, made_up=made_up) for _ in range(fillers)])
            s = Story(" ".join(told + [f"the {things[asked]} is {colours[asked]}."]),
                      colours[asked], things[asked], None)
        else:
            s = story(rng, lead_ins, fillers, distractor_at, made_up=made_up,
                      ask_distractor=rng.random() < 0.5)
        if fits(s):
            return s


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
    """Every word a training story can hold but the made-up ones, in order and once each."""
    forms = re.sub(r"\{\w+\}", " ", " ".join(FILLERS + COLOUR_FORMS + MADE_UP_FILLERS + OPENERS
                                             + SIZES + [SHIFTING_SENTENCE, "the is too"]))
    listed = [word for words in STORY_WORDS.values() for phrase in words for word in phrase.split()]
    return list(dict.fromkeys(listed + COLOURS + re.findall(r"[a-z]+", forms)))


def make_tokenizer(words):
    """bpe.train over ALPHABET on words, each with and without its leading space, until no pair
    is left: every word is one token (a colour one prediction), any other word pieces."""
    text = "\n".join(words) + "\n" + "".join(" " + word for word in words)
    return Tokenizer(ALPHABET, train_tokenizer(text, 100_000).merges)


@functools.lru_cache(maxsize=None)
def training_tokenizer():
    """The tokenizer of every seed: make_tokenizer on story_vocabulary()."""
    return make_tokenizer(story_vocabulary())


def encode_question(tokenizer, text):
    """story_ids of a story. Raises TypeError for a text that is not a str, ValueError for a
    character outside ALPHABET, an end that is no question (" is") or over MAX_TOKENS tokens."""
    if not isinstance(text, str):
        raise TypeError(f"a story must be a str, got {type(text).__name__}")
    position = next((n for n, ch in enumerate(text, 1) if ch not in ALPHABET), None)
    if position is not None:
        raise ValueError(f"a story may hold lower-case letters, spaces and {ALPHABET[1:6]!r}, got "
                         f"{text[position - 1]!r} at position {position}")
    if not text.endswith(" is"):
        raise ValueError(f"a story must end with its question, such as \"the ball is\", got "
                         f"one ending in {text[-20:]!r}")
    if len(ids := story_ids(tokenizer, text)) > MAX_TOKENS:
        raise ValueError(f"a story may have at most {MAX_TOKENS} tokens, got {len(ids)}")
    return ids


def story_ids(tokenizer, text):
    """The ids of a story, after a space when it opens with a colour word: " white", the token of
    every colour sentence, not "white", which no training story holds."""
    first = re.match(r"[a-z]+", text)
    return tokenizer.encode(" " + text if first and first.group() in COLOURS else text)

"""The rule the one-layer model learned, measured: it answers the earliest colour word of the story,
whatever the question asks about. RULE_SETS are stories where that rule and the colour asked for
agree (control) or part ("mr brown has a red cup. the cup is"); rule_record is what rule-run.json
records of seed 1's model. What it leaves out: the other seeds.
"""

import random
import re

from training.model import predict
from training.stories import (COLOUR_FORMS, COLOURS, NAMES, OBJECTS, Story, colour_sentence,
                              distinct, fill, filler, question, stories)

RULE_SETS = ("control", "denied colour", "colour as a name", "colour as a fruit",
             "two colours close", "opens with its colour")
SURNAMES = ["brown", "green", "white", "black", "grey"]    # colours that are family names too
DENIED = ["the {thing} is not {other}. it is {colour}.",
          "{name}'s {thing} is not {other}. it is {colour}.",
          "the {thing} was not {other}, it was {colour}."]
NAMED = [form for form in COLOUR_FORMS if "{name}" in form]    # in each, the name comes first
FRUIT = ["{name} ate {food} {time}.", "{name} had {food} with the {noun}."]
CLOSE = ["{name} has a {other} {noun} and a {colour} {thing}.",
         "the {noun} is {other} and the {thing} is {colour}.",
         "{name} painted the {noun} {other} and the {thing} {colour}."]
OPENS = ["{colour} was the {noun}'s {thing}.", "{colour} was {name}'s {thing}.",
         "{colour} was the colour of the {thing}."]


def earliest_colour(text):
    """The first word of text that is one of COLOURS, None when none is: what the rule answers.

    >>> earliest_colour("mr brown has a red cup. the cup is")
    'brown'
    """
    return next((word for word in re.findall(r"[a-z]+", text) if word in COLOURS), None)


def rule_story(rng, kind):
    """A Story of one kind of RULE_SETS, its distractor the other colour word (or None)."""
    name, (thing, noun) = rng.choice(NAMES), rng.sample(OBJECTS, 2)
    colour, other = rng.sample(COLOURS, 2)
    opens = kind == "opens with its colour"
    before = [] if opens else [filler(rng) for _ in range(rng.randint(0, 2))]
    if kind == "control":
        told = [colour_sentence(rng, name, colour, thing),
                colour_sentence(rng, rng.choice(NAMES), other, noun, too=" too")]
    elif kind == "denied colour":
        told = [fill(rng.choice(DENIED), rng, name=name, thing=thing, other=other, colour=colour)]
    elif kind == "colour as a name":
        other = rng.choice([c for c in SURNAMES if c != colour])
        told = [fill(rng.choice(NAMED), rng, opener="", too="", colour=colour, thing=thing,
                     name=f"{rng.choice(['mr', 'mrs'])} {other}")]
    elif kind == "colour as a fruit":
        colour, other = rng.choice([c for c in COLOURS if c != "orange"]), "orange"
        told = [fill(rng.choice(FRUIT), rng, name=name, food="an orange", noun=noun),
                colour_sentence(rng, name, colour, thing)]
    elif kind == "two colours close":
        told = [fill(rng.choice(CLOSE), rng, name=name, other=other, noun=noun, colour=colour,
                     thing=thing)]
    else:
        other = None
        told = [fill(rng.choice(OPENS), rng, colour=colour, name=name, noun=noun, thing=thing)]
    after = [filler(rng) for _ in range(rng.randint(0, 2))]
    return Story(" ".join(before + told + after + [f"the {thing} is {colour}."]), colour, thing,
                 other)


def rule_record(model, seed):
    """{"seed", "sets": {kind: {"stories", "asked", "earliest", "unnamed", "example"}}}: of
    TEST_STORIES stories of rule_story of each of RULE_SETS, none among stories(seed), how
    many are answered with the colour asked for, the earliest colour word, or a colour the
    story does not name, and the shortest answered wrong (or the shortest) as an example."""
    train, tests = stories(seed)
    seen = {s.text for s in train} | {s.text for test in tests.values() for s in test}
    rng, found = random.Random(f"rule {seed}"), {}
    for kind in RULE_SETS:
        test = distinct(lambda: rule_story(rng, kind), seen)
        answered = [(question(s), predict(model, question(s))[0], s) for s in test]
        wrong = [one for one in answered if one[1] != " " + one[2].colour]
        example = min(wrong or answered, key=lambda one: len(one[0]))
        found[kind] = {"stories": len(test),
                       "asked": sum(answer == " " + s.colour for _, answer, s in answered),
                       "earliest": sum(answer == " " + earliest_colour(text)
                                       for text, answer, _ in answered),
                       "unnamed": sum(answer.strip() not in re.findall(r"[a-z]+", text)
                                      for text, answer, _ in answered),
                       "example": {"story": example[0], "answer": example[1]}}
    return {"seed": seed, "sets": found}

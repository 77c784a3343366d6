"""The two bigrams the layer is measured against: all a model that reads one token back can know
of the stories. What it leaves out: smoothing (a token never seen first in a pair has no guess).
"""

from collections import Counter, defaultdict

from training.stories import question


def most_frequent_next(pairs):
    """For each token, the token that most often came next in pairs (the smallest on a tie).

    >>> most_frequent_next([(1, 2), (2, 1), (1, 2), (1, 3), (2, 3)])
    {1: 2, 2: 1}
    """
    counts = defaultdict(Counter)
    for prev, nxt in pairs:
        counts[prev][nxt] += 1
    return {prev: min(after, key=lambda t: (-after[t], t)) for prev, after in counts.items()}


def bigrams(tokenizer, train):
    """{"next token", "question"}: bigrams fitted on every adjacent pair of the training stories,
    and on the pairs the layer learns from (" is" → the colour)."""
    ids = [tokenizer.encode(s.text) for s in train]
    questions = [tokenizer.encode(question(s) + " " + s.colour)[-2:] for s in train]
    return {"next token": most_frequent_next(p for one in ids for p in zip(one, one[1:])),
            "question": most_frequent_next(questions)}


def bigram_score(next_token, tokenizer, tests):
    """How many of the stories a bigram answers with their colour."""
    answers = [next_token.get(tokenizer.encode(question(s))[-1]) for s in tests]
    return sum(a == tokenizer.encode(" " + s.colour)[0] for a, s in zip(answers, tests))

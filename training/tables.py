"""The recorded runs (train.py's and given_layer.py's) in Markdown, as the command line prints them
and the README quotes them.
"""

from training.stories import HELD_OUT


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
    """A run's held-out sets, each beside both bigrams, with the question's weights."""
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
    """What one layer cannot do: the question about the second colour answered with it, with the
    first, and alike when it names an unseen object.

    >>> cannot_line({"cannot": {"second object": {"correct": 0, "first_colour_answers": 60,
    ...                                           "same_for_an_unseen_object": 59, "total": 60}}})
    'asked about the second of two colours: second object 0 of 60 (the first colour 60; the same \
answer about an unseen object 59)'
    """
    return "asked about the second of two colours: " + ", ".join(
        f"{kind} {result['correct']} of {result['total']} (the first colour "
        f"{result['first_colour_answers']}; the same answer about an unseen object "
        f"{result['same_for_an_unseen_object']})" for kind, result in record["cannot"].items())


def two_layer_table(records, models=("two layers", "one layer")):
    """The seeds' correct answers on every set, a column for each of models (keys of a record: two
    layers beside one), in Markdown."""
    lines = ["| set | " + " | ".join(f"seed {r['seed']}: " + " | ".join(models) for r in records)
             + " |", "|---" * (1 + len(models) * len(records)) + "|"]
    lines += [f"| {kind} | " + " | ".join(str(r[m][kind]) for r in records for m in models) + " |"
              for kind in records[0][models[0]]]
    return "\n".join(lines) + "\n"

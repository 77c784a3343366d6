"""The recorded model, trained-model.json: model_record makes the record of a model's weights and
tokenizer; model_from_record and read_model give them back bit for bit. Leaves out Adam's state.
"""

import os

from bpe import Tokenizer
from common.checks import check_matrix
from common.safe_io import read_json, read_text
from training.stories import COLOURS

PARAMS = ("E", "U", "Wq", "Wk", "Wv", "Wo")


def model_record(model, seed, steps):
    """The JSON-ready record of a model train_model(seed, steps) returned."""
    tokenizer = model["tokenizer"]
    return {"seed": seed, "steps": steps, "alphabet": "".join(tokenizer.alphabet),
            "merges": [list(merge) for merge in tokenizer.merges],
            "params": {name: model["params"][name] for name in PARAMS}}


def model_from_record(record, name="trained-model.json"):
    """The model a record holds, {"tokenizer", "params", "seed", "steps"}. Raises ValueError,
    naming the file and what is wrong, unless every weight is a matrix of its shape: E (V,
    d_model), U (d_model, C), Wq, Wk, Wv (d_model, d_head), Wo (d_head, d_model)."""
    def wrong(what):
        return ValueError(f"{name} {what}: run train_attention.py --write")

    if not isinstance(record, dict) or not {"seed", "steps", "alphabet", "merges",
                                            "params"} <= record.keys():
        raise wrong("must hold seed, steps, alphabet, merges and params")
    try:
        tokenizer = Tokenizer(record["alphabet"], [tuple(merge) for merge in record["merges"]])
    except (TypeError, ValueError) as e:
        raise wrong(f"holds no tokenizer ({e})") from None
    vocab = len(tokenizer.vocab)

    def expected(shapes):
        d_model, d_head = shapes["E"][1], shapes["Wq"][1]
        return {"E": (vocab, d_model), "U": (d_model, len(COLOURS)), "Wq": (d_model, d_head),
                "Wk": (d_model, d_head), "Wv": (d_model, d_head), "Wo": (d_head, d_model)}

    check_weights(record["params"], PARAMS, vocab, expected, wrong)
    return {"tokenizer": tokenizer, **{key: record[key] for key in ("params", "seed", "steps")}}


def check_weights(params, names, vocab, expected, wrong):
    """Raise wrong(what is wrong) unless params holds the weights names and no other, each a matrix
    of numbers of the shape expected({name: its shape}) gives it, vocab said beside a wrong one."""
    if not isinstance(params, dict) or sorted(params) != sorted(names):
        raise wrong(f"must hold the weights {', '.join(names)}")
    try:
        shapes = {name: check_matrix(name, params[name]) for name in names}
    except (TypeError, ValueError) as e:
        raise wrong(f"has a weight that is no matrix of numbers ({e})") from None
    for name, shape in expected(shapes).items():
        if shapes[name] != shape:
            raise wrong(f"has {name} of shape {shapes[name]}, expected {shape} for a vocabulary "
                        f"of {vocab}")


last_read = {}     # the text read_model last read, and the model it made


def read_model(path):
    """model_from_record of the JSON file at path, parsed and checked once for a text read again
    (the weights copied). Raises ValueError naming the file, and OSError when it cannot be read."""
    if last_read.get("text") != (text := read_text(path)):
        record = read_json(path, "a trained model", then="run train_attention.py --write",
                           text=text)
        last_read.update(text=text, model=model_from_record(record, os.path.basename(path)))
    model = last_read["model"]
    return dict(model, params={name: [list(row) for row in matrix]
                               for name, matrix in model["params"].items()})

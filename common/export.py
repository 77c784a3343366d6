"""Attention maps exported for the viewers learners meet next (CircuitsVis, bertviz): one JSON file.

    attention_export(tokens, attention)   {"tokens": [...], "attention": [layer][head][dest][src]}
    export_text(tokens, attention)        the same as JSON text, for --export FILE

tokens are the T token strings as the tokenizer gives them (" has", with its space); attention
holds, for each layer and each head, a (T, T) matrix: row i the weights destination i puts on
every source j. Every door here has one layer and one head, so its export is
attention[1][1][T][T]; a future position's weight is written as the 0.0 the layer computed. The
numbers are the layer's floats, unrounded. Neither viewer is needed here: the file is plain JSON
(explorer/README.md shows the three lines that open it in each).
"""

import math

from common.golden import to_json


def attention_export(tokens, attention):
    """{"tokens", "attention"} for the viewers. Raises TypeError unless tokens is a list of str
    and attention a list (layers) of lists (heads) of matrices of numbers, and ValueError unless
    every matrix is (T, T) for the T tokens and every weight finite."""
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a list of token strings, got {tokens!r:.60}")
    T = len(tokens)
    if T == 0:
        raise ValueError("tokens is empty: expected at least one token")
    if not isinstance(attention, list) or not attention:
        raise TypeError("attention must be a non-empty list of layers, each a list of heads")
    for l, layer in enumerate(attention):
        if not isinstance(layer, list) or not layer:
            raise TypeError(f"attention[{l}] must be a non-empty list of heads")
        for h, head in enumerate(layer):
            where = f"attention[{l}][{h}]"
            if (not isinstance(head, list) or len(head) != T
                    or any(not isinstance(row, list) or len(row) != T for row in head)):
                raise ValueError(f"{where} must be a ({T}, {T}) matrix, one row and one column "
                                 f"per token")
            for i, row in enumerate(head):
                for j, w in enumerate(row):
                    if (isinstance(w, bool) or not isinstance(w, (int, float))
                            or not math.isfinite(w)):
                        raise ValueError(f"{where}[{i}][{j}] must be a finite weight, got {w!r}")
    return {"tokens": list(tokens), "attention": [[[list(row) for row in head] for head in layer]
                                                  for layer in attention]}


def export_text(tokens, attention):
    """attention_export as the JSON text --export writes."""
    return to_json(attention_export(tokens, attention))

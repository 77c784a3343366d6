"""Attention maps for CircuitsVis and bertviz: {"tokens": [T strings], "attention": [layer][head]
(T, T)}, row i the weights of destination i, unrounded. Every door here has one layer and one head.
"""

import math

from common.golden import to_json


def attention_export(tokens, attention):
    """{"tokens", "attention"} for the viewers. Raises TypeError or ValueError unless every head of
    every layer is a (T, T) matrix of finite weights for the T tokens."""
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise TypeError(f"tokens must be a list of token strings, got {tokens!r:.60}")
    if (T := len(tokens)) == 0:
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

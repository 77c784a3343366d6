"""Lab 06's explorer page (`perturb_attention.py --html FILE`): each case of lab06.lab.cases as a
map of the explorer (explorer/page.py), its arithmetic in fractions where they are exact.
"""

from common.views import MAX_TOKENS
from explorer.page import explored, page_html     # the explorer's writer, shared
from lab06.lab import cases, position_labels


def lab_maps(found):
    """One map per case of lab06.cases (found): its run's q, k, v and the scores its softmax took.
    Raises ValueError for the softmax over destinations and changes of scores or weights."""
    maps = []
    for case in found:
        if case["key"] == "destinations" or any(
                getattr(change, "stage", "inputs") != "inputs" for change in case["changes"]):
            raise ValueError("the explorer shows changes of Q, K, V and the mask and the "
                             "post-softmax bug: see the others with --table or --svg")
        after = case["run"]
        scores = after["scores"] if case["key"] == "post-softmax" else after["masked_scores"]
        maps.append({"key": case["key"], "title": case["title"], "subtitle": case["subtitle"],
                     "q": after["q"], "k": after["k"], "v": after["v"], "scores": scores,
                     "weights": case["weights"], "mixed": case["output"],
                     "blocked": case["hatched"], "zeroed": case["zeroed"], "future": False})
    return maps


def lab_page(result):
    """The lab's explorer of result, what lab06.lab or lab06.experiment returned (with its runs).
    Raises ValueError for more than MAX_TOKENS positions, or another result."""
    if not isinstance(result, dict) or not isinstance(result.get("baseline"), dict):
        raise ValueError("result must be what lab06.lab() or lab06.experiment() returned")
    if (T := len(result["baseline"]["weights"])) > MAX_TOKENS:
        raise ValueError(f"the explorer takes at most {MAX_TOKENS} positions, got {T}")
    labels = position_labels(T)
    note = ("Predict first: each map stays hidden until you press Reveal (#answers=shown opens "
            "them all). Every number on this page was computed in Python by lab06/lab.py through "
            "attend, over the core the lesson's layer uses, and written in by perturb_attention.py "
            "--html; the page's script only shows them. (= 1/3): the fraction gives the float "
            "back to the last bit; (≈ 1/10): within the lab's 1e-9. Positions count from 1.")
    data = explored(lab_maps(cases(result)), labels, labels, ("Z", "z"), exact=True)
    return page_html("Lab 06: one attention head, changed one piece at a time", note,
                     "perturb_attention.py --html", "map", dict(data, predict_first=True))

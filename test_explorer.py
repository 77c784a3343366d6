"""The explorer pages: every number they hold is the trace's, and they need nothing from outside.

The tests read the pages' HTML and embedded JSON with the standard library.
"""

import doctest
import json
import math
import os
import tempfile
import unittest
from html.parser import HTMLParser
from math import fsum

import explorer
import lab06
import perturb_attention
import trace_attention as ta
from attention import attention_forward, softmax_row
from golden import rounded
from helpers_for_tests import HERE, MessageAssertions, run_script
from views import number, token_labels

LESSON_FILE, LAB_FILE = "attention-explorer.html", "lab06-explorer.html"
LAB_KEYS = ["baseline", *lab06.TITLES, "bug"]


def read_json(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return json.load(f)


def lesson_runs():
    """{mode: attention_forward of the lesson's sentence}, and the sentence's tokens."""
    tokenizer, params, table = ta.lesson_setup()
    x = ta.inputs(tokenizer, ta.SENTENCE, table)[1]
    return {mode: attention_forward(params, x, mode) for mode in ("causal", "none", "zero")}, (
        params, x, tokenizer.tokens(ta.SENTENCE))


def lesson_page():
    params, x, tokens = lesson_runs()[1]
    return explorer.lesson_page(params, x, tokens, ta.SENTENCE)


def lab_page():
    result = lab06.lab()
    return explorer.lab_page(result, perturb_attention.cases(result))


class Parsed(HTMLParser):
    """Every tag's attributes, and the text of each <script> and <style> (by its id, or its tag)."""

    def __init__(self, text):
        super().__init__()
        self.attributes, self.blocks, self._open = [], {}, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.attributes.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = dict(attrs).get("id", tag)
            self.blocks[self._open] = ""

    def handle_endtag(self, tag):
        self._open = None

    def handle_data(self, data):
        if self._open:
            self.blocks[self._open] += data


def embedded(page):
    return json.loads(Parsed(page).blocks["explorer-data"])


def pieces(lines):
    """{name: text} of the numbers in lines of arithmetic; the first of a name counts."""
    found = {}
    for line in lines:
        for piece in line:
            if isinstance(piece, list):
                found.setdefault(piece[0], piece[1])
    return found


def vector_text(values):
    return "[" + ", ".join(number(v) for v in values) + "]"


LESSON, LAB = lesson_page(), lab_page()    # each built once: a few milliseconds


class PageStandsAlone(unittest.TestCase):

    def test_no_tag_names_an_external_src_or_href_and_no_style_loads_a_url(self):
        for name, page in (("lesson", LESSON), ("lab", LAB)):
            parsed = Parsed(page)
            for tag, attrs in parsed.attributes:
                for attribute in ("src", "href", "srcset", "action", "formaction", "poster"):
                    self.assertNotIn(attribute, attrs, f"{name}: <{tag} {attribute}=…>")
            for block in ("style", "script"):
                for loads in ("url(", "@import", "fetch(", "XMLHttpRequest", "import("):
                    self.assertNotIn(loads, parsed.blocks[block], f"{name}: {block}")

    def test_lessons_page_is_at_most_300_kB(self):
        self.assertLessEqual(len(LESSON.encode("utf-8")), 300_000)

    def test_script_holds_no_softmax_product_or_rounding(self):
        script = Parsed(LESSON).blocks["script"]
        for mechanism in ("Math.exp", "Math.log", "Math.sqrt", "toFixed", "toPrecision", " * ",
                          "reduce("):
            self.assertNotIn(mechanism, script)

    def test_a_head_of_more_than_64_positions_is_refused(self):
        with self.assertRaisesRegex(ValueError, "the explorer takes at most 64 positions, got 65"):
            explorer.lab_page({"baseline": {"weights": [[1.0]] * 65}}, [])

    def test_a_token_that_closes_the_script_stays_inside_the_json(self):
        params, x, tokens = lesson_runs()[1]
        page = explorer.lesson_page(params, x[:2], ["</script>", "<b>"], "</script><b>")
        self.assertEqual(embedded(page)["rows"], ["</script>", "<b>"])
        self.assertNotIn("<b>", page.split("<script")[0])


class EmbeddedNumbersAreTheTraces(unittest.TestCase):

    def test_lessons_causal_map_equals_attention_trace_json(self):
        trace, causal = read_json("attention-trace.json"), embedded(LESSON)["modes"][0]
        for name in ("q", "k", "v", "scores", "weights"):
            self.assertEqual(rounded(causal[name], 4), trace[name], name)

    def test_lessons_broken_masks_give_row_0_the_recorded_future_weight(self):
        trace, data = read_json("attention-trace.json"), embedded(LESSON)
        for mode in data["modes"]:
            self.assertEqual(round(fsum(mode["weights"][0][1:]), 4),
                             trace["masks"][mode["key"]]["weight_on_future_row_0"], mode["key"])

    def test_labs_maps_equal_perturb_trace_json(self):
        trace, modes = read_json("perturb-trace.json"), embedded(LAB)["modes"]
        self.assertEqual([m["key"] for m in modes], LAB_KEYS)
        base, bug = modes[0], modes[-1]
        for name, recorded in (("q", "Q"), ("k", "K"), ("v", "V"), ("scores", "masked_scores"),
                               ("weights", "weights"), ("mixed", "output")):
            self.assertEqual(rounded(base[name], lab06.DIGITS), trace["baseline"][recorded], name)
        for mode in modes[1:-1]:
            recorded = trace["interventions"][mode["key"]]
            self.assertEqual(rounded(mode["weights"], lab06.DIGITS), recorded["weights"])
            self.assertEqual(rounded(mode["mixed"], lab06.DIGITS), recorded["output"])
            self.assertEqual(mode["changed"], recorded["weight_rows_changed"], mode["key"])
            self.assertEqual(mode["side_changed"], recorded["output_rows_changed"], mode["key"])
        recorded = trace["buggy_post_softmax"]
        self.assertEqual(rounded(bug["weights"], lab06.DIGITS), recorded["weights"])
        self.assertEqual(rounded(bug["mixed"], lab06.DIGITS), recorded["output"])

    def test_each_maps_changed_rows_are_those_that_differ_from_the_first(self):
        modes = {m["key"]: m for m in embedded(LESSON)["modes"]}
        self.assertEqual(modes["causal"]["changed"], [])
        # the last row reads every token under any mask: only it keeps its weights
        self.assertEqual(modes["none"]["changed"], [0, 1, 2, 3, 4])
        self.assertEqual(modes["zero"]["changed"], [0, 1, 2, 3, 4])
        self.assertEqual(embedded(LAB)["modes"][-1]["changed"], [0, 1])   # the bug's rows

    def test_each_cells_terms_give_back_the_cores_numbers_to_the_last_bit(self):
        params, x, _ = lesson_runs()[1]
        result = lab06.lab()
        maps = explorer.lesson_maps(params, x) + explorer.lab_maps(
            result, perturb_attention.cases(result))
        for m in maps:
            for i, scores_i in enumerate(m["scores"]):
                top, exps, total = explorer.softmax_terms(scores_i)
                weights = [e / total for e in exps]
                self.assertEqual(weights, softmax_row(scores_i), (m["key"], i))
                zeroed = m["zeroed"] or [[False] * len(weights)] * len(m["scores"])
                self.assertEqual([0.0 if z else w for w, z in zip(weights, zeroed[i])],
                                 m["weights"][i], (m["key"], i))
                for j, s in enumerate(scores_i):
                    if not m["blocked"][i][j]:
                        products, scale = explorer.score_terms(m["q"][i], m["k"][j])
                        self.assertEqual(fsum(products) * scale, s, (m["key"], i, j))
                for c, mixed in enumerate(m["mixed"][i]):
                    self.assertEqual(fsum(w * v_j[c] for w, v_j in zip(m["weights"][i], m["v"])),
                                     mixed, (m["key"], i, c))

    def test_each_cells_arithmetic_shows_the_cores_numbers(self):
        for page in (LESSON, LAB):
            for mode in embedded(page)["modes"]:
                for i, row in enumerate(mode["arithmetic"]):
                    for j, lines in enumerate(row):
                        shown, w = pieces(lines), mode["weights"][i][j]
                        self.assertEqual(shown["score"], number(mode["scores"][i][j]))
                        self.assertEqual(shown["weight"], number(w), (mode["key"], i, j))
                        if "contribution" in shown:
                            self.assertEqual(shown["contribution"],
                                             vector_text([w * x for x in mode["v"][j]]))
                    self.assertEqual(pieces(mode["row_arithmetic"][i])["z" if page is LAB
                                                                        else "mixed"],
                                     vector_text(mode["mixed"][i]))

    def test_labs_fractions_say_whether_they_are_exact_or_within_1e_9(self):
        modes = {m["key"]: m for m in embedded(LAB)["modes"]}
        third = modes["baseline"]["arithmetic"][1][0]       # x₂ on x₁: 1/3, the float of 1/3
        self.assertIn(" (= 1/3)", sum(third, []))
        tenth = modes["future_key_perturbation"]["arithmetic"][2][0]   # 0.10000000000000002
        self.assertEqual(modes["future_key_perturbation"]["weights"][2][0], 0.10000000000000002)
        self.assertIn(" (≈ 1/10)", sum(tenth, []))
        self.assertIn(" (= ln 2)", sum(modes["baseline"]["arithmetic"][0][0], []))
        self.assertNotIn("(=", LESSON.split('id="explorer-data"')[1], "no fractions in the lesson")


class HtmlFlag(MessageAssertions, unittest.TestCase):

    def test_trace_html_writes_the_lessons_page_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "page.html")
            done = run_script("trace_attention.py", "--html", path)
            self.assertEqual((done.returncode, done.stdout), (0, f"wrote {path}\n"))
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), LESSON)

    def test_perturb_html_writes_the_labs_page(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lab.html")
            self.assertEqual(run_script("perturb_attention.py", "--html", path).returncode, 0)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(f.read(), LAB)

    def test_html_takes_a_sentence_and_an_intervention_of_your_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            dog, own = os.path.join(tmp, "dog.html"), os.path.join(tmp, "own.html")
            run_script("trace_attention.py", "--sentence", "the big dog.", "--html", dog)
            run_script("perturb_attention.py", "--ablate-value", "2", "--bug", "post-softmax",
                       "--html", own)
            with open(dog, encoding="utf-8") as f:
                self.assertEqual(embedded(f.read())["rows"],
                                 token_labels(ta.load_tokenizer().tokens("the big dog.")))
            with open(own, encoding="utf-8") as f:
                data = embedded(f.read())
        self.assertEqual([m["key"] for m in data["modes"]], ["baseline", "intervention", "bug"])
        self.assertEqual(data["modes"][1]["title"], "v₂ := 0")

    def test_html_beside_write_or_check_is_a_one_line_error(self):
        for script in ("trace_attention.py", "perturb_attention.py"):
            for flag in ("--write", "--check"):
                with self.subTest(script=script, flag=flag):
                    self.assertOneLineError(run_script(script, flag, "--html", "x.html"),
                                            "drop --html")

    def test_bad_html_targets_are_one_line_errors(self):
        # both scripts write through cli.save_view: the lesson's stands for the two
        with tempfile.TemporaryDirectory() as tmp:
            inside_a_file = os.path.join(tmp, "file.txt")
            open(inside_a_file, "w").close()
            for path, fragment in (("", "the output path is empty"),
                                   (os.path.join(inside_a_file, "x.html"), "cannot write"),
                                   (os.path.join(HERE, "attention-trace.json"),
                                    "one of this folder's recorded or source files")):
                with self.subTest(path=path):
                    self.assertOneLineError(run_script("trace_attention.py", "--html", path),
                                            fragment)

    def test_committed_pages_are_what_html_writes_now(self):
        for name, page, command in ((LESSON_FILE, LESSON, "trace_attention.py"),
                                    (LAB_FILE, LAB, "perturb_attention.py")):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), page,
                                 f"{name} is stale: run python3 {command} --html {name}")


def load_tests(loader, tests, ignore):
    """The explorer's docstring examples run as doctests."""
    tests.addTests(doctest.DocTestSuite(explorer))
    return tests


if __name__ == "__main__":
    unittest.main()

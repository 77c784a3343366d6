"""The views a person looks at: --table, --svg and --sentence of both labs."""

import json
import os
import tempfile
import unittest
import xml.etree.ElementTree as ET

from common.views import label, positions_text, token_labels
from lab06 import lab as lab06
from tests.helpers import MessageAssertions, run_main, run_script
import trace_attention as ta

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder
SVG = "{http://www.w3.org/2000/svg}"
SECOND = "the big dog sees a blue kite."


def panels(svg_text):
    """{title: (cells, masked cells, highlighted rows, texts)} of an SVG written by
    views.heatmaps_svg."""
    root = ET.fromstring(svg_text)
    found = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "panel":
            continue
        rects = list(g.iter(f"{SVG}rect"))
        cells = [r for r in rects if r.get("class", "").startswith("cell")]
        found[g.get("data-title")] = (
            cells,
            [r for r in cells if r.get("class") == "cell masked"],
            [r for r in rects if r.get("class") == "highlight"],
            [t.text for t in g.iter(f"{SVG}text")],
        )
    return found


class LessonViews(unittest.TestCase):

    def test_svg_has_three_panels_of_t_by_t_cells_with_token_labels(self):
        svg = panels(ta.weights_svg())
        self.assertEqual(list(svg), [ta.PANEL_TITLES[mode] for mode in ("causal", "none", "zero")])
        labels = [label(t) for t in ta.load_tokenizer().tokens(ta.SENTENCE)]
        for title, (cells, masked, _, texts) in svg.items():
            self.assertEqual(len(cells), 6 * 6, title)
            for name in labels:
                self.assertGreaterEqual(
                    texts.count(name), 2, f"{title}: label {name!r} on both axes"
                )

    def test_masked_cells_carry_their_own_style(self):
        svg = panels(ta.weights_svg())
        cells, masked, _, _ = svg[ta.PANEL_TITLES["causal"]]
        self.assertEqual(len(masked), 6 * 5 // 2)
        self.assertTrue(all(r.get("fill") == "url(#masked)" for r in masked))
        self.assertTrue(all(r.get("fill").startswith("#") for r in cells if r not in masked))
        self.assertTrue(all(int(r.get("data-col")) > int(r.get("data-row")) for r in masked))
        self.assertEqual(svg[ta.PANEL_TITLES["zero"]][1], [], "the zero-score bug masks nothing")

    def test_every_cell_prints_its_value(self):
        t = ta.trace()
        texts = panels(ta.weights_svg())[ta.PANEL_TITLES["causal"]][3]
        for i, row in enumerate(t["weights"]):
            for j in range(i + 1):
                self.assertIn(f"{row[j]:.4f}", texts, f"weights[{i}][{j}]")

    def test_committed_figure_is_what_svg_writes_now(self):
        with open(os.path.join(HERE, "attention-weights.svg"), encoding="utf-8") as f:
            self.assertEqual(
                f.read(),
                ta.weights_svg(),
                "attention-weights.svg is stale: "
                "run python3 trace_attention.py --svg attention-weights.svg",
            )

    def test_readme_shows_the_committed_figure(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            self.assertTrue(
                "](attention-weights.svg)" in f.read(),
                "README.md should show attention-weights.svg",
            )

    def test_table_contains_the_recorded_weights(self):
        t = ta.trace()
        text = ta.trace_table(t)
        for i, row in enumerate(t["weights"]):
            cells = [f"{w:.4f}" for w in row[: i + 1]] + ["0"] * (len(row) - i - 1)
            self.assertRegex(
                text,
                r"\n"
                + label(t["tokens"][i]).replace(".", r"\.")
                + r" +"
                + r" +".join(cells)
                + r"\n",
            )
        self.assertIn("−∞", text)
        self.assertIn("causal  the edit changes positions 5 and 6, position 1's weight on the "
                      "future 0.0\n", text)

    def test_another_sentence_in_every_view(self):
        done = run_main(ta.main, "--sentence", SECOND)
        self.assertEqual(done.returncode, 0, done.stderr)
        t = json.loads(done.stdout)
        self.assertEqual(t["sentence"], SECOND)
        self.assertEqual("".join(t["tokens"]), SECOND)
        self.assertEqual(t["changed_sentence"], "the big dog sees a blue hat.")
        self.assertEqual(t["masks"]["causal"]["weight_on_future_row_0"], 0.0)
        with tempfile.TemporaryDirectory() as out:      # the table and the picture in one run
            path = os.path.join(out, "dog.svg")
            done = run_main(ta.main, "--sentence", SECOND, "--table", "--svg", path)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("sees", done.stdout)
            with open(path, encoding="utf-8") as f:
                cells = panels(f.read())[ta.PANEL_TITLES["causal"]][0]
        self.assertEqual(len(cells), len(t["tokens"]) ** 2)

    def test_an_edit_of_another_length_says_which_rows_one_side_lacks(self):
        done = run_main(ta.main, "--sentence", "mia", "--table")     # 'mia' -> 'hat': 1 -> 2 tokens
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("editing 'mia' -> 'hat' (1 -> 2 tokens: position 2 and later are on one "
                      "side only):", done.stdout)
        done = run_main(ta.main, "--table")             # the lesson's edit keeps the length
        self.assertIn("editing 'mia has a red ball.' -> 'mia has a red hat.':\n", done.stdout)

    def test_bad_sentence_is_one_line(self):
        for args, fragment in (
            (("--sentence", "The dog."), "character 'T' at position 1"),
            (
                ("--sentence", SECOND, "--check"),
                "--write and --check work on the recorded file alone",
            ),
            (("--sentence", "..."), "has no word to replace"),
        ):
            with self.subTest(args=args):
                done = run_main(ta.main, *args)
                self.assertNotEqual(done.returncode, 0)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertIn(fragment, done.stderr)


class Lab06Views(unittest.TestCase):
    """The lab's --svg and --table, run once as a learner runs them."""

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "lab.svg")
            run_script("perturb_attention.py", "--svg", path, "--all")
            with open(path, encoding="utf-8") as f:
                cls.svg = f.read()
        cls.table = run_script("perturb_attention.py", "--table", "--all").stdout

    def test_svg_shows_baseline_interventions_and_bug_with_changed_rows_outlined(self):
        result = lab06.lab()
        svg = panels(self.svg)
        self.assertEqual(len(svg), 6)
        outlined = {title: len(highlight) for title, (_, _, highlight, _) in svg.items()}
        for key, title in lab06.TITLES.items():
            self.assertEqual(
                outlined[title], len(result["interventions"][key]["weight_rows_changed"]), title
            )
        removal = svg[lab06.TITLES["connection_removal"]][1]
        self.assertIn(("2", "1"), [(r.get("data-row"), r.get("data-col")) for r in removal])

    def test_table_shows_only_the_rows_each_intervention_changed_before_and_after(self):
        text = self.table
        for part_one in ("\nQ\n", "S = Q·Kᵀ/√d", "A as fractions", "softmax of each row",
                         "z_i = Σ", "z₁ = "):
            self.assertNotIn(part_one, text)
        query = text[text.index("query perturbation") : text.index("connection removal")]
        self.assertEqual(query.splitlines()[1:4], [
            "  s₃: [ln 2, ln 2, 2 ln 2] → [ln 2, 0, ln 2], moved by [0, -ln 2, -ln 2]",
            "  a₃: [1/4, 1/4, 1/2] → [2/5, 1/5, 2/5], moved by [3/20, -1/20, -1/10]",
            "  z₃: [3/2, 3] → [8/5, 12/5], moved by [1/10, -3/5]"])
        ablation = text[text.index("value ablation") : text.index("query perturbation")]
        self.assertIn("  A: no row changed", ablation)
        self.assertNotIn("z₁", ablation)

    def test_svg_puts_z_beside_each_map_and_outlines_its_changed_rows(self):
        root = ET.fromstring(self.svg)
        groups = {g.get("data-title"): g for g in root.iter(f"{SVG}g") if g.get("class") == "panel"}
        ablation = groups[lab06.TITLES["value_ablation"]]
        side_changed = [
            r for r in ablation.iter(f"{SVG}rect") if "side-changed" in r.get("class", "")
        ]
        self.assertEqual(len(side_changed), 2, "v₂ := 0 changes z₂ and z₃")
        self.assertLessEqual(float(root.get("width")), 900)

    def test_weights_zeroed_after_the_softmax_are_marked_apart_from_masked_ones(self):
        svg = self.svg
        bug = panels(svg)["buggy: softmax, then zero the future"][0]
        zeroed = [r for r in bug if r.get("class") == "cell zeroed"]
        self.assertEqual(len(zeroed), 3)
        self.assertTrue(all(r.get("fill") == "url(#zeroed)" for r in zeroed))
        self.assertIn("zeroed after the softmax", svg)

    def test_the_lesson_figure_outlines_the_future_where_it_leaks(self):
        root = ET.fromstring(ta.weights_svg())
        outlined = {
            g.get("data-title"): len(list(g.iter(f"{SVG}polygon")))
            for g in root.iter(f"{SVG}g")
            if g.get("class") == "panel"
        }
        self.assertEqual(
            outlined,
            {ta.PANEL_TITLES["causal"]: 0, ta.PANEL_TITLES["none"]: 1, ta.PANEL_TITLES["zero"]: 1},
        )
        self.assertLessEqual(float(root.get("width")), 910)


class CountedFromOne(MessageAssertions, unittest.TestCase):

    def test_a_repeated_tokens_label_is_its_position_counted_from_1(self):
        self.assertEqual(token_labels(["a", " b", "a", " a"]), ["a@1", "␣b", "a@3", "␣a"])
        # a token that reads like another's label: then every label has its position
        self.assertEqual(token_labels(["a", "a@3", "a"]), ["a@1", "a@3@2", "a@3"])

    def test_positions_text_refuses_what_is_not_a_list_of_indices_from_0(self):
        self.assertMessage(TypeError, "positions_text needs a list of int indices, got [1.0]",
                           positions_text, [1.0])
        self.assertMessage(ValueError, "positions_text needs indices from 0, got [-1]",
                           positions_text, (-1,))


if __name__ == "__main__":
    unittest.main()

"""The explorer pages: every number they hold is the trace's, they need nothing from outside, and in
a real browser each interaction shows the right numbers.

The first classes read the pages' HTML and embedded JSON with the standard library.
ExplorerInBrowser drives Debian's chromium through chromedriver (tests/browser.py): it runs when
EXPLORER_BROWSER_TESTS=1 is set, as .ci/run sets it (the browser tests take seconds, too slow for
every run of the suite), and skips with one line where chromium or chromedriver is not installed.
"""

import json
import math
import os
import struct
import tempfile
import unittest
from html.parser import HTMLParser
from math import fsum
from unittest import mock

from attention import attention_forward, softmax_row
from common.golden import rounded
from common.safe_io import read_text
from common.views import number, token_labels
from explorer import page as explorer
from lab06 import page as lab_explorer
from lab06 import lab as lab06
from tests.helpers import HERE, MessageAssertions, folder_copy, run_main, run_script
import trace_attention as ta

BROWSER_VARIABLE = "EXPLORER_BROWSER_TESTS"
LESSON_FILE, LAB_FILE = "explorer/attention-explorer.html", "lab06/lab06-explorer.html"
SCREENSHOT = "explorer/attention-explorer.png"
README_STATE = "mode=zero&row=2&col=4"     # the state the README's screenshot shows
LAB_KEYS = ["baseline", *lab06.TITLES, "post-softmax"]


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
    return lab_explorer.lab_page(result)


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


class PageStandsAlone(MessageAssertions, unittest.TestCase):

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
            lab_explorer.lab_page({"baseline": {"weights": [[1.0]] * 65}})

    def test_each_page_holds_explorer_css_and_explorer_js_whole(self):
        style, script = read_text(explorer.STYLE_PATH), read_text(explorer.SCRIPT_PATH)
        for name, page in (("lesson", LESSON), ("lab", LAB)):
            blocks = Parsed(page).blocks
            self.assertTrue(style in blocks["style"], f"{name}'s page lacks explorer.css")
            self.assertTrue(script in blocks["script"], f"{name}'s page lacks explorer.js")

    def test_a_missing_style_or_script_file_is_a_one_line_error_of_html(self):
        with tempfile.TemporaryDirectory() as tmp:
            missing, out = os.path.join(tmp, "explorer.css"), os.path.join(tmp, "page.html")
            for name in ("STYLE_PATH", "SCRIPT_PATH"):
                with self.subTest(file=name), mock.patch.object(explorer, name, missing):
                    self.assertOneLineError(run_main(ta.main, "--html", out),
                                            f"cannot read {missing}")
                    self.assertFalse(os.path.exists(out))

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
        trace, modes = read_json("lab06/perturb-trace.json"), embedded(LAB)["modes"]
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
        maps = explorer.lesson_maps(params, x) + lab_explorer.lab_maps(lab06.cases(result))
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
        self.assertEqual([m["key"] for m in data["modes"]],
                         ["baseline", "intervention", "post-softmax"])
        self.assertEqual(data["modes"][1]["title"], "v₂ := 0")

    def test_html_beside_write_or_check_is_a_one_line_error(self):
        for script in ("trace_attention.py", "perturb_attention.py"):
            for flag in ("--write", "--check"):
                with self.subTest(script=script, flag=flag):
                    self.assertOneLineError(run_script(script, flag, "--html", "x.html"),
                                            "drop --html")

    def test_bad_html_targets_are_one_line_errors(self):
        # both scripts write through cli.save_view: the lesson's stands for the two
        with tempfile.TemporaryDirectory() as tmp, folder_copy("attention-trace.json") as copy:
            inside_a_file = os.path.join(tmp, "file.txt")
            open(inside_a_file, "w").close()
            for path, fragment in (("", "the output path is empty"),
                                   (os.path.join(inside_a_file, "x.html"), "cannot write"),
                                   (os.path.join(copy, "attention-trace.json"),
                                    "one of this folder's own files")):
                with self.subTest(path=path):
                    self.assertOneLineError(run_script("trace_attention.py", "--html", path),
                                            fragment)

    def test_screenshot_command_refuses_a_missing_page_in_one_line(self):
        from tests import browser     # here: urllib.request is slower to load than most tests
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "missing.html")
            self.assertOneLineError(run_main(browser.main, missing, os.path.join(tmp, "x.png")),
                                    f"cannot read {missing}")
            self.assertOneLineError(run_main(browser.main, os.path.join(HERE, LESSON_FILE), ""),
                                    "the output path is empty")

    def test_committed_pages_are_what_html_writes_now(self):
        for name, page, command in ((LESSON_FILE, LESSON, "trace_attention.py"),
                                    (LAB_FILE, LAB, "perturb_attention.py")):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                self.assertEqual(f.read(), page,
                                 f"{name} is stale: run python3 {command} --html {name}")

    def test_readme_shows_the_screenshot_and_says_how_to_open_the_page(self):
        with open(os.path.join(HERE, "explorer", "README.md"), encoding="utf-8") as f:
            readme = f.read()       # its links are relative to explorer/; its commands run on top
        picture = os.path.relpath(SCREENSHOT, "explorer")
        for text in (f"]({picture})", f"python3 trace_attention.py --html {LESSON_FILE}",
                     f"python3 perturb_attention.py --html {LAB_FILE}",
                     f"python3 -m tests.browser {LESSON_FILE} {SCREENSHOT} --fragment "
                     f"'{README_STATE}'",
                     f"#{README_STATE}"):
            self.assertTrue(text in readme, f"explorer/README.md should say {text!r}")
        with open(os.path.join(HERE, SCREENSHOT), "rb") as f:
            self.assertEqual(png_size(f.read())[0], 880, "taken at the README's 880 px")


@unittest.skipUnless(os.environ.get(BROWSER_VARIABLE) == "1",
                     f"set {BROWSER_VARIABLE}=1 to drive chromium (.ci/run does)")
class ExplorerInBrowser(unittest.TestCase):
    """Both pages in one headless chromium, shared by every test: open a state, hover, click,
    press keys, then read the numbers the page shows and compare them with the trace."""

    @classmethod
    def setUpClass(cls):
        from tests import browser     # here: urllib.request is slower to load than most tests
        reason = browser.missing()
        if reason:
            raise unittest.SkipTest(reason)
        cls.folder = tempfile.TemporaryDirectory()
        cls.pages = {}
        for name, page in ((LESSON_FILE, LESSON), (LAB_FILE, LAB)):
            cls.pages[name] = os.path.join(cls.folder.name, os.path.basename(name))
            with open(cls.pages[name], "w", encoding="utf-8") as f:
                f.write(page)
        try:
            cls.browser = browser.Browser(width=880)
        except BaseException:
            cls.folder.cleanup()
            raise
        cls.runs = lesson_runs()[0]
        cls.trace = read_json("attention-trace.json")

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()
        cls.folder.cleanup()

    # ---- what the page shows -------------------------------------------------------------------

    def open(self, name=LESSON_FILE, fragment=""):
        self.browser.open(self.pages[name], fragment)

    def shown(self, name):
        """The text of the first number called name in the arithmetic panel."""
        return self.browser.text(f'#arithmetic span[data-name="{name}"]')

    def status(self):
        return self.browser.text("#status")

    def fragment(self):
        return self.browser.run("return location.hash")

    def cell(self, i, j):
        return f'td.cell[data-row="{i}"][data-col="{j}"]'

    def cells(self):
        """Every cell's text, row by row, as the page shows it."""
        return self.browser.run("return [...document.querySelectorAll('#grid tbody tr')].map(tr => "
                                "[...tr.querySelectorAll('td.cell')].map(td => td.innerText))")

    def pressed(self):
        return self.browser.run("return document.querySelector('button.mode[aria-pressed=true]')"
                                ".dataset.mode")

    def wait_until(self, read, value):
        """Poll read() until it returns value; fail naming both after browser.TIMEOUT."""
        try:
            self.browser.wait_for(lambda: read() == value, f"{read.__name__}() == {value!r}")
        except TimeoutError:
            self.assertEqual(read(), value)

    def wait_for_status(self, start):
        try:
            self.browser.wait_for(lambda: self.status().startswith(start), "the status")
        except TimeoutError:
            self.fail(f"the status should start {start!r}, it says {self.status()!r}")

    def lesson_cells(self, mode):
        """What each cell must show: its weight to 4 decimals, "0" where the mask blocks it."""
        run = self.runs[mode]
        return [["0" if s == -math.inf else number(w) for w, s in zip(w_row, s_row)]
                for w_row, s_row in zip(run["weights"], run["scores"])]

    # ---- the tests -----------------------------------------------------------------------------

    def test_opens_from_file_and_asks_the_network_for_nothing(self):
        self.open()
        self.assertEqual(self.browser.run(
            "return [location.protocol, performance.getEntriesByType('resource').length]"),
            ["file:", 0])
        self.assertEqual(self.pressed(), "causal")
        self.assertTrue(self.status().startswith("Hover a cell"))

    def test_each_mask_mode_shows_its_weights_in_every_cell(self):
        self.open()
        recorded = [[number(w) if s is not None else "0" for w, s in zip(w_row, s_row)]
                    for w_row, s_row in zip(self.trace["weights"], self.trace["scores"])]
        self.assertEqual(self.cells(), recorded, "attention-trace.json's weights")
        for mode in ("none", "zero", "causal"):
            self.browser.click(f'button[data-mode="{mode}"]')
            self.wait_until(self.pressed, mode)
            self.assertEqual(self.cells(), self.lesson_cells(mode), mode)
            self.assertEqual(self.fragment(), f"#mode={mode}")

    def test_hovering_a_cell_shows_its_arithmetic_and_highlights_its_row(self):
        self.open()
        self.browser.hover(self.cell(2, 0))
        self.wait_for_status("Showing row 3 (␣a), column 1 (mia)")
        t = self.trace
        self.assertEqual(self.shown("score"), number(t["scores"][2][0]))
        self.assertEqual(self.shown("weight"), number(t["weights"][2][0]))
        self.assertEqual((self.shown("q.1"), self.shown("k.2")),
                         (number(t["q"][2][0]), number(t["k"][0][1])))
        self.assertEqual(self.shown("v"), vector_text(t["v"][0]))
        self.assertEqual(self.browser.run(
            "return [...document.querySelectorAll('#grid tbody tr')].filter("
            "tr => !tr.querySelector('td.cell').classList.contains('dim')).map("
            "tr => tr.querySelector('th.row').innerText)"), ["␣a"], "only row 3 stands out")
        self.assertEqual(self.fragment(), "#mode=causal", "hovering is not a state to link")

    def test_a_click_locks_and_a_second_click_or_escape_unlocks(self):
        self.open()
        self.browser.click(self.cell(1, 0))
        self.wait_until(self.fragment, "#mode=causal&row=2&col=1")
        self.browser.hover(self.cell(4, 2))
        self.assertTrue(self.status().startswith("Locked on row 2 (␣has), column 1 (mia)"))
        self.assertEqual(self.shown("weight"), number(self.trace["weights"][1][0]))
        self.browser.click(self.cell(1, 0))
        self.wait_until(self.fragment, "#mode=causal")
        self.browser.hover(self.cell(4, 2))
        self.wait_for_status("Showing row 5 (␣ball), column 3 (␣a)")
        self.assertEqual(self.shown("weight"), number(self.trace["weights"][4][2]))
        self.browser.click(self.cell(4, 2))
        self.wait_until(self.fragment, "#mode=causal&row=5&col=3")
        self.browser.keys("Escape")
        self.wait_until(self.fragment, "#mode=causal")
        self.wait_for_status("Showing row 5")

    def test_arrow_keys_move_the_selection_and_enter_or_space_lock_it(self):
        self.open()
        self.browser.click(self.cell(0, 0))
        self.assertEqual(self.browser.run("return document.activeElement.id"), "grid")
        self.browser.keys("ArrowDown", "ArrowDown", "ArrowRight")
        self.wait_until(self.fragment, "#mode=causal&row=3&col=2")
        self.assertEqual(self.shown("weight"), number(self.trace["weights"][2][1]))
        self.browser.keys("ArrowUp", "ArrowUp", "ArrowUp", "ArrowRight")   # stops at row 1
        self.wait_until(self.fragment, "#mode=causal&row=1&col=3")
        self.assertEqual((self.shown("score"), self.shown("weight")), ("−∞", "0.0000"))
        self.browser.keys("Enter")
        self.wait_until(self.fragment, "#mode=causal")
        self.browser.keys("Space")
        self.wait_until(self.fragment, "#mode=causal&row=1&col=3")

    def test_tab_and_enter_switch_the_mask_from_the_keyboard(self):
        self.open()
        self.browser.run("document.querySelector('button.mode').focus()")
        self.browser.keys("Tab", "Enter")
        self.wait_until(self.pressed, "none")
        self.assertEqual(self.cells(), self.lesson_cells("none"))

    def test_a_fragment_opens_the_page_in_its_state(self):
        self.open(fragment="mode=zero&row=1&col=2")
        self.assertEqual(self.pressed(), "zero")
        self.assertTrue(self.status().startswith("Locked on row 1 (mia), column 2 (␣has)"))
        self.assertEqual(self.cells(), self.lesson_cells("zero"))
        self.assertEqual(self.shown("score"), "0.0000", "the bug's score for the future")
        self.assertEqual(self.shown("weight"), number(self.runs["zero"]["weights"][0][1]))
        self.open(fragment="mode=bogus&row=99&col=x")
        self.assertEqual((self.pressed(), self.fragment()), ("causal", "#mode=causal"))

    def test_editing_the_fragment_moves_the_page_to_its_state(self):
        self.open()
        self.browser.run("location.hash = 'mode=none&row=6&col=6'")
        self.wait_for_status("Locked on row 6 (.), column 6 (.)")
        self.assertEqual(self.pressed(), "none")
        self.assertEqual(self.shown("weight"), number(self.runs["none"]["weights"][5][5]))

    def test_changed_rows_are_outlined_and_marked_in_words(self):
        read = ("return [...document.querySelectorAll('#grid tbody tr')].map(tr => "
                "[tr.classList.contains('changed'), tr.querySelector('td.mark').innerText])")
        self.open(fragment="mode=none")
        self.assertEqual(self.browser.run(read), [[True, "◀ changed"]] * 5 + [[False, ""]])
        self.open(fragment="mode=causal")
        self.assertEqual(self.browser.run(read), [[False, ""]] * 6)

    def test_labs_page_hides_each_map_until_it_is_revealed(self):
        """Predict first: the lab's page opens with no number of its answers, not even which
        rows changed, and shows one map at a time as the learner reveals it."""
        self.open(LAB_FILE)
        for key in LAB_KEYS:
            self.browser.click(f'button[data-mode="{key}"]')
            self.wait_until(self.pressed, key)
            self.assertEqual({text for row in self.cells() for text in row}, {"?"}, key)
            self.assertEqual(self.browser.run(
                "return [...document.querySelectorAll('td.side, td.mark, #arithmetic')]"
                ".map(e => e.innerText).join('').replace(/[?\\s]/g, '')"), "", key)
        self.browser.click(f'button[data-mode="{LAB_KEYS[0]}"]')
        self.browser.click("#reveal")
        self.wait_until(lambda: self.cells()[0][0], "1.0000")
        self.browser.click(f'button[data-mode="{LAB_KEYS[1]}"]')
        self.wait_until(lambda: self.cells()[0][0], "?")          # the others stay hidden
        self.open(LAB_FILE, "answers=shown")
        self.assertEqual(self.cells()[0][0], "1.0000")
        self.assertEqual(self.fragment(), f"#mode={LAB_KEYS[0]}&answers=shown")

    def test_labs_page_shows_each_map_and_its_fractions(self):
        result = lab06.lab()
        self.open(LAB_FILE, "answers=shown")
        for key, case in zip(LAB_KEYS, lab06.cases(result)):
            self.browser.click(f'button[data-mode="{key}"]')
            self.wait_until(self.pressed, key)
            marks = case["zeroed"] or case["hatched"]
            self.assertEqual(self.cells(), [
                ["0" if h or z else number(w) for w, h, z in zip(w_row, h_row, z_row)]
                for w_row, h_row, z_row in zip(case["weights"], case["hatched"], marks)], key)
        self.open(LAB_FILE, "mode=future_key_perturbation&row=3&col=1&answers=shown")
        self.assertEqual(self.shown("weight"), "0.1000")
        self.assertIn("(≈ 1/10)", self.browser.text("#arithmetic"))
        self.open(LAB_FILE, "mode=baseline&row=2&col=1&answers=shown")
        self.assertIn("0.3333 (= 1/3)", self.browser.text("#arithmetic"))
        self.open(LAB_FILE, "mode=connection_removal&row=3&col=2&answers=shown")
        self.assertEqual((self.shown("score"), self.shown("weight")), ("−∞", "0.0000"))

    def test_page_fits_880_px_with_no_text_under_12_px(self):
        self.open(fragment="mode=zero&row=2&col=4")
        width, scroll, smallest = self.browser.run(
            "const sizes = [...document.querySelectorAll('td, th, #arithmetic .line, button')]"
            ".map(e => parseFloat(getComputedStyle(e).fontSize));"
            "return [innerWidth, document.documentElement.scrollWidth, Math.min(...sizes)]")
        self.assertEqual(width, 880)
        self.assertLessEqual(scroll, 880, "no sideways scrolling at 880 px")
        self.assertGreaterEqual(smallest, 12)

    def test_screenshots_of_each_mask_mode_are_880_px_pngs(self):
        for mode in ("causal", "none", "zero"):
            self.open(fragment=f"mode={mode}&row=4&col=2")
            path = os.path.join(self.folder.name, f"{mode}.png")
            png = self.browser.screenshot(path)
            self.assertEqual(png_size(png)[0], 880, mode)
            self.assertTrue(os.path.getsize(path) > 10_000, f"{mode}: an empty picture?")


def png_size(data):
    """(width, height) of PNG bytes; ValueError when they are not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError(f"not a PNG: it starts {data[:16]!r}")
    return struct.unpack(">II", data[16:24])


if __name__ == "__main__":
    unittest.main()

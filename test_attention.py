"""The lesson's twelve checks of attention.py and trace_attention.py: the recorded trace and the
figures the lesson prints, the shapes, the mask, the gradients, the broken masks beside the right
one. Run them with `python3 -m unittest -v test_attention.py`; every other test is in tests/."""

import math
import os
import unittest
from math import fsum

from attention import MASK_MODES, attention_backward, attention_forward, matmul, shape, transpose
from common.golden import to_json
import trace_attention as ta

HERE = os.path.dirname(os.path.abspath(__file__))

# Central differences with EPS = 1e-6 on a loss of size ~1: the truncation error is O(EPS²) ≈ 1e-12
# and the rounding error about 1e-16 / EPS ≈ 1e-10, so a correct gradient agrees to well within 1e-8
# and a wrong one (a dropped path, a missing 1/√d) misses by far more.
GRAD_TOLERANCE = 1e-8


def lesson_run(mask="causal", sentence=ta.SENTENCE):
    tokenizer, params, embedding = ta.lesson_setup()
    _, x = ta.inputs(tokenizer, sentence, embedding)
    return params, x, attention_forward(params, x, mask)


class LessonChecks(unittest.TestCase):

    def test_recorded_trace(self):
        with open(os.path.join(HERE, "attention-trace.json"), encoding="utf-8") as f:
            self.assertEqual(
                f.read(), to_json(ta.trace()), "attention-trace.json is stale: run --write"
            )

    def test_lesson_figures(self):
        """The numbers the lesson prints, as it prints them."""
        t = ta.trace()
        self.assertEqual(t["tokens"], ["mia", " has", " a", " red", " ball", "."])
        self.assertEqual(t["ids"], [58, 36, 33, 89, 85, 4])
        self.assertEqual(t["changed_tokens"], ["mia", " has", " a", " red", " hat", "."])
        self.assertEqual(t["x"][0], [-0.75, 0.28, 0.69, 0.22])
        self.assertEqual(t["params"]["Wq"][0], [-0.05, 0.06])
        self.assertEqual(t["scores"][0], [-0.0306, None, None, None, None, None])
        self.assertEqual(t["scores"][5], [-0.0431, 0.1031, -0.0155, 0.0036, -0.0151, 0.0892])
        self.assertEqual(t["weights"][1], [0.5164, 0.4836, 0.0, 0.0, 0.0, 0.0])
        self.assertEqual(t["weights"][5], [0.1562, 0.1808, 0.1606, 0.1636, 0.1606, 0.1783])
        self.assertEqual(t["row_sums"], [1.0] * 6)
        self.assertEqual(t["gradient_check"], {"epsilon": 1e-06, "max_error_rounded": 0.0})
        self.assertEqual(
            t["masks"]["causal"],
            {"rows_changed_by_the_edit": [4, 5], "weight_on_future_row_0": 0.0},
        )
        self.assertEqual(t["masks"]["none"]["rows_changed_by_the_edit"], [0, 1, 2, 3, 4, 5])
        self.assertEqual(t["masks"]["none"]["weight_on_future_row_0"], 0.8379)
        self.assertEqual(t["masks"]["zero"]["rows_changed_by_the_edit"], [0, 1, 2, 3, 4, 5])
        self.assertEqual(t["masks"]["zero"]["weight_on_future_row_0"], 0.8375)

    def test_shapes(self):
        params, x, cache = lesson_run()
        T = len(x)
        expected = {
            "q": (T, 2),
            "k": (T, 2),
            "v": (T, 2),
            "scores": (T, T),
            "weights": (T, T),
            "mixed": (T, 2),
            "out": (T, 4),
        }
        for name, want in expected.items():
            self.assertEqual(shape(cache[name]), want, name)
        self.assertEqual(
            {name: shape(m) for name, m in params.items()},
            {"Wq": (4, 2), "Wk": (4, 2), "Wv": (4, 2), "Wo": (2, 4)},
        )

    def test_rows_sum_to_one_and_future_weights_are_zero(self):
        _, _, cache = lesson_run()
        for i, row in enumerate(cache["weights"]):
            self.assertAlmostEqual(fsum(row), 1.0, places=15, msg=f"row {i}")
            self.assertEqual(
                row[i + 1 :], [0.0] * (len(row) - i - 1), f"row {i} puts weight on the future"
            )
            self.assertEqual(cache["scores"][i][i + 1 :], [-math.inf] * (len(row) - i - 1))

    def check_gradients(self, mask):
        params, x, cache = lesson_run(mask)
        r = ta.readout(len(x))
        grads, d_x = attention_backward(params, x, cache, r)
        numeric = ta.numeric_grad(params, x, r, mask)
        numeric["x"] = ta.central_differences(lambda: ta.loss(params, x, r, mask), x)
        grads["x"] = d_x
        for name in ("Wq", "Wk", "Wv", "Wo", "x"):
            for i, (row_a, row_n) in enumerate(zip(grads[name], numeric[name])):
                for j, (a, n) in enumerate(zip(row_a, row_n)):
                    self.assertLess(
                        abs(a - n), GRAD_TOLERANCE, f"{mask}: d{name}[{i}][{j}] {a} vs numeric {n}"
                    )

    def test_gradients_match_finite_differences(self):
        """Every weight and every input value, in every mask mode. In "zero" mode the future
        scores are constants: a backward that sent them to q and k would fail."""
        for mode in MASK_MODES:
            with self.subTest(mode=mode):
                self.check_gradients(mode)

    def test_each_position_attends_to_itself(self):
        _, _, cache = lesson_run()
        for i, row in enumerate(cache["weights"]):
            self.assertGreater(row[i], 0.0, f"position {i} gives itself no weight")
        self.assertEqual(cache["weights"][0][0], 1.0)

    def test_scores_are_scaled_by_the_square_root_of_the_head_size(self):
        _, _, cache = lesson_run()
        q, k = cache["q"], cache["k"]
        for i in range(len(q)):
            for j in range(i + 1):
                unscaled = fsum(a * b for a, b in zip(q[i], k[j]))
                self.assertEqual(
                    cache["scores"][i][j], unscaled * (1 / math.sqrt(2)), f"scores[{i}][{j}]"
                )

    def test_future_token_does_not_change_earlier_rows(self):
        params, x, cache = lesson_run()
        for position in range(len(x)):
            edited = [list(row) for row in x]
            edited[position] = [value + 0.5 for value in edited[position]]
            out = attention_forward(params, edited)["out"]
            self.assertEqual(
                out[:position], cache["out"][:position], f"editing {position} moved an earlier row"
            )
            self.assertNotEqual(out[position], cache["out"][position])

    def test_no_mask_leaks_the_future(self):
        params, x, cache = lesson_run("none")
        edited = x[:-1] + [[value + 0.5 for value in x[-1]]]
        self.assertNotEqual(attention_forward(params, edited, "none")["out"][0], cache["out"][0])
        self.assertGreater(fsum(cache["weights"][0][1:]), 0.5)

    def test_zeroed_scores_still_leak(self):
        """Setting future scores to 0.0 is not masking: exp(0) = 1 still gives them weight."""
        params, x, cache = lesson_run("zero")
        self.assertEqual(cache["scores"][0][1:], [0.0] * 5)
        self.assertTrue(all(w > 0 for w in cache["weights"][0][1:]))
        edited = x[:-1] + [[value + 0.5 for value in x[-1]]]
        self.assertNotEqual(attention_forward(params, edited, "zero")["out"][0], cache["out"][0])

    def test_changed_sentence_moves_only_the_edited_row_and_later(self):
        params, x, cache = lesson_run()
        _, _, changed = lesson_run(sentence=ta.CHANGED)
        self.assertEqual(ta.changed_rows(cache["out"], changed["out"]), [4, 5])

    def test_matmul_and_transpose(self):
        self.assertEqual(matmul([[1, 2], [3, 4]], [[5], [6]]), [[17], [39]])
        self.assertEqual(transpose([[1, 2, 3]]), [[1], [2], [3]])
        self.assertEqual(shape([[1, 2, 3], [4, 5, 6]]), (2, 3))


if __name__ == "__main__":
    unittest.main()

"""Properties of the layer over random shapes, and the layer checked against the lesson's listing
and the core (core/masked.py) against the layer.

Every random case comes from a fixed seed and names its seed, case number, shape and mask when it
fails. `reference.listing` evaluates the lesson's equations as the lesson's own listing writes them.
Because every sum is math.fsum, correctly rounded, the order of summation changes no bit, and
attention.py must agree with it exactly. bench_attention.py times the same two.
"""

import math
import random
import unittest
from math import fsum

from attention import (MASK_MODES, attention_backward, attention_forward, causal_mask, matmul,
                       transpose)
from benchmarks.reference import listing
from common.gradcheck import central_differences
from core.masked import attention_core, attention_core_backward
from lab06 import attend, masked_softmax

SEED = 20261129
CASES = 60  # T up to 16, d_model up to 8, d_head up to 4: every shape from 1 × 1 × 1 up, each mode
GRAD_EVERY = 20  # the finite-difference check runs on every 20th case: 3 cases, one in each mode
GRAD_RELATIVE = 1e-6  # |analytic − numeric| ≤ 1e-6 · max(1, |analytic|)


def random_matrix(rng, rows, cols, scale=1.0):
    return [[rng.uniform(-scale, scale) for _ in range(cols)] for _ in range(rows)]


def random_cases():
    """(case, T, d_model, d_head, mask, params, x, d_out), the same every run."""
    rng = random.Random(SEED)
    for case in range(CASES):
        T, d_model, d_head = rng.randint(1, 16), rng.randint(1, 8), rng.randint(1, 4)
        mask = MASK_MODES[case % 3]
        params = {
            "Wq": random_matrix(rng, d_model, d_head),
            "Wk": random_matrix(rng, d_model, d_head),
            "Wv": random_matrix(rng, d_model, d_head),
            "Wo": random_matrix(rng, d_head, d_model),
        }
        yield (
            case,
            T,
            d_model,
            d_head,
            mask,
            params,
            random_matrix(rng, T, d_model),
            random_matrix(rng, T, d_model),
        )


class Properties(unittest.TestCase):

    def for_each_case(self, check):
        for case, T, d_model, d_head, mask, params, x, d_out in random_cases():
            where = (
                f"seed {SEED}, case {case}: T={T}, d_model={d_model}, d_head={d_head},"
                f" mask={mask!r}"
            )
            with self.subTest(where):
                check(case, mask, params, x, d_out, where)

    def test_the_layer_is_bit_identical_to_the_lessons_listing(self):
        def check(case, mask, params, x, d_out, where):
            cache = attention_forward(params, x, mask)
            grads, d_x = attention_backward(params, x, cache, d_out)
            out, weights, listing_grads, listing_d_x = listing(params, x, mask, d_out)
            self.assertEqual(cache["out"], out, where)
            self.assertEqual(cache["weights"], weights, where)
            self.assertEqual(grads, listing_grads, where)
            self.assertEqual(d_x, listing_d_x, where)

        self.for_each_case(check)

    def test_the_core_is_the_layers_middle_bit_for_bit(self):
        """core/masked.py on the layer's q, k, v and each mode's allowed and blocked score: its
        raw_scores, scores, weights and mixed are the layer's, and its d_q, d_k, d_v give the
        layer's gradients of Wq, Wk, Wv, every bit."""
        def check(case, mask, params, x, d_out, where):
            cache = attention_forward(params, x, mask)
            T = len(x)
            allowed = [[True] * T for _ in range(T)] if mask == "none" else causal_mask(T)
            core = attention_core(cache["q"], cache["k"], cache["v"], allowed,
                                  0.0 if mask == "zero" else -math.inf)
            for name in ("raw_scores", "scores", "weights", "mixed"):
                self.assertEqual(core[name], cache[name], f"{where}: {name}")
            grads, _ = attention_backward(params, x, cache, d_out)
            d_mixed = matmul(d_out, transpose(params["Wo"]))
            for name, d in zip(("Wq", "Wk", "Wv"), attention_core_backward(core, d_mixed)):
                self.assertEqual(matmul(transpose(x), d), grads[name], f"{where}: d{name}")

        self.for_each_case(check)

    def test_rows_sum_to_one(self):
        def check(case, mask, params, x, d_out, where):
            for i, row in enumerate(attention_forward(params, x, mask)["weights"]):
                self.assertLess(abs(fsum(row) - 1.0), 1e-12, f"{where}, row {i}")

        self.for_each_case(check)

    def test_future_weights_are_exactly_zero_in_causal_mode(self):
        def check(case, mask, params, x, d_out, where):
            for i, row in enumerate(attention_forward(params, x, "causal")["weights"]):
                self.assertTrue(all(w == 0.0 for w in row[i + 1 :]), f"{where}, row {i}")

        self.for_each_case(check)

    def test_editing_a_position_changes_only_that_row_and_later(self):
        """On the causal cases (a third of them): the mask is what makes it true."""
        def check(case, mask, params, x, d_out, where):
            if mask != "causal":
                return
            out = attention_forward(params, x, "causal")["out"]
            for j in range(len(x)):
                edited = [list(row) for row in x]
                edited[j] = [value + 0.25 for value in edited[j]]
                self.assertEqual(
                    attention_forward(params, edited, "causal")["out"][:j],
                    out[:j],
                    f"{where}: editing position {j} moved an earlier row",
                )

        self.for_each_case(check)

    def test_gradients_match_central_differences(self):
        def check(case, mask, params, x, d_out, where):
            if case % GRAD_EVERY:
                return
            cache = attention_forward(params, x, mask)
            grads, grads["x"] = attention_backward(params, x, cache, d_out)

            def loss():
                out = attention_forward(params, x, mask)["out"]
                return fsum(
                    o * r for out_row, r_row in zip(out, d_out) for o, r in zip(out_row, r_row)
                )

            for name, matrix in (
                ("Wq", params["Wq"]),
                ("Wk", params["Wk"]),
                ("Wv", params["Wv"]),
                ("Wo", params["Wo"]),
                ("x", x),
            ):
                numeric = central_differences(loss, matrix)
                for i, (row_a, row_n) in enumerate(zip(grads[name], numeric)):
                    for j, (a, n) in enumerate(zip(row_a, row_n)):
                        self.assertLess(
                            abs(a - n),
                            GRAD_RELATIVE * max(1.0, abs(a)),
                            f"{where}: d{name}[{i}][{j}] {a} vs numeric {n}",
                        )

        self.for_each_case(check)

    def test_adding_a_constant_to_every_score_keeps_the_weights(self):
        def check(case, mask, params, x, d_out, where):
            cache = attention_forward(params, x, mask)
            for i, (row, weights) in enumerate(zip(cache["scores"], cache["weights"])):
                finite = [math.isfinite(s) for s in row]
                shifted = masked_softmax([s + 1000 for s in row], finite)
                self.assertLess(
                    max(abs(a - b) for a, b in zip(shifted, weights)), 1e-12, f"{where}, row {i}"
                )

        self.for_each_case(check)

    def test_scores_near_a_million_give_no_nan_and_no_overflow(self):
        rng = random.Random(SEED)
        for case in range(50):
            T, d = rng.randint(1, 16), rng.randint(1, 4)
            q, k, v = (
                random_matrix(rng, T, d, 1000.0),
                random_matrix(rng, T, d, 1000.0),
                random_matrix(rng, T, d),
            )
            cache = attend(q, k, v, causal_mask(T))
            where = f"seed {SEED}, case {case}: T={T}, d={d}"
            self.assertTrue(
                any(abs(s) > 1e5 for row in cache["scores"] for s in row if math.isfinite(s)), where
            )
            for i, row in enumerate(cache["weights"]):
                self.assertTrue(all(math.isfinite(w) for w in row), f"{where}, row {i}")
                self.assertLess(abs(fsum(row) - 1.0), 1e-12, f"{where}, row {i}")
            self.assertTrue(all(math.isfinite(m) for row in cache["mixed"] for m in row), where)


if __name__ == "__main__":
    unittest.main()

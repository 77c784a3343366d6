"""The two-layer model (training/two_layers.py): its hand-written backward through both layers and
the residual stream against central differences, and its question row against the whole second
layer's last row, numbers and gradients, bit for bit."""

import math
import unittest

from attention import attention_backward, attention_forward, init_attention, softmax_row
from common.gradcheck import central_differences, max_err
from tests.helpers import GRAD_TOLERANCE, bits, question_row_and_its_gradient
from training import two_layers

SEED = 20261201


class TwoLayers(unittest.TestCase):

    def test_gradient_through_both_layers_and_the_stream_matches_central_differences(self):
        """Embeddings -> layer 1 -> x0 + its out -> layer 2's question row -> x1[T−1] + its out
        -> unembedding -> loss, on a prompt of 4 tokens with one repeated: every parameter of
        both layers, E and U. E's gradient holds the prompt's rows only."""
        params = two_layers.init_params(6, SEED, d_model=3, d_head=2)
        prompt, answer = [4, 1, 4, 2], 5
        _, grads = two_layers.loss_and_grads(params, prompt, answer)
        self.assertEqual(sorted(grads["E"]), [1, 2, 4])
        grads["E"] = [grads["E"].get(t, [0.0] * 3) for t in range(6)]

        def loss():
            return -math.log(softmax_row(two_layers.forward(params, prompt)["logits"])[answer])

        numeric = {name: central_differences(loss, matrix) for name, matrix in params.items()}
        self.assertEqual(sorted(numeric), sorted(grads))
        self.assertLess(max_err(grads, numeric), GRAD_TOLERANCE)

    def test_the_second_layers_question_row_is_its_whole_last_row_bit_for_bit(self):
        """forward computes layer 2 at the question alone and loss_and_grads only what reaches it:
        attention_forward of layer 2 on x1, and attention_backward with dLoss/d(out) zero but in
        the last row, give the same numbers and layer 2's gradients to the last bit."""
        params = two_layers.init_params(6, SEED, d_model=4, d_head=3)
        for prompt, answer in (([0], 2), ([0, 1, 0], 3), ([3, 1, 4, 1, 5], 2)):
            with self.subTest(prompt=prompt):
                fw = two_layers.forward(params, prompt)
                full = attention_forward(two_layers.layer(params, 2), fw["x1"])
                d_logits = softmax_row(fw["logits"])
                d_logits[answer] -= 1.0
                d_out = question_row_and_its_gradient(self, fw["row"], fw["out2"], full, d_logits,
                                                      params["U"])
                expected, _ = attention_backward(two_layers.layer(params, 2), fw["x1"], full,
                                                 d_out)
                _, grads = two_layers.loss_and_grads(params, prompt, answer)
                for name, grad in expected.items():
                    self.assertEqual(bits(grads[f"{name}2"]), bits(grad), name)

    def test_layer_n_of_seed_s_starts_from_the_seed_2s_plus_n_minus_1(self):
        """Each layer's Wq, Wk, Wv and Wo are init_attention's for the seed 2s + n − 1, so seeds 0…4
        give their two layers ten different starts."""
        starts = []
        for seed in range(5):
            params = two_layers.init_params(4, seed, 3, 2)
            for n in two_layers.LAYERS:
                self.assertEqual(two_layers.layer(params, n),
                                 init_attention(3, 2, 2 * seed + n - 1))
                starts.append(str(params[f"Wq{n}"]))
        self.assertEqual(len(set(starts)), 10)

if __name__ == "__main__":
    unittest.main()

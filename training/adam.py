"""Adam, which trains the models: adam = Adam(params, steps), then adam.step(params, grads) each
step. What it leaves out: weight decay and a warm-up.
"""

from math import sqrt

LEARNING_RATE = 0.006          # Adam's, falling to 0 at the last step; 0.005 and 0.01 fell short
BETAS, ADAM_EPS = (0.9, 0.999), 1e-8


class Adam:
    """Adam, its learning rate falling linearly to 0 over steps; mean_grad and mean_sq_grad hold
    the running means of each weight's gradient and of its square."""

    def __init__(self, params, steps, learning_rate=LEARNING_RATE, rates=None):
        """rates: {name: its own learning rate} for weights that learn at another."""
        self.steps, self.learning_rate, self.t, self.rates = steps, learning_rate, 0, rates or {}
        self.mean_grad = {name: [[0.0] * len(row) for row in m] for name, m in params.items()}
        self.mean_sq_grad = {name: [[0.0] * len(row) for row in m] for name, m in params.items()}

    def step(self, params, grads):
        """w −= lr · m̂ / (√ŝ + eps) for each weight, m̂ and ŝ its running means undone of their
        start at zero; grads[name] a matrix, or {row: its gradient} (E's). A row of no or zero
        gradient is left as it is, running means and all (lazy, as PyTorch's SparseAdam)."""
        self.t += 1
        fall = 1 - (self.t - 1) / self.steps
        (b1, b2), (a1, a2) = BETAS, (1 - BETAS[0], 1 - BETAS[1])    # a: the new gradient's share
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for name, grad in grads.items():
            lr = self.rates.get(name, self.learning_rate) * fall
            rows = grad.items() if isinstance(grad, dict) else enumerate(grad)   # {row: gradient}
            for i, g_row in rows:
                if not any(g_row):
                    continue
                w_row, mean_row = params[name][i], self.mean_grad[name][i]
                mean_sq_row = self.mean_sq_grad[name][i]
                mean_row[:] = [b1 * m + a1 * g for m, g in zip(mean_row, g_row)]
                mean_sq_row[:] = [b2 * s + a2 * g * g for s, g in zip(mean_sq_row, g_row)]
                w_row[:] = [w - lr * (m / c1) / (sqrt(s / c2) + ADAM_EPS)
                            for w, m, s in zip(w_row, mean_row, mean_sq_row)]

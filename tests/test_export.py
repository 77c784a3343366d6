"""--export of the three doors (common/export.py): {"tokens", "attention"[layer][head][dest][src]},
the shape and the numbers checked in plain Python (neither viewer is needed), and no output over
an input or a project file."""

import json
import math
import os
import tempfile
import unittest

from common.export import attention_export
from tests.helpers import HERE, MessageAssertions, run_script


def exported(script, *args):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "attention.json")
        done = run_script(script, *args, "--export", path)
        if done.returncode != 0:
            raise AssertionError(done.stderr)
        with open(path, encoding="utf-8") as f:
            return json.load(f)


class Export(MessageAssertions, unittest.TestCase):

    def test_the_lesson_traces_export_is_one_6_by_6_head_causal_rows_summing_to_1(self):
        found = exported("trace_attention.py")
        with open(os.path.join(HERE, "attention-trace.json"), encoding="utf-8") as f:
            trace = json.load(f)
        attention = found["attention"]
        self.assertEqual(found["tokens"], trace["tokens"])
        self.assertEqual((len(attention), len(attention[0]), len(attention[0][0]),
                          {len(row) for row in attention[0][0]}), (1, 1, 6, {6}))
        for i, row in enumerate(attention[0][0]):
            self.assertAlmostEqual(math.fsum(row), 1.0, delta=1e-12)
            self.assertEqual(row[i + 1:], [0.0] * (5 - i))
            self.assertEqual([round(w, 4) for w in row], trace["weights"][i])

    def test_the_labs_export_is_the_changed_heads_weights(self):
        found = exported("perturb_attention.py", "--block", "3,2")
        self.assertEqual(found["tokens"], ["x₁", "x₂", "x₃"])
        self.assertEqual(found["attention"][0][0][2], [1 / 3, 0.0, 2 / 3])
        self.assertEqual(exported("perturb_attention.py", "--baseline")["attention"][0][0][2],
                         [0.25, 0.25, 0.5])

    def test_the_trained_layers_export_is_the_recorded_figures_map(self):
        with open(os.path.join(HERE, "training", "training-run.json"), encoding="utf-8") as f:
            example = json.load(f)["run"]["example"]
        found = exported("train_attention.py")
        self.assertEqual(found["tokens"], example["tokens"])
        self.assertEqual([[round(w, 4) for w in row] for row in found["attention"][0][0]],
                         example["weights"])

    def test_an_export_is_refused_over_a_project_file(self):
        for script in ("trace_attention.py", "perturb_attention.py", "train_attention.py"):
            done = run_script(script, "--export", "README.md")
            self.assertOneLineError(done, "README.md is one of this folder's own files")

    def test_a_map_that_does_not_fit_the_tokens_is_refused(self):
        for attention, error, fragment in [
                ([[[[1.0, 0.0]]]], ValueError, "attention[0][0] must be a (2, 2) matrix"),
                ([], TypeError, "a non-empty list of layers"),
                ([[[[1.0, 0.0], [0.5, math.nan]]]], ValueError,
                 "attention[0][0][1][1] must be a finite weight, got nan")]:
            self.assertMessage(error, fragment, attention_export, ["a", " b"], attention)
        self.assertMessage(TypeError, "tokens must be a list of token strings", attention_export,
                           "ab", [[[[1.0]]]])


if __name__ == "__main__":
    unittest.main()

"""Every docstring example in the tree is a test: an example that never runs goes wrong unseen.

The modules are found in the tree (every .py file the project ships whose text holds an example),
not listed by hand.
"""

import doctest
import importlib
import os
import unittest

from tests.helpers import HERE, shipped


def modules_with_examples():
    """The dotted names of the shipped modules whose source holds a `>>> ` example."""
    found = []
    for name in shipped(".py"):
        if not os.path.basename(name).startswith("test_"):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                if ">>> " in f.read():
                    parts = name[:-3].split(os.sep)
                    found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


class Found(unittest.TestCase):

    def test_the_modules_with_examples_include_the_lesson_and_the_labs(self):
        self.assertLessEqual({"attention", "bpe", "kv_cache.step", "lab06.lab", "common.views"},
                             set(modules_with_examples()))


def load_tests(loader, tests, ignore):
    for name in modules_with_examples():
        tests.addTests(doctest.DocTestSuite(importlib.import_module(name)))
    return tests


if __name__ == "__main__":
    unittest.main()

"""The folder's layout holds: no import cycle, scripts depend downward, every file is in the README,
every line fits beside the lesson.

A command line or a benchmark is run, never imported: tests run it with helpers_for_tests.run_script
or a subprocess. The one exception is the lesson's own: test_attention.py and the tests beside it
use trace_attention's names (`trace`, `readout`, `loss`, ...), as the lesson's tests do.
"""

import functools
import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = sorted(name[:-3] for name in os.listdir(HERE) if name.endswith(".py"))
COMMAND_LINES = {"perturb_attention", "train_attention", "make_tokenizer", "bench_attention",
                 "bench_bpe", "step_attention"}
LESSON_SCRIPT = "trace_attention"


IMPORT = re.compile(r"^\s*(?:from\s+(\w+)\s+import\b|import\s+(\w+(?:\s*,\s*\w+)*))", re.M)


@functools.lru_cache(maxsize=None)
def imports(module):
    """The folder's modules that module imports, at any depth of its code (a line of a string
    that reads like an import counts too: stricter, never looser)."""
    with open(os.path.join(HERE, module + ".py"), encoding="utf-8") as f:
        text = f.read()
    found = set()
    for from_name, names in IMPORT.findall(text):
        found.update([from_name] if from_name else re.split(r"\s*,\s*", names))
    return frozenset(found & set(MODULES) - {module})     # its own name in its own docstring


class Layout(unittest.TestCase):

    def test_no_module_imports_itself_through_others(self):
        graph = {module: imports(module) for module in MODULES}

        def reached_from(start):
            seen, todo = set(), list(graph[start])
            while todo:
                module = todo.pop()
                if module not in seen:
                    seen.add(module)
                    todo.extend(graph[module])
            return seen

        cycles = [module for module in MODULES if module in reached_from(module)]
        self.assertEqual(cycles, [], "these modules import themselves through others")

    def test_nothing_imports_a_command_line_a_benchmark_or_a_test(self):
        for module in MODULES:
            allowed_scripts = {LESSON_SCRIPT} if module.startswith("test_") else set()
            for name in imports(module):
                with self.subTest(module=module, imports=name):
                    self.assertNotIn(name, COMMAND_LINES - allowed_scripts)
                    self.assertFalse(name.startswith("test_"))
                    if not module.startswith("test_"):
                        self.assertNotEqual(name, "helpers_for_tests")
                        self.assertNotEqual(name, LESSON_SCRIPT)

    def test_only_tests_and_benchmarks_use_the_reference(self):
        for module in MODULES:
            if "reference" in imports(module):
                self.assertTrue(module.startswith(("test_", "bench_")), module)

    def test_the_readme_names_every_file_of_the_folder(self):
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            files = f.read().split("## Files", 1)[1]
        for module in MODULES:
            self.assertTrue(f"`{module}.py`" in files,
                            f"the README's Files table has no {module}.py")

    def test_every_line_of_python_fits_in_100_characters(self):
        """The reader has the lesson in the other half of the screen (STYLE.md)."""
        for module in MODULES:
            with open(os.path.join(HERE, module + ".py"), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    self.assertLessEqual(len(line.rstrip("\n")), 100,
                                         f"{module}.py:{number} is {len(line) - 1} characters")


if __name__ == "__main__":
    unittest.main()

"""The tree's layout holds: no import cycle at any depth, scripts depend downward, the labs never
use each other, the lesson's command never loads Lab 06, every line fits beside the lesson.

A module is every .py file the project ships (common/project-files.txt), named as Python imports
it (lab06.lab, common.checks): a learner's files (their tiny_attention.py, a scratch.py, a venv/)
are theirs, and no test of the layout looks at them.
A command line (a top-level file that runs as a script) or a benchmark is run, never imported:
tests run it with tests.helpers.run_script or a subprocess. The one exception is the lesson's own:
test_attention.py and the tests beside it use trace_attention's names (`trace`, `readout`,
`loss`, ...), as the lesson's tests do.
"""

import functools
import os
import re
import subprocess
import sys
import tempfile
import unittest

from tests.helpers import HERE, run_script, shipped


def _modules():
    """{dotted name: path} of every .py file the project ships (a package's __init__ under its
    name)."""
    found = {}
    for name in shipped(".py"):
        parts = name[:-3].split(os.sep)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(HERE, name)
    return found


PATHS = _modules()
MODULES = sorted(PATHS)
LESSON_SCRIPT = "trace_attention"
LABS = ("lab06", "training", "kv_cache")


def _runs_as_a_script(module):
    with open(PATHS[module], encoding="utf-8") as f:
        return 'if __name__ == "__main__":' in f.read()


# every top-level script and every benchmark: derived from the tree, not typed again
COMMAND_LINES = {m for m in MODULES if (("." not in m and _runs_as_a_script(m) and m != "bpe")
                                       or m.startswith("benchmarks.bench_"))}


FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)", re.M)
PLAIN_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]+as[ \t]+\w+)?(?:[ \t]*,[ \t]*[\w.]+"
                          r"(?:[ \t]+as[ \t]+\w+)?)*)", re.M)


@functools.lru_cache(maxsize=None)
def imports(module):
    """The tree's modules that module imports, at any depth of its code: for `from a.b import c`
    both a.b and a.b.c when they are modules, and every package on the way (its __init__ runs).
    A line of a string that reads like an import counts too: stricter, never looser."""
    with open(PATHS[module], encoding="utf-8") as f:
        text = f.read()
    named = set()
    for source, names in FROM_IMPORT.findall(text):
        named.add(source)
        named.update(f"{source}.{name.split()[0]}" for name in names.strip("()").split(",")
                     if name.split() and not name.strip().startswith("#"))
    for names in PLAIN_IMPORT.findall(text):
        named.update(name.split()[0] for name in names.split(","))
    found = set()
    for name in named:
        parts = name.split(".")
        found.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    return frozenset(found & set(MODULES) - {module})


def reached_from(start):
    """Every module that importing start loads, at any depth."""
    seen, todo = set(), list(imports(start))
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imports(module))
    return seen


def _is_test(module):
    return module.split(".")[-1].startswith("test_") or module.startswith("tests")


class Layout(unittest.TestCase):

    def test_no_module_imports_itself_through_others(self):
        cycles = [module for module in MODULES if module in reached_from(module)]
        self.assertEqual(cycles, [], "these modules import themselves through others")

    def test_the_commands_are_found_in_the_tree(self):
        self.assertLessEqual({"trace_attention", "perturb_attention", "train_attention",
                              "step_attention", "make_tokenizer", "benchmarks.bench_attention"},
                             COMMAND_LINES)

    def test_nothing_imports_a_command_line_a_benchmark_or_a_test(self):
        for module in MODULES:
            allowed_scripts = {LESSON_SCRIPT} if _is_test(module) else set()
            for name in imports(module):
                with self.subTest(module=module, imports=name):
                    self.assertNotIn(name, COMMAND_LINES - allowed_scripts)
                    if not _is_test(module):
                        self.assertFalse(_is_test(name))
                        self.assertNotEqual(name, LESSON_SCRIPT)
                    elif name != "tests":
                        self.assertFalse(name.split(".")[-1].startswith("test_"))

    def test_the_labs_never_use_each_other(self):
        for lab in LABS:
            for module in MODULES:
                if module == lab or module.startswith(lab + "."):
                    for other in set(LABS) - {lab}:
                        with self.subTest(module=module, other=other):
                            self.assertFalse(any(name == other or name.startswith(other + ".")
                                                 for name in imports(module)))

    def test_the_lesson_never_loads_lab_06(self):
        for module in ("attention", LESSON_SCRIPT):
            loaded = reached_from(module)
            self.assertEqual(sorted(m for m in loaded if m.split(".")[0] in LABS), [], module)

    def test_only_tests_and_benchmarks_use_the_reference(self):
        for module in MODULES:
            if "benchmarks.reference" in imports(module):
                self.assertTrue(_is_test(module) or module.startswith("benchmarks."), module)

    def test_every_folder_of_python_has_a_readme_and_the_top_readme_maps_every_folder(self):
        """The tree is the registry: no file is listed by hand, but each folder that holds a .py
        file says what it holds in its README.md, and the top README (at most 200 lines) links
        every folder's README from its map."""
        for folder in sorted({os.path.dirname(path) for path in PATHS.values()}):
            self.assertTrue(os.path.isfile(os.path.join(folder, "README.md")),
                            f"{os.path.relpath(folder, HERE)} holds Python but no README.md")
        with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        self.assertLessEqual(len(readme.splitlines()), 200, "the top README is over 200 lines")
        start = readme.index("## The folders")
        folder_map = readme[start:readme.index("\n#", start + 1)]
        folders = sorted({name.split(os.sep)[0] for name in shipped() if os.sep in name
                          and not name.startswith(".")})
        self.assertTrue(folders)
        for folder in folders:
            self.assertIn(f"]({folder}/README.md)", folder_map,
                          f"the top README's map of the folders has no {folder}/")

    def test_each_door_checks_its_record_from_another_folder(self):
        """A door finds its files beside itself, not in the folder it is run from: the lesson's
        in a process of its own (its imports found from there too), the others in this one."""
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, os.path.join(HERE, "trace_attention.py"),
                                   "--check"], cwd=tmp, capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            for door in ("perturb_attention.py", "step_attention.py", "make_tokenizer.py"):
                with self.subTest(door=door):
                    done = run_script(door, "--check", cwd=tmp)
                    self.assertEqual(done.returncode, 0, done.stderr)

    def test_every_line_of_python_fits_in_100_characters(self):
        """The reader has the lesson in the other half of the screen (STYLE.md)."""
        for module in MODULES:
            with open(PATHS[module], encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    self.assertLessEqual(len(line.rstrip("\n")), 100,
                                         f"{PATHS[module]}:{number} is {len(line) - 1} characters")

    def test_no_file_of_python_is_over_600_lines(self):
        """One idea a file: a file longer than this holds several."""
        for module in MODULES:
            with open(PATHS[module], encoding="utf-8") as f:
                self.assertLessEqual(len(f.readlines()), 600, PATHS[module])

    def test_the_python_outside_the_tests_stays_within_10000_lines(self):
        """The budget: a new feature is paid for by removing what no learner meets."""
        total = 0
        for module in MODULES:
            if not (module.startswith("tests") or module == "test_attention"):
                with open(PATHS[module], encoding="utf-8") as f:
                    total += len(f.readlines())
        self.assertLessEqual(total, 10_000)


if __name__ == "__main__":
    unittest.main()

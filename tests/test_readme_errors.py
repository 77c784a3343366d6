"""The READMEs' tables of errors are true: every call of a `| call | error |` table and of a
`| step | error |` table (attention_step's) is run and raises the error shown, and every command
line of a `| command line | error |` table is run and prints the line shown. The tables live with
their topic (the layer's in common/README.md, Lab 06's in lab06/README.md, ...): every README of
the tree is read, none listed by hand. A `…` in a README stands for text left out; the rest must
match in order."""

import copy
import math
import os
import re
import shutil
import tempfile
import unittest
from unittest import mock

import attention
import bpe
from kv_cache import step as kv_cache
from lab06 import head as lab06_head
from lab06 import lab as lab06
from tests.helpers import HERE, folder_copy, run_main, run_script, shipped
import trace_attention as ta

READMES = {}       # path from the project folder: text, for README.md and every folder's README.md
for name in shipped("README.md"):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        READMES[name] = f.read()


def table(header):
    """The rows of every README table under header, in every README of the tree, as (first cell,
    second cell) without backticks."""
    rows = []
    for text in READMES.values():
        for start in [m.start() for m in re.finditer(re.escape(header), text)]:
            lines = text[start:].split("\n\n", 1)[0].splitlines()[2:]
            cells = [line.split(" | ") for line in lines]
            rows += [(first.removeprefix("| ").replace("`", ""),
                      second.removesuffix(" |").strip("`")) for first, second in cells]
    return rows


def matches(shown, message):
    """shown, with … for text left out, is the whole of message."""
    pattern = ".*?".join(re.escape(part.strip()) for part in shown.split("…"))
    return re.fullmatch(pattern, message.strip(), re.S) is not None


class PythonErrors(unittest.TestCase):

    def test_every_call_raises_the_error_the_readme_shows(self):
        tokenizer, P, _ = ta.lesson_setup()
        X = ta.inputs(tokenizer, ta.SENTENCE, ta.lesson_setup()[2])[1]
        names = {name: getattr(module, name) for module in (attention, kv_cache, lab06, lab06_head)
                 for name in dir(module) if not name.startswith("_")}
        names.update(P=P, X=X, C=attention.attention_forward(P, X), tokenizer=tokenizer,
                     Tokenizer=bpe.Tokenizer, train=bpe.train, nan=math.nan, inf=math.inf)
        rows = table("| call | error |")
        self.assertGreaterEqual(len(rows), 30)
        for call, shown in rows:
            q, k, v, allowed = lab06.projected()
            with self.subTest(call=call):
                with self.assertRaises(Exception) as caught:
                    eval(call, {**names, "q": q, "k": k, "v": v, "allowed": allowed})
                got = f"{type(caught.exception).__name__}: {caught.exception}"
                self.assertTrue(matches(shown, got), f"the README shows {shown!r}, got {got!r}")

    def test_every_step_raises_the_error_the_readme_shows_and_leaves_kv_as_it_was(self):
        """Each row's call raises the error shown; the kv it was handed keeps its keys, values
        and seal, and KV1 still takes the next step."""
        tokenizer, P, E = ta.lesson_setup()
        X = ta.inputs(tokenizer, ta.SENTENCE, E)[1]
        rows = table("| step | error |")
        self.assertGreaterEqual(len(rows), 6)
        for call, shown in rows:
            KV0, KV1 = {"k": [], "v": []}, {"k": [], "v": []}
            kv_cache.attention_step(P, X[0], KV1)
            with self.subTest(call=call):
                self.assertTrue(call.startswith("attention_step(") and call.endswith(")"))
                args = eval(f"({call.removeprefix('attention_step(')[:-1]},)",
                            {"P": P, "X": X, "KV0": KV0, "KV1": KV1, "nan": math.nan})
                kv = args[2]
                before = (copy.deepcopy((kv["k"], kv["v"])), kv.get("seal"), set(kv))
                with self.assertRaises(Exception) as caught:
                    kv_cache.attention_step(*args)
                got = f"{type(caught.exception).__name__}: {caught.exception}"
                self.assertTrue(matches(shown, got), f"the README shows {shown!r}, got {got!r}")
                self.assertEqual(((kv["k"], kv["v"]), kv.get("seal"), set(kv)), before)
                kv_cache.attention_step(P, X[1], KV1)       # KV1 as its last step left it


class CommandLineErrors(unittest.TestCase):
    """Each row's command line, run as the row says, in a temporary folder where it needs one."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def copy(self, *names):
        for name in names:
            shutil.copyfile(os.path.join(HERE, name), os.path.join(self.tmp, name))

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def run_row(self, row):
        """The command line of a row, run in a folder of its own: its result (returncode, stdout,
        stderr)."""
        self.tmp = tmp = tempfile.mkdtemp(dir=self.tmp)
        if row.startswith("trace_attention.py --check with attention-trace.json missing"):
            self.copy("tokenizer.json")
            return run_script("trace_attention.py", "--check", folder=tmp)
        if row.startswith("trace_attention.py --check with"):
            self.copy("attention-trace.json", "tokenizer.json")
            path = os.path.join(tmp, "attention-trace.json")
            with open(path, encoding="utf-8") as f:
                text = f.read()
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace("0.5164", "0.5165"))
            return run_script("trace_attention.py", "--check", folder=tmp)
        if row.startswith("trace_attention.py with tokenizer.json missing"):
            return run_script("trace_attention.py", folder=tmp)
        if row == 'trace_attention.py --svg ""':
            return run_script("trace_attention.py", "--svg", "")
        if row.startswith("trace_attention.py --svg attention-trace.json"):
            with folder_copy("attention-trace.json") as copy:
                return run_script("trace_attention.py", "--svg", "attention-trace.json", cwd=copy)
        if row.startswith("trace_attention.py --svg onto a read-only file"):
            path = self.write("kept.svg", b"<svg/>\n")
            os.chmod(path, 0o444)
            return run_script("trace_attention.py", "--svg", path)
        if row.startswith("trace_attention.py --svg /tmp"):
            return run_script("trace_attention.py", "--svg", "/tmp")
        if row.startswith("trace_attention.py --sentence of 1201 tokens"):
            return run_script("trace_attention.py", "--sentence", "a " * 1200)
        if row.startswith("trace_attention.py --sentence S --changed S2"):
            sentence = " ".join(["a"] * 64)
            return run_script("trace_attention.py", "--sentence", sentence, "--changed",
                              sentence + " a")
        if row == "trace_attention.py --sentence mia --changed Mia":
            return run_script("trace_attention.py", "--sentence", "mia", "--changed", "Mia")
        if row.startswith("trace_attention.py >&-"):
            return run_script("trace_attention.py", stdout_closed=True)
        if row.startswith("bpe.py encode mia --tokenizer nested.json"):
            path = self.write("nested.json", b"[" * 100_000)
            return run_main(bpe.main, "encode", "mia", "--tokenizer", path)
        if row == "bpe.py encode mia --tokenizer /dev/zero":
            return run_main(bpe.main, "encode", "mia", "--tokenizer", "/dev/zero")
        if row.startswith("bpe.py encode mia --tokenizer latin1.json"):
            path = self.write("latin1.json", b'{"version": 1, "alphabet": ["\xe9"]}')
            return run_main(bpe.main, "encode", "mia", "--tokenizer", path)
        if row.startswith("bpe.py encode mia --tokenizer /tmp"):
            return run_main(bpe.main, "encode", "mia", "--tokenizer", "/tmp")
        if row.startswith("bench_bpe.py --rust"):
            with mock.patch("importlib.util.find_spec", return_value=None):
                return run_script("benchmarks/bench_bpe.py", "--quick", "--rust")
        if row.startswith("perturb_attention.py --grade tiny_attention.py --table"):
            return run_script("perturb_attention.py", "--grade", "tiny_attention.py", "--table")
        if row == "perturb_attention.py --table --baseline --ablate-value 2":
            return run_script("perturb_attention.py", "--table", "--baseline", "--ablate-value",
                              "2")
        if row == "perturb_attention.py --set-weights 1=0.5,0.5,0":
            return run_script("perturb_attention.py", "--set-weights", "1=0.5,0.5,0")
        self.fail(f"the README's row {row!r} has no command line in this test: add one")

    def test_every_command_line_prints_the_line_the_readme_shows(self):
        rows = table("| command line | error |")
        self.assertGreaterEqual(len(rows), 10)
        for row, shown in rows:
            with self.subTest(row=row):
                done = self.run_row(row)
                self.assertNotEqual(done.returncode, 0)
                self.assertNotIn("Traceback", done.stderr)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertTrue(matches(shown, done.stderr),
                                f"the README shows {shown!r}, got {done.stderr!r}")


if __name__ == "__main__":
    unittest.main()

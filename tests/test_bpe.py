"""Tests of bpe.py and of the lesson's tokenizer.json."""

import os
import random
from collections import Counter
import tempfile
import unittest
from unittest import mock

from benchmarks.reference import corpus
import bpe
from bpe import (Tokenizer, word_counts, chunks, encode_chunk, encode_chunk_plain, merge_pair,
                 train, train_plain)
from tests.helpers import MessageAssertions, run_main, run_script

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the project folder
LESSON = os.path.join(HERE, "tokenizer.json")
SEED = 1234


def assert_round_trips(test, tok, cases, longest):
    """decode(encode(text)) == text for seeded random strings over tok's alphabet."""
    rng = random.Random(SEED)
    for case in range(cases):
        text = "".join(rng.choice(tok.alphabet) for _ in range(rng.randint(0, longest)))
        test.assertEqual(tok.decode(tok.encode(text)), text, f"seed {SEED}, case {case}: {text!r}")


def load_lesson():
    return Tokenizer.load(LESSON)


class LessonTokenizer(unittest.TestCase):

    def test_lesson_ids_for_both_sentences(self):
        tok = load_lesson()
        self.assertEqual(
            tok.tokens("mia has a red ball."), ["mia", " has", " a", " red", " ball", "."]
        )
        self.assertEqual(tok.encode("mia has a red ball."), [58, 36, 33, 89, 85, 4])
        self.assertEqual(
            tok.tokens("mia has a red hat."), ["mia", " has", " a", " red", " hat", "."]
        )

    def test_alphabet_is_the_lessons_32_characters_in_code_point_order(self):
        tok = load_lesson()
        self.assertEqual(tok.alphabet, sorted(tok.alphabet))
        self.assertEqual("".join(tok.alphabet), "\n !,.?abcdefghijklmnopqrstuvwxyz")
        self.assertEqual(tok.ids["."], 4)

    def test_file_is_what_make_tokenizer_writes(self):
        done = run_script("make_tokenizer.py", "--check")
        self.assertEqual((done.returncode, done.stdout), (0, "tokenizer.json is up to date\n"))

    def test_the_option_check_advises_is_one_it_has(self):
        """--check on a folder without the file says to run with --write; --write writes it, and
        --check then passes."""
        with tempfile.TemporaryDirectory() as tmp:
            done = run_script("make_tokenizer.py", "--check", folder=tmp)
            self.assertIn("run with --write to record it", done.stderr)
            self.assertEqual(run_script("make_tokenizer.py", "--write", folder=tmp).returncode, 0)
            done = run_script("make_tokenizer.py", "--check", folder=tmp)
            self.assertEqual((done.returncode, done.stdout), (0, "tokenizer.json is up to date\n"))
        self.assertNotEqual(run_script("make_tokenizer.py", "--write", "--check").returncode, 0)

    def test_every_merge_uses_tokens_that_already_exist(self):
        tok = load_lesson()
        known = set(tok.alphabet)
        for n, (left, right) in enumerate(tok.merges):
            self.assertIn(left, known, f"merge {n}")
            self.assertIn(right, known, f"merge {n}")
            known.add(left + right)

    def test_every_vocabulary_string_encodes_to_its_own_id(self):
        tok = load_lesson()
        for i, token in enumerate(tok.vocab):
            self.assertEqual(tok.encode(token), [i], f"token {i} {token!r}")

    def test_decode_inverts_encode_on_seeded_random_strings(self):
        assert_round_trips(self, load_lesson(), cases=300, longest=40)

    def test_save_and_load_give_the_same_encoder(self):
        tok = load_lesson()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "copy.json")
            tok.save(path)
            again = Tokenizer.load(path)
        self.assertEqual(again.vocab, tok.vocab)
        self.assertEqual(again.merges, tok.merges)
        self.assertEqual(again.encode("the dog sees mia."), tok.encode("the dog sees mia."))


class Helpers(unittest.TestCase):

    def test_chunks_never_join_across_words_or_punctuation(self):
        self.assertEqual(
            chunks("mia has  a ball.\n"), ["mia", " has", " ", " a", " ball", ".", "\n"]
        )
        self.assertEqual(chunks(""), [])

    def test_merge_pair(self):
        self.assertEqual(merge_pair([1, 2, 3, 1, 2], (1, 2), 4), [4, 3, 4])
        self.assertEqual(merge_pair([1, 1, 1], (1, 1), 9), [9, 1])

    def test_earliest_merge_applies_first(self):
        """With merges bc (id 3) then ab (id 4), "abc" becomes a + bc: the earlier merge wins."""
        tok = Tokenizer(["a", "b", "c"], [("b", "c"), ("a", "b")])
        self.assertEqual(tok.tokens("abc"), ["a", "bc"])


class TokenizerErrors(MessageAssertions, unittest.TestCase):

    def test_character_outside_the_alphabet(self):
        self.assertMessage(
            ValueError,
            "character 'M' at position 1 is not in the tokenizer's alphabet",
            load_lesson().encode,
            "Mia",
        )

    def test_non_string(self):
        self.assertMessage(TypeError, "text must be a str, got bytes", load_lesson().encode, b"mia")

    def test_unknown_id(self):
        self.assertMessage(
            ValueError,
            "id 90 at position 2 is not in the vocabulary (ids 0 to 89)",
            load_lesson().decode,
            [58, 90],
        )
        self.assertMessage(
            TypeError, "id at position 1 must be an int, got str", load_lesson().decode, ["58"]
        )

    def test_merge_of_a_token_that_does_not_exist_yet(self):
        self.assertMessage(
            ValueError,
            "merge 0 ['m', 'ia'] uses 'ia', which is not a token yet",
            Tokenizer,
            ["a", "i", "m"],
            [("m", "ia"), ("i", "a")],
        )

    def write(self, tmp, text):
        path = os.path.join(tmp, "broken.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_corrupt_or_incomplete_file(self):
        cases = {
            '{"version": 1, "alphabet": ["a"': "broken.json is not valid JSON",
            '[1, 2]': "broken.json must hold a JSON object, got list",
            '{"version": 2, "alphabet": [], "merges": []}': (
                "broken.json must have \"version\": 1 (an integer), got 2"
            ),
            '{"version": true, "alphabet": [], "merges": []}': (
                "must have \"version\": 1 (an integer), got True"
            ),
            '{"version": 1.0, "alphabet": [], "merges": []}': (
                "must have \"version\": 1 (an integer), got 1.0"
            ),
            '{"version": 1, "alphabet": ["a", "b"], "merges": ["ab"]}': (
                "broken.json: merge 0 must be a list of two token strings, got 'ab'"
            ),
            '{"version": 1, "alphabet": ["a", "b"], "merges": {"a": "b"}}': (
                "broken.json must have a list under 'merges', got dict"
            ),
            '{"version": 1, "alphabet": ["a", "a"], "merges": []}': (
                "broken.json: alphabet characters must be distinct, got 'a' twice"
            ),
            '{"version": 1, "alphabet": [1], "merges": []}': (
                "broken.json: alphabet entry 0 must be a single character, got 1"
            ),
            '{"version": 1' + ", \"n\": " + "9" * 5000 + "}": "broken.json: 999999999999… is an "
                                                               "integer of 5000 digits",
            "[" * 100000: "broken.json is nested too deeply to be a tokenizer",
            '{"version": 1, "alphabet": ["a", "b"]}': "broken.json must have a list under 'merges'",
            '{"version": 1, "alphabet": ["ab"], "merges": []}': (
                "broken.json: alphabet entry 0 must be a single"
            ),
            '{"version": 1, "alphabet": ["a"], "merges": [["a", "b"]]}': (
                "broken.json: merge 0 ['a', 'b'] uses 'b'"
            ),
            '{"version": 1, "alphabet": ["a"], "merges": [["a"]]}': (
                "broken.json: merge 0 must be a pair"
            ),
        }
        with tempfile.TemporaryDirectory() as tmp:
            for text, fragment in cases.items():
                with self.subTest(text=text):
                    self.assertMessage(ValueError, fragment, Tokenizer.load, self.write(tmp, text))

    def test_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(FileNotFoundError):
                Tokenizer.load(os.path.join(tmp, "nothing.json"))


class Training(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.text = corpus(10_000)
        cls.trained = train(cls.text, 150)

    def test_known_answer_with_ties(self):
        """train("aa ab ab ba", 7). Chunks "aa", " ab" (twice), " ba"; alphabet " ", "a", "b" =
        ids 0, 1, 2.
        Step 1: counts (0,1) 2, (1,2) 2, (1,1) 1, (0,2) 1, (2,1) 1. A tie at 2: (0,1) < (1,2), so
        " a" = 3.
        Step 2: " ab" is [3, 2] twice: (3,2) 2 beats the rest at 1, so " ab" = 4.
        Step 3: (1,1), (0,2) and (2,1) all have 1; the smallest is (0,2), so " b" = 5.
        Step 4: (1,1) and (5,1) have 1; (1,1) is smaller, so "aa" = 6. That makes 7 tokens: stop."""
        tok = train("aa ab ab ba", 7)
        self.assertEqual(tok.alphabet, [" ", "a", "b"])
        self.assertEqual(tok.merges, [(" ", "a"), (" a", "b"), (" ", "b"), ("a", "a")])
        self.assertEqual(tok.tokens("aa ab ab ba"), ["aa", " ab", " ab", " b", "a"])

    def test_training_stops_when_no_pair_is_left(self):
        """After the four merges above, " ba" = (5, 1) is the last pair; then every chunk is one
        token."""
        tok = train("aa ab ab ba", 100)
        self.assertEqual(tok.merges[-1], (" b", "a"))
        self.assertEqual(len(tok.vocab), 8)

    def test_ties_go_to_the_smallest_left_then_right_id(self):
        """In "ba ab" every pair occurs once: (0,2) " b", (2,1) "ba", (0,1) " a", (1,2) "ab". With
        alphabet " ", "a", "b" the smallest is (0,1), " a", although " b" and "ba" come first in
        the text."""
        self.assertEqual(train("ba ab", 4).merges, [(" ", "a")])
        self.assertEqual(train("ab", 4).merges, [("a", "b")])

    def test_training_twice_gives_the_same_merges(self):
        self.assertEqual(train(self.text, 150).merges, self.trained.merges)

    def test_incremental_counts_agree_with_recounting(self):
        rng = random.Random(SEED)
        for case in range(40):
            text = "".join(rng.choice("ab c.\n") for _ in range(rng.randint(1, 200)))
            vocab_size = rng.randint(6, 40)
            with self.subTest(f"seed {SEED}, case {case}: {text!r}, vocab_size {vocab_size}"):
                self.assertEqual(
                    train(text, vocab_size).merges, train_plain(text, vocab_size).merges
                )

    def test_fast_and_plain_trainers_learn_the_same_merges_on_corpora_of_several_kinds(self):
        """Ties included: tiny alphabets make many pairs equally frequent."""
        rng = random.Random(SEED)
        kinds = {
            "pseudo-English": lambda: corpus(rng.randint(200, 1200), seed=rng.randint(0, 10**6)),
            "two letters": lambda: "".join(rng.choice("ab ") for _ in range(rng.randint(1, 400))),
            "one letter": lambda: "a" * rng.randint(1, 50) + " " + "a" * rng.randint(1, 50),
            "punctuation and newlines": lambda: "".join(
                rng.choice("ab.,!?\n\r ") for _ in range(rng.randint(1, 300))
            ),
            "beyond ASCII": lambda: "".join(
                rng.choice("aé ½ß.Ωz") for _ in range(rng.randint(1, 300))
            ),
        }
        for kind, make in kinds.items():
            for case in range(2):
                text, vocab_size = make(), rng.randint(4, 120)
                vocab_size = max(vocab_size, len(set(text)))
                with self.subTest(
                    f"seed {SEED}, {kind} case {case}: vocab_size {vocab_size}, {text[:40]!r}"
                ):
                    self.assertEqual(
                        train(text, vocab_size).merges, train_plain(text, vocab_size).merges
                    )

    def test_word_counts_cut_as_chunks_does(self):
        rng = random.Random(SEED)
        for case in range(100):
            text = "".join(rng.choice("ab ½é1_.\n") for _ in range(rng.randint(0, 80)))
            with self.subTest(f"seed {SEED}, case {case}: {text!r}"):
                self.assertEqual(word_counts(text), Counter(c for c in chunks(text) if len(c) > 1))

    def test_round_trip_over_the_trained_alphabet(self):
        assert_round_trips(self, self.trained, cases=200, longest=60)

    def test_a_trained_tokenizer_saves_and_loads_as_the_same_encoder(self):
        text, tok = self.text, self.trained
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "trained.json")
            tok.save(path)
            again = Tokenizer.load(path)
        self.assertEqual((again.alphabet, again.merges), (tok.alphabet, tok.merges))
        self.assertEqual(again.encode(text), tok.encode(text))

    def test_training_errors(self):
        cases = [
            (
                ValueError,
                "vocab_size must be at least the text's 3 distinct characters, got 2",
                ("ab ", 2),
            ),
            (ValueError, "cannot train on an empty text", ("", 10)),
            (TypeError, "text must be a str, got bytes", (b"abc", 10)),
            (TypeError, "vocab_size must be an int, got str '300'", ("abc", "300")),
        ]
        for error, fragment, args in cases:
            with self.subTest(fragment):
                with self.assertRaises(error) as caught:
                    train(*args)
                self.assertIn(fragment, str(caught.exception))


class Encoding(unittest.TestCase):

    def test_fast_chunk_encoding_equals_the_plain_one(self):
        """A trained tokenizer's ranks on seeded random chunks, overlapping repeats included."""
        tok = train(corpus(10_000) + " aaaa" * 50 + " abab" * 50, 300)
        rng = random.Random(SEED)
        for case in range(150):
            chunk = "".join(
                rng.choice(tok.alphabet[-12:] + ["a", "a", "b"]) for _ in range(rng.randint(1, 40))
            )
            ids = [tok.ids[ch] for ch in chunk]
            with self.subTest(f"seed {SEED}, case {case}: {chunk!r}"):
                self.assertEqual(encode_chunk(ids, tok.ranks), encode_chunk_plain(ids, tok.ranks))

    def test_a_long_word_takes_a_linear_number_of_steps(self):
        """Encoding a 4,000-letter word looks a pair up at most 4n times: n − 1 first pairs, then
        per merge one check and at most two new pairs (a merge removes a symbol, so there are fewer
        than n merges), and one check per out-of-date entry, at most one per new pair. The plain
        encoder would look up every pair of the word again after every merge (time:
        bench_bpe.py)."""
        tok = train(corpus(5_000), 200)
        word = "".join(ch for ch in corpus(6_000, seed=SEED) if ch.isalpha())[:4_000]

        class CountingRanks(dict):
            lookups = 0

            def get(self, key, default=None):
                CountingRanks.lookups += 1
                return super().get(key, default)

        ids = encode_chunk([tok.ids[ch] for ch in word], CountingRanks(tok.ranks))
        self.assertEqual(tok.decode(ids), word)
        self.assertLess(len(ids), len(word) * 3 // 4, "the word should merge a lot")
        self.assertLessEqual(CountingRanks.lookups, 4 * len(word))

    def test_the_chunk_cache_is_bounded(self):
        """With a bound of 64 (the real one is 65,536: the same code, a smaller case), 164
        distinct words leave 64 in the cache, and the ids are still right."""
        with mock.patch.object(bpe, "CHUNK_CACHE_SIZE", 64):
            tok = load_lesson()
        rng = random.Random(SEED)
        words = [" " + "".join(rng.choice("abcdefgh") for _ in range(12)) for _ in range(164)]
        ids = tok.encode("".join(words))
        self.assertEqual(tok._encode_chunk.cache_info().currsize, 64)
        self.assertEqual(ids, load_lesson().encode("".join(words)))

    def test_the_alphabet_error_lists_the_allowed_characters(self):
        with self.assertRaises(ValueError) as caught:
            load_lesson().encode("mia\r\n")
        self.assertIn(
            "character '\\r' at position 4 is not in the tokenizer's alphabet "
            "'\\n !,.?abcdefghijklmnopqrstuvwxyz'",
            str(caught.exception),
        )


class CommandLine(unittest.TestCase):

    def test_encode_prints_the_lesson_tokens_and_ids(self):
        done = run_script("bpe.py", "encode", "mia has a red ball.")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stdout.splitlines(),
            ['58\t"mia"', '36\t" has"', '33\t" a"', '89\t" red"', '85\t" ball"', '4\t"."'],
        )

    def test_decode(self):
        done = run_main(bpe.main, "decode", "58", "36", "33", "89", "85", "4")
        self.assertEqual(done.stdout, "mia has a red ball.\n")

    def test_train_then_encode_with_the_trained_file(self):
        def write_text(tmp):
            with open(os.path.join(tmp, "text.txt"), "w", encoding="utf-8") as f:
                f.write("aa ab ab ba")

        with tempfile.TemporaryDirectory() as out:
            path = os.path.join(out, "mine.json")
            write_text(out)
            done = run_main(
                bpe.main, "train", "text.txt", "--vocab-size", "7", "--out", path, cwd=out
            )
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(
                Tokenizer.load(path).merges, [(" ", "a"), (" a", "b"), (" ", "b"), ("a", "a")]
            )

    def test_train_reads_carriage_returns_as_they_are(self):
        """The file's CRLF reaches train unchanged, as bpe.train on the same text sees it."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "crlf.txt"), "w", encoding="utf-8", newline="") as f:
                f.write("ab ab\r\nab\r\n")
            done = run_main(
                bpe.main, "train", "crlf.txt", "--vocab-size", "8", "--out", "crlf.json", cwd=tmp
            )
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("\r", Tokenizer.load(os.path.join(tmp, "crlf.json")).alphabet)
        self.assertEqual(train("ab ab\r\nab\r\n", 8).alphabet, ["\n", "\r", " ", "a", "b"])

    def test_long_training_reports_progress_on_stderr(self):
        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(bpe, "PROGRESS_ABOVE", 5_000):
            with open(os.path.join(tmp, "long.txt"), "w", encoding="utf-8") as f:
                f.write(corpus(5_001))
            done = run_main(
                bpe.main, "train", "long.txt", "--vocab-size", "100", "--out", "long.json", cwd=tmp
            )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(
            done.stderr.splitlines(), ["training: 50/100 tokens", "training: 100/100 tokens"]
        )

    def test_errors_are_one_line(self):
        for args, fragment in (
            (("encode", "Mia"), "character 'M' at position 1"),
            (("decode", "90"), "id 90 at position 1 is not in the vocabulary"),
            (
                ("train", "missing.txt", "--vocab-size", "9", "--out", "x.json"),
                "cannot read missing.txt",
            ),
        ):
            with self.subTest(args=args):
                done = run_main(bpe.main, *args)
                self.assertNotEqual(done.returncode, 0)
                self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
                self.assertIn(fragment, done.stderr)


if __name__ == "__main__":
    unittest.main()

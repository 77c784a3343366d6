"""Tests of bpe.py and of the lesson's tokenizer.json."""

import json
import os
import random
import tempfile
import unittest

import make_tokenizer
from bpe import Tokenizer, chunks, merge_pair

HERE = os.path.dirname(os.path.abspath(__file__))
LESSON = os.path.join(HERE, "tokenizer.json")
SEED = 1234


def load_lesson():
    return Tokenizer.load(LESSON)


class LessonTokenizer(unittest.TestCase):

    def test_lesson_ids_for_both_sentences(self):
        tok = load_lesson()
        self.assertEqual(tok.tokens("mia has a red ball."), ["mia", " has", " a", " red", " ball", "."])
        self.assertEqual(tok.encode("mia has a red ball."), [58, 36, 33, 89, 85, 4])
        self.assertEqual(tok.tokens("mia has a red hat."), ["mia", " has", " a", " red", " hat", "."])

    def test_alphabet_is_the_lessons_32_characters_in_code_point_order(self):
        tok = load_lesson()
        self.assertEqual(tok.alphabet, sorted(tok.alphabet))
        self.assertEqual("".join(tok.alphabet), "\n !,.?abcdefghijklmnopqrstuvwxyz")
        self.assertEqual(tok.ids["."], 4)

    def test_file_is_what_make_tokenizer_writes(self):
        with open(LESSON, encoding="utf-8") as f:
            self.assertEqual(json.load(f), make_tokenizer.build().to_dict())

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
        tok = load_lesson()
        rng = random.Random(SEED)
        for case in range(300):
            text = "".join(rng.choice(tok.alphabet) for _ in range(rng.randint(0, 40)))
            self.assertEqual(tok.decode(tok.encode(text)), text, f"seed {SEED}, case {case}: {text!r}")

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
        self.assertEqual(chunks("mia has  a ball.\n"), ["mia", " has", " ", " a", " ball", ".", "\n"])
        self.assertEqual(chunks(""), [])

    def test_merge_pair(self):
        self.assertEqual(merge_pair([1, 2, 3, 1, 2], (1, 2), 4), [4, 3, 4])
        self.assertEqual(merge_pair([1, 1, 1], (1, 1), 9), [9, 1])

    def test_earliest_merge_applies_first(self):
        """With merges bc (id 3) then ab (id 4), "abc" becomes a + bc: the earlier merge wins."""
        tok = Tokenizer(["a", "b", "c"], [("b", "c"), ("a", "b")])
        self.assertEqual(tok.tokens("abc"), ["a", "bc"])


class TokenizerErrors(unittest.TestCase):

    def assertMessage(self, error, fragment, call, *args):
        with self.assertRaises(error) as caught:
            call(*args)
        self.assertIn(fragment, str(caught.exception))

    def test_character_outside_the_alphabet(self):
        self.assertMessage(ValueError, "character 'M' at position 0 is not in the tokenizer's alphabet",
                           load_lesson().encode, "Mia")

    def test_non_string(self):
        self.assertMessage(TypeError, "text must be a str, got bytes", load_lesson().encode, b"mia")

    def test_unknown_id(self):
        self.assertMessage(ValueError, "id 90 at position 1 is not in the vocabulary (ids 0 to 89)",
                           load_lesson().decode, [58, 90])
        self.assertMessage(TypeError, "id at position 0 must be an int, got str", load_lesson().decode, ["58"])

    def test_merge_of_a_token_that_does_not_exist_yet(self):
        self.assertMessage(ValueError, "merge 0 ['m', 'ia'] uses 'ia', which is not a token yet",
                           Tokenizer, ["a", "i", "m"], [("m", "ia"), ("i", "a")])

    def write(self, tmp, text):
        path = os.path.join(tmp, "broken.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def test_corrupt_or_incomplete_file(self):
        cases = {
            '{"version": 1, "alphabet": ["a"': "broken.json is not valid JSON",
            '[1, 2]': "broken.json must hold a JSON object, got list",
            '{"version": 2, "alphabet": [], "merges": []}': "broken.json must have \"version\": 1, got 2",
            '{"version": 1, "alphabet": ["a", "b"]}': "broken.json must have a list under 'merges'",
            '{"version": 1, "alphabet": ["ab"], "merges": []}': "broken.json: alphabet entry 0 must be a single",
            '{"version": 1, "alphabet": ["a"], "merges": [["a", "b"]]}': "broken.json: merge 0 ['a', 'b'] uses 'b'",
            '{"version": 1, "alphabet": ["a"], "merges": [["a"]]}': "broken.json: merge 0 must be a pair",
        }
        with tempfile.TemporaryDirectory() as tmp:
            for text, fragment in cases.items():
                with self.subTest(text=text):
                    self.assertMessage(ValueError, fragment, Tokenizer.load, self.write(tmp, text))

    def test_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            with self.assertRaises(FileNotFoundError):
                Tokenizer.load(os.path.join(tmp, "nothing.json"))


if __name__ == "__main__":
    unittest.main()

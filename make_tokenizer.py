"""Write tokenizer.json: the series' tokenizer, reconstructed from what the lesson shows of it: the
alphabet (32 characters in code point order), merged tokens with ids 32, 33, … in merge order, and
six ids ("mia" 58, " has" 36, " a" 33, " red" 89, " ball" 85, "." 4), " hat" one token. The
merges below are one small, self-consistent list that gives those ids.

    python3 make_tokenizer.py           rewrite tokenizer.json (--write says the same)
    python3 make_tokenizer.py --check   fail unless tokenizer.json is what this script writes
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.cli import OneLineParser, guarded
import os
import sys

from bpe import Tokenizer
from common.golden import to_json, write_or_check

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tokenizer.json")

ALPHABET = ["\n", " ", "!", ",", ".", "?"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]

MERGES = [
    (" ", "t"), (" ", "a"), (" ", "h"), ("a", "s"), (" h", "as"),          # 32-36: " a", " has"
    ("a", "t"), ("h", "e"), (" t", "he"),                                   # 37-39: " the"
    (" ", "s"), ("e", "e"), (" s", "ee"), (" see", "s"),                    # 40-43: " sees"
    ("i", "s"), (" ", "is"),                                                # 44-45: " is"
    (" ", "d"), ("o", "g"), (" d", "og"),                                   # 46-48: " dog"
    (" ", "c"), (" c", "at"),                                               # 49-50: " cat"
    (" a", "n"), (" an", "d"),                                              # 51-52: " and"
    ("o", "m"), (" t", "om"),                                               # 53-54: " tom"
    ("u", "n"), (" s", "un"),                                               # 55-56: " sun"
    ("i", "a"), ("m", "ia"),                                                # 57-58: "mia" 58
    (" ", "b"), ("i", "g"), (" b", "ig"),                                   # 59-61: " big"
    ("l", "l"), ("a", "ll"),                                                # 62-63: "all"
    ("o", "n"), (" ", "on"), ("i", "n"), (" ", "in"),                       # 64-67: " on", " in"
    (" ", "r"), (" r", "un"), (" run", "s"),                                # 68-70: " runs"
    ("i", "t"), (" ", "it"),                                                # 71-72: " it"
    (" ", "p"), ("l", "a"), ("la", "y"), (" p", "lay"),                     # 73-76: " play"
    (" ", "g"), (" g", "o"),                                                # 77-78: " go"
    (" h", "at"),                                                           # 79: " hat"
    (" ", "w"), (" w", "e"),                                                # 80-81: " we"
    ("e", "d"),                                                             # 82
    (" ", "f"), (" f", "un"),                                               # 83-84: " fun"
    (" b", "all"),                                                          # 85: " ball"
    (" go", "t"), (" s", "o"), (" ", "m"),                                  # 86-88: " got", " so"
    (" r", "ed"),                                                           # 89: " red"
]

LESSON_IDS = {"mia": 58, " has": 36, " a": 33, " red": 89, " ball": 85, ".": 4}


def build():
    """The lesson's tokenizer, checked. Raises ValueError when a token does not encode to its own id
    or a lesson id does not come out."""
    tok = Tokenizer(ALPHABET, MERGES)
    for i, token in enumerate(tok.vocab):
        if tok.encode(token) != [i]:
            raise ValueError(f"token {i} {token!r} encodes to {tok.encode(token)}, not to itself")
    for token, expected in LESSON_IDS.items():
        if tok.ids.get(token) != expected:
            raise ValueError(f"{token!r} must be id {expected}, got {tok.ids.get(token)}")
    if len(tok.encode(" hat")) != 1:
        raise ValueError("' hat' must be a single token")
    return tok


def main(argv=None):
    parser = OneLineParser(description="Write tokenizer.json (no option does that too).")
    parser.add_record_flags(PATH)
    args = parser.parse_args(argv)
    return guarded(lambda: write_or_check(to_json(build().to_dict()), PATH,
                                          write=not args.check, check=args.check))


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

"""A character-level byte-pair encoding: the tokenizer the lesson uses.

A tokenizer is an alphabet of single characters (ids 0…n−1) and a list of merges; merge m joins two
existing tokens into a new one with id n+m. The vocabulary is derived, never stored twice: the alphabet,
then each merge's joined string.

Text is first cut into chunks and merges never cross a chunk: a chunk is an optional single leading space
followed by a run of letters (" ball", "mia"), or any other single character ("." or a lone " ").
Within a chunk the pair with the earliest merge is merged first, until no merge applies.

    tok = Tokenizer.load("tokenizer.json")
    tok.tokens("mia has a red ball.")  -> ['mia', ' has', ' a', ' red', ' ball', '.']
    tok.encode("mia has a red ball.")  -> [58, 36, 33, 89, 85, 4]

The file format: {"version": 1, "alphabet": [...], "merges": [["m", "ia"], ...]}. The folder's
tokenizer.json is written by make_tokenizer.py; `train(text, vocab_size)` learns a tokenizer from any text:

    python3 bpe.py train FILE --vocab-size N --out PATH
    python3 bpe.py encode "mia has a red ball."      (tokens and ids, with the folder's tokenizer.json)
    python3 bpe.py decode 58 36 33

 This module does not handle characters outside the
alphabet (they raise ValueError) and knows nothing of bytes or Unicode normalization.
"""

import json
import os
import sys
from collections import Counter

from recorded import OneLineParser, check_output_path, guarded, read_text, show, to_json, write_atomic

FORMAT_VERSION = 1


def chunks(text):
    """Cut text into the pieces merges never cross.

    >>> chunks("mia has  a ball.")
    ['mia', ' has', ' ', ' a', ' ball', '.']
    """
    pieces, i, n = [], 0, len(text)
    while i < n:
        start = i
        if text[i] == " " and i + 1 < n and text[i + 1].isalpha():
            i += 1
        if text[i].isalpha():
            while i < n and text[i].isalpha():
                i += 1
        else:
            i += 1
        pieces.append(text[start:i])
    return pieces


def merge_pair(ids, pair, new_id):
    """Replace every occurrence of pair, left to right.

    >>> merge_pair([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]
    """
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class Tokenizer:
    """alphabet: distinct single characters; merges: pairs of token strings, in merge order.

    Raises ValueError when a merge uses a token that does not exist yet or makes one that already does.
    """

    def __init__(self, alphabet, merges):
        alphabet, merges = list(alphabet), [tuple(m) for m in merges]
        for n, ch in enumerate(alphabet):
            if not isinstance(ch, str) or len(ch) != 1:
                raise ValueError(f"alphabet entry {n} must be a single character, got {ch!r}")
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet characters must be distinct")
        self.alphabet = alphabet
        self.merges = merges
        self.vocab = list(alphabet)
        self.ids = {token: i for i, token in enumerate(alphabet)}
        self.ranks = {}  # (left id, right id) -> id of the merged token; a lower id merges first
        for n, merge in enumerate(merges):
            if len(merge) != 2 or not all(isinstance(part, str) for part in merge):
                raise ValueError(f"merge {n} must be a pair of token strings, got {list(merge)!r}")
            for part in merge:
                if part not in self.ids:
                    raise ValueError(f"merge {n} {list(merge)!r} uses {part!r}, which is not a token yet")
            joined = merge[0] + merge[1]
            if joined in self.ids:
                raise ValueError(f"merge {n} {list(merge)!r} makes {joined!r}, which is already token "
                                 f"{self.ids[joined]}")
            self.ranks[(self.ids[merge[0]], self.ids[merge[1]])] = len(self.vocab)
            self.ids[joined] = len(self.vocab)
            self.vocab.append(joined)
        self._chunk_ids = {}

    def encode(self, text):
        """text -> list of token ids. Raises TypeError for a non-string and ValueError for a character
        outside the alphabet, naming it and its position."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        for position, ch in enumerate(text):
            if ch not in self.ids or len(ch) != 1:
                raise ValueError(f"character {ch!r} at position {position} is not in the tokenizer's alphabet")
        ids = []
        for chunk in chunks(text):
            if chunk not in self._chunk_ids:
                self._chunk_ids[chunk] = self._encode_chunk(chunk)
            ids.extend(self._chunk_ids[chunk])
        return ids

    def _encode_chunk(self, chunk):
        ids = [self.ids[ch] for ch in chunk]
        while len(ids) > 1:
            pair = min(zip(ids, ids[1:]), key=lambda p: self.ranks.get(p, float("inf")))
            if pair not in self.ranks:
                break
            ids = merge_pair(ids, pair, self.ranks[pair])
        return ids

    def decode(self, ids):
        """list of token ids -> text. Raises TypeError for a non-int and ValueError for an unknown id."""
        if not isinstance(ids, (list, tuple)):
            raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
        for position, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"id at position {position} must be an int, got {type(i).__name__} {i!r}")
            if not 0 <= i < len(self.vocab):
                raise ValueError(f"id {i} at position {position} is not in the vocabulary (ids 0 to "
                                 f"{len(self.vocab) - 1})")
        return "".join(self.vocab[i] for i in ids)

    def tokens(self, text):
        """text -> list of token strings: tokens("mia has") -> ['mia', ' has']."""
        return [self.vocab[i] for i in self.encode(text)]

    def to_dict(self):
        return {"version": FORMAT_VERSION, "alphabet": self.alphabet, "merges": [list(m) for m in self.merges]}

    def save(self, path):
        """Write the versioned JSON format, atomically."""
        write_atomic(path, to_json(self.to_dict()))

    @classmethod
    def load(cls, path):
        """Read a saved tokenizer. Raises ValueError naming the file and what is wrong with it, and OSError
        (FileNotFoundError) when it cannot be read."""
        name = os.path.basename(path)
        text = read_text(path)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{name} is not valid JSON: {e}") from None
        except RecursionError:
            raise ValueError(f"{name} is nested too deeply to be a tokenizer") from None
        if not isinstance(data, dict):
            raise ValueError(f"{name} must hold a JSON object, got {type(data).__name__}")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"{name} must have \"version\": {FORMAT_VERSION}, got {data.get('version')!r}")
        for key in ("alphabet", "merges"):
            if not isinstance(data.get(key), list):
                raise ValueError(f"{name} must have a list under {key!r}, got {data.get(key)!r}")
        try:
            return cls(data["alphabet"], data["merges"])
        except (ValueError, TypeError) as e:
            raise ValueError(f"{name}: {e}") from None


def train(text, vocab_size, progress=None):
    """Learn merges from text until the vocabulary has vocab_size tokens or no adjacent pair is left.

    The rules: the alphabet is the text's distinct characters in code point order; merges never cross a
    chunk; each step merges the adjacent pair with the highest count summed over all chunks, and a tie goes
    to the smallest (left id, right id); a pair whose joined string is already a token is passed over.
    Each distinct chunk is counted once with its frequency, and after a merge only the chunks that held
    the pair are recounted. progress(n_tokens) is called after each merge when given.
    Raises TypeError for a non-string text or non-int vocab_size, ValueError for an empty text or a
    vocab_size smaller than the alphabet.
    """
    alphabet = _check_training_input(text, vocab_size)
    ids = {ch: i for i, ch in enumerate(alphabet)}
    vocab = list(alphabet)
    words, freqs = [], []
    for chunk, freq in Counter(chunks(text)).items():
        words.append([ids[ch] for ch in chunk])
        freqs.append(freq)
    counts = Counter()                     # pair -> occurrences over the whole text
    where = {}                             # pair -> indices of the words that held it when counted
    for w, word in enumerate(words):
        for pair in zip(word, word[1:]):
            counts[pair] += freqs[w]
            where.setdefault(pair, set()).add(w)
    passed_over = set()

    merges = []
    while len(vocab) < vocab_size:
        candidates = [(count, pair) for pair, count in counts.items() if count > 0 and pair not in passed_over]
        if not candidates:
            break
        _, pair = max(candidates, key=lambda c: (c[0], -c[1][0], -c[1][1]))
        joined = vocab[pair[0]] + vocab[pair[1]]
        if joined in ids:
            passed_over.add(pair)
            continue
        new_id = len(vocab)
        for w in where.pop(pair):
            old = words[w]
            new = merge_pair(old, pair, new_id)
            if new == old:
                continue
            for p in zip(old, old[1:]):
                counts[p] -= freqs[w]
            for p in zip(new, new[1:]):
                counts[p] += freqs[w]
                where.setdefault(p, set()).add(w)
            words[w] = new
        ids[joined] = new_id
        vocab.append(joined)
        merges.append((vocab[pair[0]], vocab[pair[1]]))
        if progress:
            progress(len(vocab))
    return Tokenizer(alphabet, merges)


def _check_training_input(text, vocab_size):
    """Return the alphabet of text after checking train's arguments."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise TypeError(f"vocab_size must be an int, got {type(vocab_size).__name__} {vocab_size!r}")
    if not text:
        raise ValueError("cannot train on an empty text: expected at least one character")
    alphabet = sorted(set(text))
    if vocab_size < len(alphabet):
        raise ValueError(f"vocab_size must be at least the text's {len(alphabet)} distinct characters, "
                         f"got {vocab_size}")
    return alphabet


# ---- command line -------------------------------------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRESS_ABOVE = 100_000  # characters: a longer text reports its progress on stderr
PROGRESS_EVERY = 50       # tokens between two progress lines
MAX_TRAINING_BYTES = 256 * 2 ** 20   # the largest text train reads


def main(argv=None):
    parser = OneLineParser(description="Train, or use, a character-level BPE tokenizer.")
    commands = parser.add_subparsers(dest="command", required=True)
    train_cmd = commands.add_parser("train", help="learn merges from a UTF-8 text file")
    train_cmd.add_argument("file")
    train_cmd.add_argument("--vocab-size", type=int, required=True)
    train_cmd.add_argument("--out", required=True, help="where to save the tokenizer (JSON)")
    encode_cmd = commands.add_parser("encode", help="show the tokens of a text with their ids")
    encode_cmd.add_argument("text")
    decode_cmd = commands.add_parser("decode", help="turn ids back into text")
    decode_cmd.add_argument("ids", nargs="+", type=int)
    for cmd in (encode_cmd, decode_cmd):
        cmd.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.json"),
                         help="a saved tokenizer (default: the lesson's tokenizer.json)")
    args = parser.parse_args(argv)
    return guarded(lambda: _run(args))


def _run(args):
    if args.command == "train":
        check_output_path(args.out)
        text = read_text(args.file, limit=MAX_TRAINING_BYTES)   # as it is: CR and CRLF unchanged
        report = None
        if len(text) > PROGRESS_ABOVE:
            def report(n):
                if n % PROGRESS_EVERY == 0 or n == args.vocab_size:
                    print(f"training: {n}/{args.vocab_size} tokens", file=sys.stderr, flush=True)
        tok = train(text, args.vocab_size, progress=report)
        tok.save(args.out)
        print(f"{len(tok.vocab)} tokens ({len(tok.alphabet)} characters and {len(tok.merges)} merges) "
              f"saved to {args.out}")
        return 0
    tok = Tokenizer.load(args.tokenizer)
    if args.command == "encode":
        show("".join(f"{i}\t{json.dumps(tok.vocab[i], ensure_ascii=False)}\n"
                     for i in tok.encode(args.text)))
    else:
        show(tok.decode(args.ids) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A character-level byte-pair encoding: the tokenizer the lesson uses.

An alphabet of single characters (ids 0…n−1) and a list of merges: merge m joins two tokens into
token n+m. Merges never cross a chunk (an optional leading space and a run of letters, or any
other single character); within a chunk the earliest merge applies first. The file:
{"version": 1, "alphabet": [...], "merges": [["m", "ia"], ...]}. `train_plain` learns merges the
plain way, `train` the same ones fast.

    python3 bpe.py train FILE --vocab-size N --out PATH
    python3 bpe.py encode "mia has a red ball."      (tokens and ids, with tokenizer.json)
    python3 bpe.py decode 58 36 33

Left out: characters outside the alphabet (ValueError), bytes, Unicode normalization.
"""

# first: from here on Ctrl-C is one line and exit 130 (common/__init__.py)
from common.checks import check_callable, said
import functools
import gc
import heapq
import json
import math
import os
import re
import sys
from collections import Counter, defaultdict

from common.cli import OneLineParser, check_outputs, check_stdout, guarded, integer, note, show
from common.golden import to_json
from common.safe_io import check_output_path, read_json, read_text, write_atomic

FORMAT_VERSION = 1
CHUNK_CACHE_SIZE = 2 ** 16   # distinct chunks whose ids a tokenizer remembers


def chunks(text):
    """Cut text into the pieces merges never cross: a space followed by letters stays one piece.

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


# [^\W\d_] is every letter str.isalpha knows and a few characters it does not (such as "½"): a
# piece that holds one of those is cut again with chunks.
_WORD = re.compile(r" ?[^\W\d_]+")               # the chunks of two characters or more
_ASCII_WORD = re.compile(r" ?[A-Za-z]+")         # the same, for a text of ASCII only
_CHUNK = re.compile(_WORD.pattern + "|.", re.DOTALL)   # and every other character alone


def _not_a_chunk(piece):
    return len(piece) > 1 and not piece.lstrip(" ").isalpha()


def _pieces(text):
    """chunks(text) after one regex pass: the same pieces, found fast."""
    for piece in _CHUNK.findall(text):
        yield from chunks(piece) if _not_a_chunk(piece) else [piece]


# ---- encoding a chunk: the plain way, then the fast one ----------------------------------------

def encode_chunk_plain(ids, ranks):
    """Merge within one chunk: the adjacent pair whose merge came first (the lowest rank) is merged
    everywhere, left to right, and again until no merge applies. ranks: (left, right) -> new id.

    >>> encode_chunk_plain([0, 1, 1, 1], {(1, 1): 2, (0, 2): 3})
    [3, 1]
    """
    ids = list(ids)
    while len(ids) > 1:
        pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, math.inf))
        if pair not in ranks:
            break
        ids = merge_pair(ids, pair, ranks[pair])
    return ids


def encode_chunk(ids, ranks):
    """The same merges as encode_chunk_plain, taking the ranks in rising order (a merge only makes
    pairs of a later rank) over a linked list of symbols.

    >>> encode_chunk([0, 1, 1, 1], {(1, 1): 2, (0, 2): 3})
    [3, 1]
    """
    ids = list(ids)
    n = len(ids)
    after = list(range(1, n + 1))         # the next live symbol; n is the end
    before = list(range(-1, n - 1))       # the previous live symbol; -1 is the start
    positions = defaultdict(list)         # rank -> where a pair of that rank was seen
    for i, rank in enumerate(map(ranks.get, zip(ids, ids[1:]))):
        if rank is not None:
            positions[rank].append(i)
    waiting = list(positions)             # the ranks still to come, lowest first
    heapq.heapify(waiting)

    def see(at, pair):                    # a new pair at position at: wait for its rank
        rank = ranks.get(pair)
        if rank is not None:
            if rank not in positions:
                heapq.heappush(waiting, rank)
            positions[rank].append(at)

    while waiting:
        rank = heapq.heappop(waiting)
        for i in sorted(positions.pop(rank)):
            j = after[i]
            if j == n or ranks.get((ids[i], ids[j])) != rank:
                continue                  # out of date: a neighbour was merged since
            ids[i], ids[j] = rank, None   # the merged token's id is its rank
            after[i] = k = after[j]
            if k < n:
                before[k] = i
                see(i, (rank, ids[k]))
            if before[i] >= 0:
                see(before[i], (ids[before[i]], rank))
    return [t for t in ids if t is not None]


# ---- the tokenizer -------------------------------------------------------------------------

class Tokenizer:
    """alphabet: distinct single characters; merges: pairs of token strings, in merge order.
    Raises ValueError for a merge of a token not made yet or one that makes an existing token."""

    def __init__(self, alphabet, merges):
        for name, value, kinds in (("alphabet", alphabet, (list, tuple, str)),
                                   ("merges", merges, (list, tuple))):
            if not isinstance(value, kinds):
                raise TypeError(f"{name} must be a list, got {type(value).__name__}")
        alphabet, merges = list(alphabet), list(merges)
        for n, ch in enumerate(alphabet):
            if not isinstance(ch, str) or len(ch) != 1:
                raise ValueError(f"alphabet entry {n} must be a single character, got {ch!r}")
            if "\ud800" <= ch <= "\udfff":
                raise ValueError(f"alphabet entry {n} is {ch!r}, half of a surrogate pair and no "
                                 f"character: UTF-8 cannot store it")
        if len(set(alphabet)) != len(alphabet):
            twice = next(ch for ch, count in Counter(alphabet).items() if count > 1)
            raise ValueError(f"alphabet characters must be distinct, got {twice!r} twice")
        self.alphabet = alphabet
        self.vocab = list(alphabet)
        self.ids = {token: i for i, token in enumerate(alphabet)}
        self.ranks = {}  # (left id, right id) -> id of the merged token; a lower id merges first
        for n, merge in enumerate(merges):
            if not isinstance(merge, (list, tuple)) or len(merge) != 2 or not all(
                    isinstance(part, str) for part in merge):
                raise ValueError(f"merge {n} must be a pair of token strings, got {merge!r}")
            for part in merge:
                if part not in self.ids:
                    raise ValueError(f"merge {n} {list(merge)!r} uses {part!r}, which is not a "
                                     f"token yet")
            joined = merge[0] + merge[1]
            if joined in self.ids:
                raise ValueError(f"merge {n} {list(merge)!r} makes {joined!r}, which is already "
                                 f"token {self.ids[joined]}")
            self.ranks[(self.ids[merge[0]], self.ids[merge[1]])] = len(self.vocab)
            self.ids[joined] = len(self.vocab)
            self.vocab.append(joined)
        self.merges = [tuple(merge) for merge in merges]
        # a bounded cache: text repeats its words, but a stream of new words must not fill memory
        self._encode_chunk = functools.lru_cache(maxsize=CHUNK_CACHE_SIZE)(self._encode_chunk)

    def encode(self, text):
        """text -> list of token ids. Raises TypeError for a non-string and ValueError for a
        character outside the alphabet, naming it, its position and the characters allowed."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        outside = set(text).difference(self.alphabet)
        if outside:
            position, ch = next((n, ch) for n, ch in enumerate(text, 1) if ch in outside)
            raise ValueError(f"character {ch!r} at position {position} is not in the "
                             f"tokenizer's alphabet {''.join(self.alphabet)!r}")
        return [i for chunk in _pieces(text) for i in self._encode_chunk(chunk)]

    def _encode_chunk(self, chunk):
        return tuple(encode_chunk([self.ids[ch] for ch in chunk], self.ranks))

    def decode(self, ids):
        """ids -> text. Raises TypeError for a non-int, ValueError for an unknown id."""
        if not isinstance(ids, (list, tuple)):
            raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
        for position, i in enumerate(ids, 1):      # a message counts as a person does
            if type(i) is not int:
                raise TypeError(f"id at position {position} must be an int, "
                                f"got {type(i).__name__} {i!r}")
            if not 0 <= i < len(self.vocab):
                raise ValueError(f"id {said(i)} at position {position} is not in the vocabulary "
                                 f"(ids 0 to {len(self.vocab) - 1})")
        return "".join(self.vocab[i] for i in ids)

    def tokens(self, text):
        """text -> list of token strings: tokens("mia has") -> ['mia', ' has']."""
        return [self.vocab[i] for i in self.encode(text)]

    def to_dict(self):
        return {"version": FORMAT_VERSION, "alphabet": self.alphabet,
                "merges": [list(m) for m in self.merges]}

    def save(self, path):
        """Write the versioned JSON format, atomically; never over a file this folder ships."""
        check_output_path(path)
        write_atomic(path, to_json(self.to_dict()))

    @classmethod
    def load(cls, path):
        """Read a saved tokenizer, strictly: "version" the integer 1, "alphabet" a list of distinct
        one-character strings, "merges" a list of [left, right] lists of known tokens. Raises
        ValueError naming the file and what is wrong (read_json's too), OSError when unreadable."""
        data = read_json(path, "a tokenizer")   # raises TypeError for a path that is no file name
        name = os.path.basename(path)
        version = data.get("version")
        if type(version) is not int or version != FORMAT_VERSION:
            raise ValueError(f"{name} must have \"version\": {FORMAT_VERSION} (an integer), "
                             f"got {version!r}")
        for key in ("alphabet", "merges"):
            if not isinstance(data.get(key), list):
                raise ValueError(f"{name} must have a list under {key!r}, got "
                                 f"{type(data.get(key)).__name__}")
        for n, merge in enumerate(data["merges"]):
            if not isinstance(merge, list):
                raise ValueError(f"{name}: merge {n} must be a list of two token strings, "
                                 f"got {merge!r}")
        try:
            return cls(data["alphabet"], data["merges"])
        except (ValueError, TypeError) as e:
            raise ValueError(f"{name}: {e}") from None


# ---- training: the clear trainer first --------------------------------------------------------

def train_plain(text, vocab_size):
    """Learn merges the plain way: count every adjacent pair, merge the most frequent (a tie to the
    smallest (left id, right id); a pair that makes an existing token passed over), repeat until
    vocab_size tokens. The alphabet is the text's characters in code point order. Raises like train.

    >>> train_plain("aa ab ab ba", 7).merges
    [(' ', 'a'), (' a', 'b'), (' ', 'b'), ('a', 'a')]
    """
    alphabet = _check_training_input(text, vocab_size)
    ids = {ch: i for i, ch in enumerate(alphabet)}
    words = [[ids[ch] for ch in chunk] for chunk in chunks(text)]
    return Tokenizer(alphabet, recount_merges(alphabet, words, [1] * len(words), vocab_size))


def recount_merges(alphabet, words, freqs, vocab_size):
    """The plain loop over words that stand freqs times: the merges, as (left, right) tokens."""
    ids = {ch: i for i, ch in enumerate(alphabet)}
    vocab = list(alphabet)
    merges, passed_over = [], set()
    while len(vocab) < vocab_size:
        counts = Counter()
        for word, freq in zip(words, freqs):
            for pair in zip(word, word[1:]):
                counts[pair] += freq
        for pair in passed_over:
            del counts[pair]
        if not counts:
            break
        pair = max(counts, key=lambda p: (counts[p], -p[0], -p[1]))  # most frequent, then smallest
        joined = vocab[pair[0]] + vocab[pair[1]]
        if joined in ids:
            passed_over.add(pair)
            continue
        ids[joined] = len(vocab)
        words = [merge_pair(word, pair, len(vocab)) for word in words]
        vocab.append(joined)
        merges.append((vocab[pair[0]], vocab[pair[1]]))
    return merges


# ---- training: the fast trainer, same merges ---------------------------------------------------
# train counts each distinct chunk once, keeps the pair counts up to date in the chunks that hold
# the merged pair, and takes the most frequent pair from a heap.

def word_counts(text):
    """Counter of the chunks of text of two characters or more, as chunks(text) cuts them.

    >>> sorted(word_counts("a ball, a ball!").items())
    [(' a', 1), (' ball', 2)]
    """
    # for a text of ASCII only, [A-Za-z] is exactly what str.isalpha knows
    counts = Counter((_ASCII_WORD if text.isascii() else _WORD).findall(text))
    for piece in [p for p in counts if len(p) == 1 or _not_a_chunk(p)]:
        freq = counts.pop(piece)
        for chunk in chunks(piece):
            if len(chunk) > 1:
                counts[chunk] += freq
    return counts


def train(text, vocab_size, progress=None):
    """The merges of train_plain, much faster; progress(n_tokens), if given, after each merge.
    Raises TypeError, or ValueError for an empty text or a vocab_size below the alphabet's."""
    alphabet = _check_training_input(text, vocab_size)
    check_callable("progress", progress, optional=True)
    collecting = gc.isenabled()
    gc.disable()        # the collector would walk the many small tuples made here; none is a cycle
    try:
        merges = learn_merges(text, alphabet, vocab_size, progress)
    finally:
        if collecting:
            gc.enable()
    return Tokenizer(alphabet, merges)


def learn_merges(text, alphabet, vocab_size, progress):
    """train's loop, unchecked (train checks its text): the merges, (left, right) pairs in order."""
    ids = {ch: i for i, ch in enumerate(alphabet)}
    vocab = list(alphabet)
    chunk_freqs = word_counts(text)       # a single character holds no pair: left out
    words = [list(map(ids.__getitem__, chunk)) for chunk in chunk_freqs]
    freqs = list(chunk_freqs.values())
    counts = defaultdict(int)             # pair -> occurrences over the whole text
    where = defaultdict(list)             # pair -> the words that held it when counted
    for w, (word, freq) in enumerate(zip(words, freqs)):
        for pair in zip(word, word[1:]):
            counts[pair] += freq
            where[pair].append(w)
    # No count but a new pair's ever rises, so a heap entry is never below its pair's count: one
    # found too high is pushed again at the count, and only the new pairs are pushed after a merge.
    heap = [(-count, pair) for pair, count in counts.items()]   # most frequent, then smallest pair
    heapq.heapify(heap)
    passed_over, merges = set(), []
    while len(vocab) < vocab_size and heap:
        negative_count, pair = heapq.heappop(heap)
        if pair in passed_over:
            continue
        if counts[pair] != -negative_count:
            if counts[pair] > 0:
                heapq.heappush(heap, (-counts[pair], pair))
            continue
        joined = vocab[pair[0]] + vocab[pair[1]]
        if joined in ids:
            passed_over.add(pair)
            continue
        new_id = len(vocab)
        made = set()                      # the new token's pairs
        a, b = pair
        for w in dict.fromkeys(where.pop(pair)):      # each word once, however often listed
            # merge_pair(word, pair, new_id), moving the counts of the neighbours' pairs to the new
            # token's; the word is rebuilt once at the end (deleting in place is quadratic).
            word, freq = words[w], freqs[w]
            merged_at = []                # where each merged pair starts, in word as it was
            ahead, i = word.count(a), 0   # the a's not yet passed (found in C), where to look
            while ahead:
                j = word.index(a, i)
                ahead -= 1
                i = j + 1
                if i == len(word) or word[i] != b:
                    continue
                ahead -= a == b           # a pair (a, a) uses up two a's
                i = j + 2
                counts[pair] -= freq
                if j > 0:                 # the left neighbour: the new token if merged just now
                    left = new_id if merged_at and merged_at[-1] == j - 2 else word[j - 1]
                    counts[left, a] -= freq
                    counts[left, new_id] += freq
                    where[left, new_id].append(w)
                    made.add((left, new_id))
                if j + 2 < len(word):     # the right neighbour, not merged yet
                    right = word[j + 2]
                    counts[b, right] -= freq
                    counts[new_id, right] += freq
                    where[new_id, right].append(w)
                    made.add((new_id, right))
                merged_at.append(j)
            if merged_at:
                rebuilt, start = [], 0
                for j in merged_at:
                    rebuilt += word[start:j]
                    rebuilt.append(new_id)
                    start = j + 2
                words[w] = rebuilt + word[start:]
        for p in made:
            if counts[p] > 0:
                heapq.heappush(heap, (-counts[p], p))
        ids[joined] = new_id
        vocab.append(joined)
        merges.append((vocab[a], vocab[b]))
        if progress:
            progress(len(vocab))
    return merges


def _check_training_input(text, vocab_size):
    """Return the alphabet of text after checking the trainers' arguments."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if type(vocab_size) is not int:
        raise TypeError(f"vocab_size must be an int, "
                        f"got {type(vocab_size).__name__} {vocab_size!r}")
    if not text:
        raise ValueError("cannot train on an empty text: expected at least one character")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:   # a lone surrogate: no file could hold the tokenizer
            raise ValueError(f"text holds {text[e.start]!r} at position {e.start + 1}, half of a "
                             f"surrogate pair and no character: UTF-8 cannot store it") from None
    alphabet = sorted(set(text))
    if vocab_size < len(alphabet):
        raise ValueError(f"vocab_size must be at least the text's {len(alphabet)} distinct "
                         f"characters, got {said(vocab_size)}")
    return alphabet


# ---- command line ----------------------------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRESS_ABOVE = 100_000  # characters: a longer text reports its progress on stderr
PROGRESS_EVERY = 50       # tokens between two progress lines
MAX_TRAINING_BYTES = 256 * 2 ** 20   # the largest text train reads


def main(argv=None):
    parser = OneLineParser(description="Train, or use, a character-level BPE tokenizer.")
    commands = parser.add_subparsers(dest="command", required=True)
    train_cmd = commands.add_parser("train", help="learn merges from a UTF-8 text file")
    train_cmd.add_argument("file")
    train_cmd.add_argument("--vocab-size", type=integer, required=True)
    train_cmd.add_argument("--out", required=True, help="where to save the tokenizer (JSON)")
    encode_cmd = commands.add_parser("encode", help="show the tokens of a text with their ids")
    encode_cmd.add_argument("text")
    decode_cmd = commands.add_parser("decode", help="turn ids back into text")
    decode_cmd.add_argument("ids", nargs="+", type=integer)
    for cmd in (encode_cmd, decode_cmd):
        cmd.add_argument("--tokenizer", default=os.path.join(HERE, "tokenizer.json"),
                         help="a saved tokenizer (default: the lesson's tokenizer.json)")
    args = parser.parse_args(argv)
    return guarded(lambda: _run(args))


def _run(args):
    if args.command == "train":
        check_stdout()      # it says what it saved: a closed output is said before training
        check_outputs([("--out", args.out, None)], [("the training text", args.file)])
        text = read_text(args.file, limit=MAX_TRAINING_BYTES, as_it_is=True)   # CR, CRLF kept

        def report(n):
            if n % PROGRESS_EVERY == 0 or n == args.vocab_size:
                note(f"training: {n}/{args.vocab_size} tokens")
        tok = train(text, args.vocab_size, report if len(text) > PROGRESS_ABOVE else None)
        tok.save(args.out)
        show(f"{len(tok.vocab)} tokens ({len(tok.alphabet)} characters and {len(tok.merges)} "
             f"merges) saved to {args.out}\n")
        return 0
    tok = Tokenizer.load(args.tokenizer)
    if args.command == "encode":
        show("".join(f"{i}\t{json.dumps(tok.vocab[i], ensure_ascii=False)}\n"
                     for i in tok.encode(args.text)))
    else:
        show(tok.decode(args.ids) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(guarded(main))     # Ctrl-C while the arguments are read too

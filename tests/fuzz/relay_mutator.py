"""A structure-aware mutator for Relay text: edits at token boundaries and splices of
whole statements, so most mutants stay close enough to Relay to get past the scanner
and reach the grammar, name resolution and type inference.

    mutate_text(data, max_size, seed) -> bytes     one edit (libFuzzer custom mutator)
    crossover_text(a, b, max_size, seed) -> bytes  a's lines with a run of b's spliced in

Half of the calls fall back to libFuzzer's own byte mutation (`atheris.Mutate`), so
byte-level oddities (bad UTF-8, NULs, lone CRs) are still found.  Deterministic for a
given seed, as libFuzzer requires.
"""

from __future__ import annotations

import random
import re

# Tokens as the editor sees them: comments and strings whole, then names, numbers, punctuation.
TOKEN = re.compile(r"""
    /\*.*?\*/ | //[^\n]* | "(?:\\.|[^"\\])*"      # comments, strings
  | [%@]?[A-Za-z_][\w.:/]* | %\d+                  # names, %N
  | -?\d+(?:\.\d*)?(?:e-?\d+)?[a-z]*\d*           # numbers with a dtype suffix
  | ->|=>|==|!=|<=|>=|\#\[ | \s+ | .               # operators, whitespace, any other char
""", re.VERBOSE | re.DOTALL)

# Pieces worth inserting: grammar keywords, punctuation, edge numbers, annotations.
PIECES = [
    "fn", "let", "def", "type", "extern", "if", "else", "match", "free_var", "ref", "ref_read", "ref_write",
    "Tensor", "True", "False", "(", ")", "{", "}", "[", "]", ";", ",", "=", ":", ".", "->", "=>", "?", "_",
    "%0", "%1", "%x", "@main", "@f", "add", "nn.conv2d", "nn.dense", "reshape", "zeros", "concatenate",
    "0", "-1", "1f", "2147483648", "-9223372036854775809", "1e309", "0.0f16", "65536", "1i8", "nan",
    "Tensor[(1, 3), float32]", "Tensor[(?, 2), int64]", "(Tensor[(1,), float32], int32)", "float16",
    "meta[relay.Constant][0]", "/* ty=Tensor[(1, 1), float32] */", "/* span=a/b:1:2 */", '"s"',
    "#[version = \"0.0.5\"]", "#[metadata]", "axis=-1", "shape=[4, -1]", "newshape=[0, -1]",
    "\n", " ", "\t", "\r\n", "\u2047", "\ufeff", "é",
]


DIGITS = re.compile(r"\d+")
EDGE_DIGITS = ["0", "1", "2", "7", "8", "16", "99", "64", "128", "65536", "2147483648", "100000000"]


def _tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def _statements(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.strip()]


def _edit(tokens: list[str], rng: random.Random) -> list[str]:
    n = len(tokens)
    if n == 0:
        return [rng.choice(PIECES)]
    i = rng.randrange(n)
    choice = rng.randrange(7)
    if choice == 0:  # delete a run of tokens
        del tokens[i:i + rng.randint(1, 4)]
    elif choice == 1:  # insert a piece
        tokens.insert(i, rng.choice(PIECES))
    elif choice == 2:  # replace a token by a piece
        tokens[i] = rng.choice(PIECES)
    elif choice == 3:  # duplicate a run
        tokens[i:i] = tokens[i:i + rng.randint(1, 6)]
    elif choice == 4:  # copy a token from elsewhere in the text
        tokens[i] = tokens[rng.randrange(n)]
    elif choice == 5:  # swap two tokens
        j = rng.randrange(n)
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif DIGITS.search(tokens[i]):  # the digits of a number or a name (float32, %12) change
        tokens[i] = DIGITS.sub(lambda m: rng.choice(EDGE_DIGITS), tokens[i], count=1)
    else:
        tokens[i] = rng.choice(["0", "-1", "1", "2147483647", "1e30", "-0", "3"])
    return tokens


def mutate_text(data: bytes, max_size: int, seed: int) -> bytes:
    import atheris  # only a fuzzing run needs it

    rng = random.Random(seed)
    if rng.random() < 0.5:
        return atheris.Mutate(data, max_size)
    text = data.decode("utf-8", "surrogateescape")
    if rng.random() < 0.2:  # move or repeat a whole statement
        lines = text.split("\n")
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if rng.random() < 0.5:
            lines.insert(j, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        out = "\n".join(lines)
    else:
        tokens = _tokens(text)
        for _ in range(rng.randint(1, 3)):
            tokens = _edit(tokens, rng)
        out = "".join(tokens)
    return out.encode("utf-8", "surrogateescape")[:max_size]


def crossover_text(a: bytes, b: bytes, max_size: int, seed: int) -> bytes:
    rng = random.Random(seed)
    mine = a.decode("utf-8", "surrogateescape").split("\n")
    theirs = _statements(b.decode("utf-8", "surrogateescape"))
    if not theirs:
        return a[:max_size]
    start = rng.randrange(len(theirs))
    run = theirs[start:start + rng.randint(1, 5)]
    at = rng.randrange(len(mine) + 1)
    mine[at:at] = run
    return "\n".join(mine).encode("utf-8", "surrogateescape")[:max_size]

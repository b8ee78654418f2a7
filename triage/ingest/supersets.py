"""The native forms of a rule's regex: what hyperscan (or `re` over raw bytes) runs for
it on the fast path, before any Python sees a line.

`native_superset` rewrites a Python regex into one hyperscan compiles that matches every
line the original does (anchors, word boundaries and lookarounds dropped, Unicode
classes widened, wide bounds opened); `hs_pieces` splits it into alternatives hyperscan
scans fast, trimming a common head so that a step-line word does not start a match at
every step line. Both give supersets: the full regex still decides in Python.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# -- hyperscan's pieces of a confirm pattern ---------------------------------------------
PIECE_LITERAL_MIN = 6  # a trimmed alternative keeps a literal run of at least this many bytes
# The heads worth trimming: words on every healthy step line, which hyperscan would try
# at each of millions of occurrences. Only these: a head such as `lib(?:cudart|...)`
# trimmed to `: cannot open shared object file` would make a window on NCCL's plugin
# line in every rank's log.
COMMON_HEADS = ("loss", "Loss", "[Ll]oss", "grad", "(?:loss|", "(?:grad")


def hs_pieces(pattern: str) -> tuple[list[str], bool]:
    r"""The patterns hyperscan runs for one native superset, and whether a leading `(?i)`
    made it caseless: its top-level alternatives; one that starts with a common word
    (COMMON_HEADS) is trimmed to the part after its last unbounded repeat (`*`, `+`,
    `{n,}`, or a group holding one) where that part holds a longer literal run than the
    head dropped, and at least PIECE_LITERAL_MIN bytes. A trimmed alternative matches
    wherever the whole one does (it is a suffix of the concatenation), so the lines it
    finds are a superset, and it keeps the more selective literal. What it saves is
    hyperscan trying the head at every common word that starts it: `(?:loss|grad\w*)
    (?:is|was|became) not finite` is tried at every "grad" of every step line,
    ` (?:is|was|became) not finite` is not; the rules' scan ran at 400-670 MB/s with
    such heads, 1,200-1,700 without them (bench/README.md)."""
    icase = pattern.startswith("(?i)")
    body = pattern[4:] if icase else pattern
    out: list[str] = []
    for alt in _top_alternatives(body):
        elems = _elements(alt)
        if elems is None:
            out.append(alt)
            continue
        cut = max((k for k, e in enumerate(elems[:-1]) if _unbounded(e)), default=-1)
        head, tail = elems[: cut + 1], elems[cut + 1 :]
        run = _literal_run(tail)
        if (
            alt.startswith(COMMON_HEADS)
            and cut >= 0
            and run >= PIECE_LITERAL_MIN
            and run > _literal_run(head)
        ):
            out.append("".join(tail))
        else:
            out.append(alt)
    return out, icase


def _top_alternatives(src: str) -> list[str]:
    """`src` split at its top-level `|` (not inside a group or a class)."""
    out: list[str] = []
    depth, start, i, n = 0, 0, 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = _class_end(src, i)
            if j < 0:
                return [src]
            i = j + 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(src[start:i])
            start = i + 1
        i += 1
    out.append(src[start:])
    return out


def _elements(alt: str) -> list[str] | None:
    """The top-level elements of one alternative, each an atom with its quantifier, or
    None where it does not parse (then it is kept whole)."""
    out: list[str] = []
    i, n = 0, len(alt)
    while i < n:
        c = alt[i]
        if c == "\\":
            j = i + (4 if alt[i + 1 : i + 2] == "x" else 2)
        elif c == "[":
            j = _class_end(alt, i) + 1
        elif c == "(":
            j = _group_end(alt, i) + 1
        elif c in "*+?{|)":
            return None
        else:
            j = i + 1
        if j <= i or j > n:
            return None
        k = _skip_quantifier(alt, j)
        out.append(alt[i:k])
        i = k
    return out


def _split_quantifier(elem: str) -> tuple[str, str]:
    """An element as (atom, quantifier)."""
    if elem.startswith("\\"):
        k = 4 if elem[1:2] == "x" else 2
    elif elem.startswith("["):
        k = _class_end(elem, 0) + 1
    elif elem.startswith("("):
        k = _group_end(elem, 0) + 1
    else:
        k = 1
    return elem[:k], elem[k:]


def _group_body(atom: str) -> str:
    """The inside of a group atom: `(...)`, `(?:...)` or `(?i:...)`."""
    for opening in ("(?:", "(?i:"):
        if atom.startswith(opening):
            return atom[len(opening) : -1]
    return atom[1:-1]


def _unbounded(elem: str) -> bool:
    """An element that repeats without bound, or a group with such a repeat inside."""
    atom, quant = _split_quantifier(elem)
    if quant[:1] in ("*", "+") or re.match(r"\{\d+,\}", quant):
        return True
    if atom.startswith("("):
        for alt in _top_alternatives(_group_body(atom)):
            elems = _elements(alt)
            if elems is None or any(_unbounded(e) for e in elems):
                return True
    return False


def _literal_run(elems: list[str]) -> int:
    """The longest run of bytes these elements always match literally, in a row: plain
    characters and escaped punctuation, and groups of plain alternatives (their
    shortest)."""
    best = run = 0
    for e in elems:
        n = _literal_len(e)
        run = run + n if n else 0
        best = max(best, run)
    return best


def _literal_len(elem: str) -> int:
    """How many bytes an element always matches literally (0: not a literal)."""
    atom, quant = _split_quantifier(elem)
    if quant:
        return 0
    if atom.startswith("\\x"):
        return 1
    if atom.startswith("\\"):
        return 0 if atom[1:].isalnum() else 1
    if atom.startswith("(?:"):
        lens = []
        for alt in _top_alternatives(_group_body(atom)):
            elems = _elements(alt)
            parts = [_literal_len(e) for e in elems or []]
            lens.append(sum(parts) if elems and all(parts) else 0)
        return min(lens)
    if atom.startswith(("(", "[")):
        return 0
    return 0 if atom in ".^$" else 1


# What a native engine is told for `\s` and `\w` outside a class: Python's str regexes
# match Unicode spaces and letters, whose UTF-8 bytes are all >= 0x80 (a space character
# is up to three of them); the newline is left out so a match stays on one raw line, as
# it does on one clean line.
_SPACE = r"[\t\x0b\x0c\r \x80-\xff]"
_WORD = r"[\w\x80-\xff]"
_UNSUPPORTED = set("pPNXGKgk0123456789")  # \p{..}, \N{..}, backrefs, ...: no native form
_LOOK = ("(?=", "(?!", "(?<=", "(?<!")


def native_superset(src: str) -> str | None:
    r"""A regex for a native engine (hyperscan, or Python's `re` over bytes) that matches a
    raw line wherever `src` matches its clean text, or None when it has no such form.

    The clean line is the raw one with prefixes peeled, colours stripped and redraws
    resolved (and may split one raw line in several), so anchors and word boundaries go
    (`^`, `$`, `\A`, `\Z`, `\b`), lookarounds go (each only narrows a match), named and
    atomic groups become plain ones, possessive quantifiers greedy ones, bounded repeats
    allow four bytes a character (UTF-8; a wide one is left open, which compiles in
    milliseconds where the bound costs hyperscan seconds), and `\s`/`\w`/`[^...]` never
    cross a newline. The rest is the same syntax in the three engines.
    """
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        step = _STEPS.get(src[i], _plain)
        i = step(src, i, out)
        if i < 0:
            return None
    return "".join(out) or None


# Each step below translates the construct at src[i] onto `out` and returns the index
# after it, or -1 where the construct has no native form.


def _escape(src: str, i: int, out: list[str]) -> int:
    """A backslash escape: anchors go, \\s and \\w widen to UTF-8 bytes, the rest stays."""
    n = len(src)
    if i + 1 >= n:
        return -1
    nx = src[i + 1]
    if nx in _UNSUPPORTED:
        return -1
    i += 2
    if nx in "AZzbB":
        # anchors and word boundaries go: the clean text can start or end inside a
        # raw line (a literal "\n" in a collapsed paste, a redraw, a glued bar)
        return i
    out.append(_SPACE if nx == "s" else _WORD if nx == "w" else "\\" + nx)
    if nx == "s" and (i >= n or src[i] not in "*+?{"):
        out.append("{1,3}")  # one space character: up to three bytes
    if nx == "x":  # \xHH
        out.append(src[i : i + 2])
        i += 2
    return i


def _charset(src: str, i: int, out: list[str]) -> int:
    """A character class: ASCII members only; a negated one never crosses a newline."""
    j = _class_end(src, i)
    if j < 0:
        return -1
    body = src[i + 1 : j]
    if any(ord(c) > 127 for c in body) or "[" in body.replace("\\[", ""):
        return -1  # a non-ASCII member is several bytes; nested sets: no form
    if body.startswith("^"):
        body = "^\\n" + body[1:]
    body = body.replace("\\w", "\\w\\x80-\\xff")
    out.append(f"[{body}]")
    return j + 1


def _group(src: str, i: int, out: list[str]) -> int:
    """A group's opening: lookarounds and comments go, named and atomic groups become
    plain ones; conditionals, branch resets and other flags have no form."""
    if src.startswith(_LOOK, i):
        j = _group_end(src, i)
        return -1 if j < 0 else _skip_quantifier(src, j + 1)
    if src.startswith("(?#", i):
        j = src.find(")", i)
        return -1 if j < 0 else j + 1
    if src.startswith(("(?P<", "(?<"), i):
        j = src.find(">", i)
        if j < 0:
            return -1
        out.append("(?:")
        return j + 1
    if src.startswith("(?>", i):
        out.append("(?:")
        return i + 3
    if src.startswith("(?", i) and not src.startswith(("(?:", "(?i)", "(?i:"), i):
        return -1
    out.append("(")
    return i + 1


def _anchor(src: str, i: int, out: list[str]) -> int:
    """`^` and `$` go (see `_escape`)."""
    return i + 1


def _brace(src: str, i: int, out: list[str]) -> int:
    """A bounded repeat: four bytes a character, a wide bound left open; possessive
    becomes greedy. A `{` that is no bound is a literal."""
    m = _BOUND.match(src, i)
    if not m:
        return _plain(src, i, out)
    lo, comma, hi = m.group(1), m.group(2), m.group(3)
    top = int(hi or lo) * 4 if not comma or hi else 0
    # a wide bound costs hyperscan seconds to compile: open it (a superset)
    out.append(f"{{{lo},{top}}}" if 0 < top <= 32 else f"{{{lo},}}")
    i = m.end()
    if i < len(src) and src[i] == "+":
        i += 1
    return i


def _quantifier(src: str, i: int, out: list[str]) -> int:
    """`*`, `+`, `?`: a possessive one (`*+`) becomes greedy."""
    if i + 1 < len(src) and src[i + 1] == "+":
        out.append(src[i])
        return i + 2
    return _plain(src, i, out)


def _plain(src: str, i: int, out: list[str]) -> int:
    """Any other character: itself, or its UTF-8 bytes where it is not ASCII."""
    ch = src[i]
    out.append("(?:" + "".join(f"\\x{b:02x}" for b in ch.encode()) + ")" if ord(ch) > 127 else ch)
    return i + 1


_STEPS: dict[str, Callable[[str, int, list[str]], int]] = {
    "\\": _escape,
    "[": _charset,
    "(": _group,
    "^": _anchor,
    "$": _anchor,
    "{": _brace,
    "*": _quantifier,
    "+": _quantifier,
    "?": _quantifier,
}


_BOUND = re.compile(r"\{(\d+)(,?)(\d*)\}")


def _class_end(src: str, i: int) -> int:
    """Index of the `]` that closes the class opened at `i`, or -1."""
    j = i + 1
    if j < len(src) and src[j] == "^":
        j += 1
    if j < len(src) and src[j] == "]":
        j += 1
    while j < len(src):
        if src[j] == "\\":
            j += 2
            continue
        if src[j] == "]":
            return j
        j += 1
    return -1


def _group_end(src: str, i: int) -> int:
    """Index of the `)` that closes the group opened at `i`, or -1."""
    depth = 0
    j = i
    while j < len(src):
        c = src[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = _class_end(src, j)
            if j < 0:
                return -1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _skip_quantifier(src: str, j: int) -> int:
    if j < len(src) and src[j] in "*+?":
        j += 1
    elif j < len(src) and src[j] == "{":
        m = _BOUND.match(src, j)
        if m:
            j = m.end()
    if j < len(src) and src[j] in "?+":
        j += 1
    return j

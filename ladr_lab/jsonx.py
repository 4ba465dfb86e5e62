"""The JSON extraction engine (SPEC §5.1): find the JSON value that an LLM output carries.

Rules, in order; the first one that yields a value wins:

1. ``strict`` -- the whole output, stripped of surrounding whitespace, is one JSON value. Any JSON
   value counts, scalars included (an output of ``4`` yields ``4``, ``null`` yields ``None``).
2. ``fence`` -- the first fenced code block whose contents are one JSON value. A fence is a line
   holding only three or more backticks and an info string that is empty or ``json`` / ``jsonc``
   / ``json5`` (any case), optionally indented; it is closed by a line of at least as many
   backticks and nothing else, or runs to the end of the text when never closed (CommonMark).
   Fences in another language (```` ```python ````) are stepped over whole. Tilde fences are not
   recognised, so prose without backticks can never form a fence.
3. ``balanced`` -- the first offset, left to right, holding ``{`` or ``[`` from which a complete
   JSON object or array parses. A JSON object or array parsed from an offset ends at the bracket
   that matches its opener when strings and escapes are read from that offset, so this is exactly
   "the first balanced block that parses"; when the block at the earliest start does not parse,
   later starts are tried, including starts nested inside it (even inside its string literals).
4. nothing -- :data:`NO_JSON`.

Values are standard JSON: ``NaN``/``Infinity`` are rejected, raw control characters inside
strings are rejected (``strict`` mode of :mod:`json`), nesting deeper than :data:`MAX_DEPTH`
counts as not JSON (no ``RecursionError`` ever escapes), and so does an integer with more digits
than Python converts (``sys.get_int_max_str_digits()``). Numbers are otherwise converted as
:mod:`json` does (a finite literal beyond the float range, e.g. ``1e400``, becomes ``inf``).

Complexity (n = len(text)). Rule 1 is one C-level parse and rule 2 reads each line once and parses
each fence body once (bodies are disjoint), so both are O(n). For rule 3, a *frame* is the lexical
reading of the text from an opener at offset k: strings and escapes tracked from k, brackets
matched with a stack, until k's matching bracket, a mismatched bracket, the end, or a *dead*
character that no JSON text can hold in that state (outside strings anything but whitespace,
structure, number characters and the letters of true/false/null; inside strings a control
character or a bad escape) -- every bracket still open there fails to parse whatever its start.
Frames that are outside a string at the same offset agree from there on, so each opener a frame
reads outside strings gets its verdict (matching bracket and nesting height, or failure) once and
is never read again; a new frame starts only at an opener that lies inside a string of every live
frame covering it, and two live frames that disagree are complementary (a ``"`` flips both, a
``\\`` kills the one outside a string), so no offset is read by more than two frames: lexing costs
at most 2n. The C parser (``raw_decode``, over doubling windows so that a failure at e costs
O(e - k): see :func:`_parse_at`) runs only on balanced candidates no deeper than MAX_DEPTH;
when the parse from k fails at offset e, every opener of the same frame strictly
between k and e is either still open at e -- it fails at e too (same tokens, same error) and is
skipped in O(1) -- or closed before e -- it parses, and the search ends there. So a failing parse
that overlaps an earlier one starts inside one of its string literals, and by the same
two-frame argument no offset lies in more than two failing parses: parsing is O(n) plus the one
successful parse, and the whole of :func:`extract` is O(n). The work is counted
(:class:`_Work`) so that the tests check the bound without timing anything. Iterating *every*
candidate with :func:`iter_candidates` additionally pays for parsing each successful candidate,
which is output-sensitive (nested blocks that parse are each parsed again).
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, cast

__all__ = ["MAX_DEPTH", "NO_JSON", "Extraction", "extract", "extract_json", "iter_candidates"]

MAX_DEPTH: Final = 256
"""Deepest nesting of objects/arrays accepted; deeper values count as not JSON."""


class _NoJson:
    """Type of the :data:`NO_JSON` sentinel: a falsy singleton whose repr is ``NO_JSON``."""

    __slots__ = ()
    _instance: _NoJson | None = None

    def __new__(cls) -> _NoJson:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NO_JSON"

    def __reduce__(self) -> str:
        return "NO_JSON"

    def __copy__(self) -> _NoJson:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _NoJson:
        return self


NO_JSON: Final = _NoJson()
"""Sentinel meaning "no JSON found" (falsy, distinct from a found ``null``)."""


@dataclass(frozen=True)
class Extraction:
    """The outcome of one extraction: the value, whether one was found, by which rule, and where."""

    value: Any
    found: bool
    method: str | None  # "strict" | "fence" | "balanced" | None
    span: tuple[int, int] | None  # text[span[0]:span[1]] is the JSON text that was parsed

    def __bool__(self) -> bool:
        return self.found


_NOT_FOUND: Final = Extraction(NO_JSON, False, None, None)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not standard JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FAIL = object()
_JSON_WS = " \t\n\r"


class _Work:
    """Counts the characters each phase examined (the linear-time hook the tests assert on)."""

    __slots__ = ("lex", "parse", "fence", "cand")

    def __init__(self) -> None:
        self.lex = self.parse = self.fence = self.cand = 0

    @property
    def total(self) -> int:
        return self.lex + self.parse + self.fence + self.cand

    def __repr__(self) -> str:
        return f"_Work(lex={self.lex}, parse={self.parse}, fence={self.fence}, cand={self.cand})"


def _depth(value: Any) -> int:
    """Nesting depth of a parsed value (scalars 0, ``[]`` 1), computed without recursion."""
    if not isinstance(value, (dict, list)):
        return 0
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, d = stack.pop()
        if d > deepest:
            deepest = d
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, d + 1))
    return deepest


def _loads(s: str) -> Any:
    """Strictly parse one whole JSON text; ``_FAIL`` when it is not (standard, shallow enough) JSON."""
    try:
        value = _DECODER.decode(s)
    except (ValueError, RecursionError):
        return _FAIL
    return value if _depth(value) <= MAX_DEPTH else _FAIL


# ---------------------------------------------------------------------------------------------
# rule 1: strict


def _strict(text: str, work: _Work) -> Extraction | None:
    stripped = text.strip()
    if not stripped:
        return None
    work.parse += len(stripped)
    value = _loads(stripped)
    if value is _FAIL:
        return None
    start = len(text) - len(text.lstrip())
    return Extraction(value, True, "strict", (start, start + len(stripped)))


# ---------------------------------------------------------------------------------------------
# rule 2: fences

_FENCE_OPEN = re.compile(r"^[ \t]*(`{3,})([^`\n]*)$", re.M)
_FENCE_CLOSE = re.compile(r"^[ \t]*(`{3,})[ \t\r]*$", re.M)
_JSON_INFO = frozenset({"", "json", "jsonc", "json5"})


def _fences(text: str, work: _Work) -> Iterator[Extraction]:
    n = len(text)
    pos = 0
    while True:
        opening = _FENCE_OPEN.search(text, pos)
        if opening is None:
            work.fence += n - pos
            return
        width = opening.end(1) - opening.start(1)
        words = opening.group(2).split()
        lang = words[0].lower() if words else ""
        body_start = min(opening.end() + 1, n)
        closing = None
        q = body_start
        while True:
            c = _FENCE_CLOSE.search(text, q)
            if c is None:
                break
            if c.end(1) - c.start(1) >= width:
                closing = c
                break
            q = c.end()
        body_end = closing.start() if closing is not None else n
        work.fence += (closing.end() if closing is not None else n) - pos
        if lang in _JSON_INFO:
            body = text[body_start:body_end]
            stripped = body.strip(_JSON_WS)
            if stripped:
                start = body_start + len(body) - len(body.lstrip(_JSON_WS))
                work.parse += len(stripped)
                value = _loads(stripped)
                if value is not _FAIL:
                    yield Extraction(value, True, "fence", (start, start + len(stripped)))
        if closing is None:
            return
        pos = closing.end()


# ---------------------------------------------------------------------------------------------
# rule 3: balanced blocks

# An opener that can start a JSON object/array: `{` then `"` or `}`, `[` then a value or `]`.
_PLAUSIBLE = re.compile(r'\{(?=[ \t\n\r]*["}])|\[(?=[ \t\n\r]*[\[\]{"0-9tfn-])')
# Characters a JSON text may hold outside strings, brackets and quotes excluded.
_OUT_SKIP = re.compile(r"[ \t\n\r0-9+\-.:,aeEflnrstu]*")
# The body of a string literal after its opening quote: stops at the closing quote, a control
# character, a bad escape or the end.
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]+|\\["\\/bfnrtu])*')
_OPEN_RUN = re.compile(r"[\[{]+")
_BIGINT_CACHE: dict[int, re.Pattern[str]] = {}


def _bigint_pattern(limit: int) -> re.Pattern[str]:
    """An integer token with more digits than ``int()`` accepts (no fraction, no exponent)."""
    pattern = _BIGINT_CACHE.get(limit)
    if pattern is None:
        digits = r"[0-9]{" + str(limit) + ",}"  # with the leading [1-9]: more than `limit` digits
        pattern = re.compile(r"(?<![0-9.eE+\-])-?[1-9]" + digits + r"(?![0-9])(?!\.[0-9]|[eE][+\-]?[0-9])")
        _BIGINT_CACHE[limit] = pattern
    return pattern


_UNKNOWN, _DEAD, _BALANCED = 0, 1, 2
_WINDOW = 64  # first window of a parse attempt; doubled while the window cut the parse short
_CUT_MARGIN = 16  # an error this close to a window's end may be an artefact of the cut


def _parse_at(text: str, k: int, stop: int) -> tuple[bool, Any, int, int]:
    """Parse the JSON value at ``text[k:stop]``: ``(ok, value, end or error offset, chars sliced)``.

    ``JSONDecodeError`` counts the newlines from the start of the string it was given up to the
    error, so ``raw_decode(text, k)`` would cost O(k) per failure and make the scan quadratic; the
    value is parsed instead from windows ``text[k:k + w]`` with ``w`` doubling while an error may
    come from the cut (near the window's end, or a string left open), so a failure at ``e`` costs
    O(e - k) and a success O(its length).
    """
    decode = _DECODER.raw_decode
    width = _WINDOW
    cost = 0
    while True:
        end = min(k + width, stop)
        window = text[k:end]
        cost += end - k
        try:
            value, used = decode(window, 0)
        except json.JSONDecodeError as exc:
            if end < stop and (exc.pos >= len(window) - _CUT_MARGIN or exc.msg.startswith("Unterminated")):
                width *= 2
                continue
            return False, None, k + exc.pos, cost
        return True, value, k + used, cost


def _balanced(text: str, work: _Work) -> Iterator[Extraction]:
    n = len(text)
    plausible = _PLAUSIBLE.finditer(text)
    first = next(plausible, None)
    if first is None:
        return
    code = "i" if n < 2**31 - 1 else "q"
    zeros = bytes(n * array(code).itemsize)
    status = bytearray(n)  # per opener offset: _UNKNOWN, _DEAD (cannot parse) or _BALANCED
    match = array(code)  # offset of the matching bracket (when _BALANCED)
    match.frombytes(zeros)
    height = array(code)  # nesting height of the block (when _BALANCED)
    height.frombytes(zeros)
    frame_of = array(code)  # start offset of the frame that read this opener
    frame_of.frombytes(zeros)
    horizon: dict[int, int] = {}  # frame -> offset where the last failed parse in it failed
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    bigint = _bigint_pattern(limit) if limit > 0 else None
    # these patterns match the empty string too, so match() never returns None here
    out_skip = cast(Callable[[str, int], re.Match[str]], _OUT_SKIP.match)
    string_body = cast(Callable[[str, int], re.Match[str]], _STRING_BODY.match)
    open_run = cast(Callable[[str, int], re.Match[str]], _OPEN_RUN.match)
    lexed = parsed = visited = 0

    def read_frame(k: int) -> int:
        """Lex one frame from opener ``k``, giving a verdict to every opener it reads; return the length read."""
        stack = [k]
        frame_of[k] = k
        p = k + 1
        while p < n:
            c = text[p]
            if c == "]" or c == "}":
                o = stack[-1]
                if (c == "]") != (text[o] == "["):
                    break
                stack.pop()
                h = height[o] + 1
                height[o] = h
                match[o] = p
                status[o] = _BALANCED
                p += 1
                if not stack:
                    break
                parent = stack[-1]
                if height[parent] < h:
                    height[parent] = h
            elif c == "[" or c == "{":
                q = p + 1
                if q < n and (text[q] == "[" or text[q] == "{"):  # a run of openers: push it at once
                    q = open_run(text, p).end()
                    stack.extend(range(p, q))
                    frame_of[p:q] = array(code, [k]) * (q - p)
                else:
                    stack.append(p)
                    frame_of[p] = k
                p = q
            elif c == '"':
                q = string_body(text, p + 1).end()
                if q < n and text[q] == '"':
                    p = q + 1
                else:
                    p = q  # a control character, a bad escape or the end: dead
                    break
            else:
                q = out_skip(text, p).end()
                if q == p:
                    break  # a character no JSON text holds here: dead
                if bigint is not None and q - p > limit:
                    big = bigint.search(text, p, q)
                    if big is not None:
                        for o in stack:
                            status[o] = _DEAD
                        return q - k  # an integer int() refuses: dead
                p = q
        for o in stack:
            status[o] = _DEAD
        return p - k

    for m in itertools.chain((first,), plausible):
        k = m.start()
        visited += 1
        st = status[k]
        if st == _UNKNOWN:
            lexed += read_frame(k)
            st = status[k]
        if st == _DEAD:
            continue
        frame = frame_of[k]
        failed_at = horizon.get(frame)
        if failed_at is not None and k < failed_at <= match[k]:
            continue  # open where an enclosing parse of the same frame failed: fails there too
        if height[k] > MAX_DEPTH:
            continue
        try:
            ok, value, end, cost = _parse_at(text, k, match[k] + 1)
        except (ValueError, RecursionError):  # not expected: the lexer rules these out
            parsed += match[k] + 1 - k
            continue
        parsed += cost
        if not ok:
            horizon[frame] = end
            continue
        work.lex += lexed
        work.parse += parsed
        work.cand += visited
        lexed = parsed = visited = 0
        yield Extraction(value, True, "balanced", (k, end))
    work.lex += lexed
    work.parse += parsed
    work.cand += visited


# ---------------------------------------------------------------------------------------------
# public API


def _check(text: object) -> None:
    if not isinstance(text, str):
        raise TypeError(f"expected str, got {type(text).__name__}")


def _candidates(text: str, work: _Work) -> Iterator[Extraction]:
    found = _strict(text, work)
    if found is not None:
        yield found
    yield from _fences(text, work)
    yield from _balanced(text, work)


def iter_candidates(text: str) -> Iterator[Extraction]:
    """Yield every parseable candidate in rule order: the strict whole text, fences, then balanced blocks by start."""
    _check(text)
    return _candidates(text, _Work())


def extract(text: str) -> Extraction:
    """Extract the JSON value an output carries by the §5.1 rules, in time linear in ``len(text)``."""
    _check(text)
    for found in _candidates(text, _Work()):
        return found
    return _NOT_FOUND


def extract_json(text: str) -> Any:
    """Return the extracted JSON value, or :data:`NO_JSON` when the text carries none."""
    return extract(text).value


def _measure(text: str, every: bool = False) -> _Work:
    """Run :func:`extract` (or exhaust :func:`iter_candidates` when ``every``) and return the work counted."""
    _check(text)
    work = _Work()
    for _ in _candidates(text, work):
        if not every:
            break
    return work

"""The word handling the offline model scores with: content words, light stemming, path words, the
strings inside a JSON value, and the prose sentences of a document. Pure stdlib."""
from __future__ import annotations

import re

__all__ = ["STOPWORDS", "leaf_strings", "path_terms", "sentences", "stem", "terms", "words"]

_WORD = re.compile(r"[a-z0-9]+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_])")
_BULLET = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}$")
_SUFFIXES = ("ies", "ing", "ion", "ed", "es", "al", "ly", "s", "e", "y")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each either etc
    few for from further get gets got had has have having he her here hers him his how however i if
    in into is it its itself just let like made make many may me might more most much must my no nor
    not now of off on once one only or other our ours out over own per please same shall she should
    show so some such tell than that the their theirs them then there these they this those through
    thus to too under until up upon us use used using very via was way we were what whats when
    where whether which while who whom whose why will with within without would yes yet you your
    explain describe give list find know want need say says said does question answer""".split()
)


def stem(word: str) -> str:
    """Strip up to two common English suffixes (plurals, -ing, -ed, -ion, -al, -ly, final e/y), keeping
    at least three letters, so "retrieval", "retrieving" and "retrieves" all become "retriev"."""
    if word.isdigit():
        return word
    for _ in range(2):
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not (suffix == "s" and word.endswith("ss")):
                word = word[: -len(suffix)]
                break
        else:
            break
    return word


def words(text: str) -> list[str]:
    """Lowercased content words of `text` (stopwords and 1-letter words dropped), in order."""
    return [w for w in _WORD.findall((text or "").lower()) if len(w) > 1 and w not in STOPWORDS]


def terms(text: str) -> list[str]:
    """Stemmed content words of `text`, in order of first appearance, without repeats."""
    seen: dict[str, None] = {}
    for w in words(text):
        seen.setdefault(stem(w), None)
    return list(seen)


def path_terms(path: str) -> set[str]:
    """Stemmed words of a file path, split on `/ - _ .` and camelCase, the extension dropped."""
    path = _EXTENSION.sub("", path.rstrip("/"))
    path = re.sub(r"([a-z])([A-Z])", r"\1 \2", path)
    return set(terms(re.sub(r"[/\-_.]", " ", path)))


def leaf_strings(value) -> list[str]:
    """Every string (and number) inside a JSON value, depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [str(value)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in leaf_strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in leaf_strings(v)]
    return []


def sentences(text: str) -> list[str]:
    """Prose sentences of a document: headings, code blocks and tables skipped, bullets kept whole."""
    units: list[str] = []
    para: list[str] = []
    in_code = False

    def flush():
        if para:
            units.append(" ".join(para))
            para.clear()

    for line in (text or "").splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if not s or s.startswith(("#", "|", "---", "<!--")):
            flush()
            continue
        m = _BULLET.match(s)
        if m:
            flush()
            units.append(s[m.end():])
            continue
        para.append(s)
    flush()
    out = []
    for unit in units:
        for sent in _SENT_SPLIT.split(unit):
            sent = re.sub(r"\*\*|__", "", sent)
            sent = re.sub(r"\s+", " ", sent).strip()
            if "{" in sent or "}" in sent or not re.search(r"[A-Za-z]", sent):
                continue
            if len(_WORD.findall(sent.lower())) < 3:
                continue
            out.append(sent)
    return out

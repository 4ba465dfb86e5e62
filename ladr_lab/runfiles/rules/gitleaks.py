"""Gitleaks' default rule set as data: its Go RE2 patterns translated to Python's `re`, its keywords, entropy
thresholds, secret groups and allowlists, applied to a text the way gitleaks applies them to a file.

The rules are vendored in `gitleaks.json` (a conversion of upstream's `config/gitleaks.toml`, kept beside it with
upstream's MIT licence); `python -m ladr_lab.runfiles.rules.refresh` fetches and converts a newer set. A rule is
tried on a text only when the text holds one of its keywords (the caller scans for those once, for all rules).
"""
from __future__ import annotations

import functools
import importlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # the standard library's own pattern parser: what a rule's matches begin with
    _sre = importlib.import_module("re._constants")
    _sre_parse = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _sre = importlib.import_module("sre_constants")
    _sre_parse = importlib.import_module("sre_parse")

DATA = Path(__file__).with_name("gitleaks.json")

# POSIX classes RE2 allows inside a bracket expression ("[[:alnum:]]"); Python's `re` has none
_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "lower": "a-z", "upper": "A-Z",
          "xdigit": "0-9A-Fa-f", "space": r"\t\n\v\f\r ", "word": r"\w", "punct": r"!-/:-@\[-`{-~",
          "blank": r" \t", "cntrl": r"\x00-\x1f\x7f", "print": r" -~", "graph": r"!-~", "ascii": r"\x00-\x7f"}
_FLAGS_ONLY_RE = re.compile(r"\(\?([a-zA-Z]*(?:-[a-zA-Z]+)?)\)")
# a keyword-led rule's lazy name prefix: it widens the match, never the secret, and costs a try at every position
_LEAD = "[\\w.-]{0,50}?"
# how most rules end a token: a quote, space, ";" or an escaped line break, consumed. A log's prose also ends one
# with punctuation ("the key is LTAI….", "(ghp_…)"), so the end is looked at, not taken, and may be any of these.
_END = "(?:[\\x60'\"\\s;]|\\\\[nr]|$)"
_END_IN_LOGS = "(?=[\\x60'\"\\s;,.:!?)\\]}>|&<\\\\]|$)"


class TranslationError(ValueError):
    """A gitleaks pattern uses RE2 syntax this translation does not know."""


def translate(pattern: str) -> str:
    """`pattern` (Go RE2 syntax) as a Python `re` pattern of the same meaning, to be compiled with `re.ASCII`.

    RE2's flag groups (``(?i)``) may stand anywhere and last to the end of their group (across ``|``): Python's
    only at the start, so a later one becomes a scoped group ``(?i:…)`` closed before each ``|`` and ``)`` of its
    group. ``\\z`` becomes ``\\Z``, POSIX classes (``[[:alnum:]]``) are spelled out, ``(?<name>`` is ``(?P<name>``,
    and a ``[``, ``&&``, ``||``, ``~~`` or ``--`` inside a class is escaped (Python reads them as future set
    operations). `re.ASCII` gives ``\\w``, ``\\d``, ``\\s`` and ``\\b`` RE2's ASCII meaning.
    """
    out: list[str] = []
    opened: list[int] = [0]  # per open group: how many scoped flag groups this translation opened inside it
    flags: list[str] = [""]  # per open group: the flags a later "|" must open again
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            esc = pattern[i:i + 2]
            if esc in ("\\Q", "\\C") or esc[1:2] in ("p", "P"):
                raise TranslationError(f"unsupported escape {esc!r} in {pattern!r}")
            out.append("\\Z" if esc == "\\z" else esc)
            i += 2
        elif c == "[":
            j, cls = _class(pattern, i)
            out.append(cls)
            i = j
        elif c == "(":
            m = _FLAGS_ONLY_RE.match(pattern, i)
            if m and (out or i):  # a flag group after the start: scoped to the rest of its group
                out.append(f"(?{m.group(1)}:")
                opened[-1] += 1
                flags[-1] += m.group(1) + ","
                i = m.end()
                continue
            if m:
                out.append(m.group(0))
                i = m.end()
                continue
            if pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                out.append("(?P<")
                i += 3
            else:
                out.append("(")
                i += 1
            opened.append(0)
            flags.append("")
        elif c == ")":
            out.append(")" * opened.pop() + ")")
            flags.pop()
            i += 1
        elif c == "|" and opened[-1]:
            out.append(")" * opened[-1] + "|" + "".join(f"(?{f}:" for f in flags[-1].split(",") if f))
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out) + ")" * opened[0]


def _class(pattern: str, i: int) -> tuple[int, str]:
    """The bracket expression starting at `pattern[i]`: (the index after it, its Python spelling)."""
    out = ["["]
    j = i + 1
    if pattern.startswith("^", j):
        out.append("^")
        j += 1
    if pattern.startswith("]", j):  # a "]" first is a member
        out.append("\\]")
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        c = pattern[j]
        if c == "\\":
            out.append(pattern[j:j + 2])
            j += 2
            continue
        if c == "[" and (m := re.match(r"\[:(\^?)(\w+):\]", pattern[j:])):
            if m.group(1) or m.group(2) not in _POSIX:
                raise TranslationError(f"unsupported class {m.group(0)!r} in {pattern!r}")
            out.append(_POSIX[m.group(2)])
            j += m.end()
            continue
        if c == "[" or (c in "&|~-" and pattern[j + 1:j + 2] == c):
            out.append("\\" + c)
        else:
            out.append(c)
        j += 1
    if j >= len(pattern):
        raise TranslationError(f"unclosed class in {pattern!r}")
    return j + 1, "".join(out) + "]"


def shannon_entropy(s: str) -> float:
    """The Shannon entropy of `s` in bits per character (gitleaks' measure)."""
    if not s:
        return 0.0
    n = len(s)
    return math.log2(n) - sum(k * math.log2(k) for k in map(s.count, set(s))) / n


@dataclass(frozen=True)
class Allowlist:
    """What a rule (or the whole set) lets through: a secret, match or line matching a regex, or holding a stopword."""

    target: str  # "secret", "match" or "line": what the regexes are tried on
    regexes: tuple[re.Pattern, ...]
    stopwords: tuple[str, ...]
    every: bool  # condition AND: the regexes and the stopwords must both hold

    def _stopwords(self) -> Any:
        """An Aho-Corasick automaton of the stopwords (generic-api-key has about 1,500 of them)."""
        automaton = self.__dict__.get("_automaton")
        if automaton is None:
            from ahocorasick_rs import AhoCorasick

            automaton = AhoCorasick(list(self.stopwords))
            object.__setattr__(self, "_automaton", automaton)
        return automaton

    def allows(self, secret: str, match: str, line: str) -> bool:
        """Whether this allowlist lets the finding through (gitleaks' checkFindingAllowed, paths aside)."""
        target = secret if self.target == "secret" else match if self.target == "match" else line
        regex = self._regex()
        if self.every:
            return bool(regex or self.stopwords) and (regex is None or regex.search(target) is not None) and (
                not self.stopwords or self._stopwords().find_matches_as_indexes(secret.lower()) != [])
        # the stopwords first: one automaton pass, where the regexes may be a long alternation tried at each position
        return (bool(self.stopwords) and self._stopwords().find_matches_as_indexes(secret.lower()) != []) or (
            regex is not None and regex.search(target) is not None)

    def _regex(self) -> re.Pattern | None:
        """The regexes as one alternation (one search, not one per regex), or None when there are none."""
        if "_one" not in self.__dict__:
            one = None
            if self.regexes:
                one = re.compile("|".join(_scoped(rx.pattern) for rx in self.regexes), re.ASCII)
            object.__setattr__(self, "_one", one)
        return self.__dict__["_one"]


def _scoped(pattern: str) -> str:
    """`pattern` as a group of an alternation: its leading flags (``(?i)x``) scoped to it (``(?i:x)``)."""
    m = _FLAGS_ONLY_RE.match(pattern)
    return f"(?{m.group(1)}:{pattern[m.end():]})" if m else f"(?:{pattern})"


@dataclass(frozen=True)
class Rule:
    """One gitleaks rule, compiled (`RuleSet.spans` applies it to a text)."""

    id: str
    regex: re.Pattern
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    allowlists: tuple[Allowlist, ...]
    lead: bool  # the lazy name prefix was dropped: a "match" allowlist is shown the name before the match too

    @functools.cached_property
    def anchors(self) -> tuple[str, ...] | None:
        """What every match begins with (`beginnings`): the rule is tried only where these are, or None."""
        return beginnings(self.regex.pattern, self.regex.flags)


def _beginnings(items: Any, starts: dict[str, bool]) -> dict[str, bool]:
    """What a match of the parsed `items` can begin with: each known beginning (lower-cased) -> whether it may go on.

    `starts` holds the beginnings so far. What is not a literal, a small class, a group, an alternation or an
    optional part ends a beginning (it is as long as can be known)."""
    for op, av in items:
        if not any(starts.values()) or len(starts) > 64:
            break
        if op in (_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT):  # zero width: a match does not begin with it
            continue
        if op is _sre.LITERAL:
            starts = {p + chr(av).lower() if o else p: o for p, o in starts.items()}
        elif op is _sre.IN and (chars := _small_class(av)):
            starts = {k: v for p, o in starts.items() for k, v in ([(p + c, True) for c in chars] if o else [(p, o)])}
        elif op is _sre.SUBPATTERN:
            starts = _beginnings(av[-1], starts)
        elif op is _sre.BRANCH:
            merged: dict[str, bool] = {}
            for alt in av[1]:
                for p, o in _beginnings(alt, dict(starts)).items():
                    merged[p] = merged.get(p, False) or o
            starts = merged
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] <= 1 and av[1] == 1:
            taken = _beginnings(av[2], dict(starts))
            starts = {**taken, **starts} if av[0] == 0 else taken
        elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and av[0] >= 1:
            starts = {p: False for p in _beginnings(av[2], dict(starts))}
        else:
            starts = {p: False for p in starts}
    return starts


def _small_class(items: Any) -> list[str] | None:
    """The lower-cased members of a parsed class of at most three letters or digits (``[Aa]``), else None."""
    chars: set[str] = set()
    for op, av in items:
        if op is _sre.LITERAL:
            chars.add(chr(av).lower())
        elif op is _sre.RANGE and av[1] - av[0] < 3:
            chars.update(chr(c).lower() for c in range(av[0], av[1] + 1))
        else:
            return None
    return sorted(chars) if len(chars) <= 3 else None


def beginnings(pattern: str, flags: int = re.ASCII) -> tuple[str, ...] | None:
    """The strings (lower-cased) one of which every match of `pattern` begins with, so that it need only be tried
    where they are; None when a match may begin with a wider class, or there would be more than 64 of them."""
    starts = _beginnings(_sre_parse.parse(pattern, flags), {"": True})
    if len(starts) > 64 or any(len(p) < 2 for p in starts):
        return None
    return tuple(sorted(starts))


@dataclass(frozen=True)
class RuleSet:
    """The vendored rule set: its rules, its global allowlist and where it came from (`source`)."""

    rules: tuple[Rule, ...]
    allowlist: Allowlist
    source: dict
    skipped: tuple[str, ...]  # rules with no pattern (a file name only)
    _verdicts: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def label(self) -> str:
        """A short name of this set and its upstream commit, part of the masker's name."""
        return f"gitleaks-{self.source.get('commit', '')[:12]}"

    def spans(self, text: str, rules: list[tuple[Rule, list[int] | None]]) -> list[tuple[int, int]]:
        """The spans of `text` holding a secret that one of `rules` finds and no allowlist lets through.

        Each rule comes with where its `anchors` are in `text` (a rule that has anchors is tried only there), or
        None (it is tried at every position)."""
        out = []
        for rule, at in rules:
            where = at if at is not None and rule.anchors is not None else None
            found = rule.regex.finditer(text) if where is None else \
                filter(None, (rule.regex.match(text, p) for p in sorted(set(where))))
            for m in found:
                g = rule.secret_group or next((k for k in range(1, (m.lastindex or 0) + 1) if m.group(k)), 0)
                if rule.secret_group and (m.lastindex or 0) < g:
                    g = 0
                secret = (m.group(g) or "").strip("\n")
                if not secret:
                    continue
                match = m.group(0)
                if rule.lead:  # the name the dropped prefix would have taken in
                    k = m.start()
                    while k > max(0, m.start() - 50) and (text[k - 1].isalnum() or text[k - 1] in "_.-"):
                        k -= 1
                    match = text[k:m.end()]
                if not self._finding(rule, secret, match):
                    continue
                if any(a.target == "line" for a in rule.allowlists):
                    lines = (text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end()))
                    line = text[lines[0]:lines[1] if lines[1] >= 0 else len(text)]
                    if any(a.allows(secret, match, line) for a in rule.allowlists if a.target == "line"):
                        continue
                out.append(m.span(g))
        return out

    def _finding(self, rule: Rule, secret: str, match: str) -> bool:
        """Whether `secret` passes the rule's entropy threshold and no allowlist of the secret or the match lets it
        through (remembered: a log repeats its settings)."""
        key = (rule.id, secret, match)
        verdict = self._verdicts.get(key)
        if verdict is None:
            verdict = not (rule.entropy and shannon_entropy(secret) <= rule.entropy) \
                and not self.allowlist.allows(secret, match, "") \
                and not any(a.allows(secret, match, "") for a in rule.allowlists if a.target != "line")
            if len(self._verdicts) >= 4096:
                self._verdicts.clear()
            self._verdicts[key] = verdict
        return verdict


def _allowlist(data: dict) -> Allowlist | None:
    """An `Allowlist` from its TOML table, or None when it only names paths or commits (run files have neither)."""
    every = data.get("condition", "OR").upper() == "AND"
    if data.get("paths") or data.get("commits"):
        if every or not (data.get("regexes") or data.get("stopwords")):
            return None
    regexes = tuple(re.compile(translate(p), re.ASCII) for p in data.get("regexes", ()))
    return Allowlist(data.get("regexTarget", "secret"), regexes, tuple(w.lower() for w in data.get("stopwords", ())),
                     every)


def _rule(data: dict) -> Rule:
    """A compiled `Rule` from its TOML table."""
    pattern = translate(data["regex"]).replace(_END, _END_IN_LOGS)
    lead = False
    for head in ("(?i)" + _LEAD, _LEAD):
        if pattern.startswith(head):
            pattern = pattern[:len(head) - len(_LEAD)] + pattern[len(head):]
            lead = True
    allowlists = tuple(a for a in map(_allowlist, data.get("allowlists", ())) if a is not None)
    keywords = tuple(k.lower() for k in data.get("keywords", ()))
    return Rule(data["id"], re.compile(pattern, re.ASCII), keywords, float(data.get("entropy", 0.0)),
                int(data.get("secretGroup", 0)), allowlists, lead)


@functools.cache
def load(path: str = str(DATA)) -> RuleSet:
    """The rule set in `path` (the vendored one by default), translated and compiled once per process."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    config = data["config"]
    rules = tuple(_rule(r) for r in config["rules"] if r.get("regex"))
    skipped = tuple(r["id"] for r in config["rules"] if not r.get("regex"))
    allowlist = _allowlist(config.get("allowlist", {})) or Allowlist("secret", (), (), False)
    return RuleSet(rules, allowlist, data["source"], skipped)


__all__ = ["Allowlist", "DATA", "Rule", "RuleSet", "TranslationError", "beginnings", "load", "shannon_entropy",
           "translate"]

"""Samples for the vendored gitleaks rules, built at run time from each rule's own pattern (as gitleaks' own tests
build theirs from the rule's regex): random, so that no file of this repository holds anything a secret scanner
could take for a real key, and checked against the rule's keywords, entropy threshold and allowlists.
"""
from __future__ import annotations

import random
import re
import string

try:  # Python 3.11+
    from re import _constants as C  # type: ignore[attr-defined]
    from re import _parser as P  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as C  # type: ignore[no-redef]
    import sre_parse as P  # type: ignore[no-redef]

from ladr_lab.runfiles.rules.gitleaks import Rule, RuleSet

_PRINTABLE = ["\t", "\n", "\r"] + [chr(c) for c in range(32, 127)]
_CATEGORY = {
    C.CATEGORY_DIGIT: string.digits, C.CATEGORY_NOT_DIGIT: string.ascii_letters,
    C.CATEGORY_WORD: string.ascii_letters + string.digits + "_", C.CATEGORY_NOT_WORD: " -.",
    C.CATEGORY_SPACE: " ", C.CATEGORY_NOT_SPACE: string.ascii_letters + string.digits,
}


def _members(items: list, ignore_case: bool) -> list[str]:
    """The printable characters a parsed bracket expression allows."""
    allowed: set[str] = set()
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            allowed.add(chr(av))
        elif op is C.RANGE:
            allowed.update(chr(c) for c in range(av[0], av[1] + 1) if c < 128)
        elif op is C.CATEGORY:
            allowed.update(_CATEGORY[av])
    if ignore_case:
        allowed |= {c.swapcase() for c in allowed}
    return [c for c in _PRINTABLE if (c in allowed) != negate]


class _Builder:
    """A random string one parsed pattern matches (a few tries are needed for lookarounds and word boundaries)."""

    def __init__(self, rng: random.Random, ignore_case: bool) -> None:
        self.rng = rng
        self.ignore_case = ignore_case
        self.groups: dict[int, str] = {}

    def pick(self, chars: list[str]) -> str:
        """One character of `chars`, a letter or digit when it may be (what a key is made of), else a space."""
        keyish = [c for c in chars if c.isalnum()]
        if keyish:
            return self.rng.choice(keyish)
        return " " if " " in chars else self.rng.choice(chars)

    def build(self, parsed) -> str:
        """A string the parsed (sub)pattern matches."""
        out = []
        for op, av in parsed:
            if op is C.LITERAL:
                out.append(chr(av))
            elif op is C.NOT_LITERAL:
                out.append("x" if chr(av) != "x" else "y")
            elif op is C.ANY:
                out.append(" " if self.rng.random() < 0.2 else self.rng.choice(string.ascii_letters + string.digits))
            elif op is C.IN:
                out.append(self.pick(_members(av, self.ignore_case)))
            elif op is C.CATEGORY:
                out.append(self.pick(list(_CATEGORY[av])))
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
                lo, hi, sub = av
                if lo == 0:
                    n = 0 if self.rng.random() < 0.7 else self.rng.randint(1, min(hi, 3))
                else:
                    hi = min(hi, lo + 40)
                    n = min(hi, max(lo, 24)) if _is_charclass(sub) else lo or 1
                out.append("".join(self.build(sub) for _ in range(n)))
            elif op is C.SUBPATTERN:
                group, _add, _del, sub = av
                ic = self.ignore_case
                self.ignore_case = bool((ic or _add & re.IGNORECASE) and not _del & re.IGNORECASE)
                text = self.build(sub)
                self.ignore_case = ic
                if group:
                    self.groups[group] = text
                out.append(text)
            elif op is C.BRANCH:
                out.append(self.build(self.rng.choice(av[1])))
            elif op is C.GROUPREF:
                out.append(self.groups.get(av, ""))
            elif op in (C.AT, C.ASSERT, C.ASSERT_NOT):
                continue
            elif op is getattr(C, "ATOMIC_GROUP", None):
                out.append(self.build(av))
            else:  # pragma: no cover - a construct the rules do not use
                raise NotImplementedError(op)
        return "".join(out)


def _is_charclass(sub) -> bool:
    """Whether a repeated item is one character class (a key's body), not a group of several things."""
    return len(sub) == 1 and sub[0][0] in (C.IN, C.CATEGORY, C.ANY)


def sample(rules: RuleSet, rule: Rule, seed: int = 0, tries: int = 400) -> tuple[str, str]:
    """(a text holding a secret `rule` finds, the secret): built from the rule's pattern, keyword added if missing."""
    rng = random.Random(f"{rule.id}/{seed}")
    parsed = P.parse(rule.regex.pattern, rule.regex.flags)
    ignore_case = bool(rule.regex.flags & re.IGNORECASE)
    for _ in range(tries):
        text = _Builder(rng, ignore_case).build(parsed).strip("\n")
        if rule.keywords and not any(k in text.lower() for k in rule.keywords):
            text = f"{rng.choice(rule.keywords)} {text}"
        spans = rules.spans(text, [(rule, None)])
        if spans:
            start, end = spans[0]
            return text, text[start:end]
    raise AssertionError(f"no sample found for {rule.id}")


__all__ = ["sample"]

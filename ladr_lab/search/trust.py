"""A prompt-injection heuristic for hit bodies: text that talks to the model instead of informing it.

It looks for instruction-override phrases ("ignore all previous instructions"), role hijacks ("you
are now", "act as the system"), fake chat markup (`<|im_start|>`, `[INST]`, `### System:`), requests
to reveal or exfiltrate ("reveal your system prompt", "send the ... to http"), and invisible
characters. A heuristic, not a guarantee: it flags text for a client to weigh or quarantine.

The phrases are looked for in the sanitized text (sanitizer.py), the one a client gets, so a zero-width
character or a soft hyphen inside "ignore" hides nothing; the invisible characters, in the file's own text
(zero-width joiners and spaces, the right-to-left override and the bidi isolates, as before, and Unicode tag
characters, which write ASCII invisibly), since sanitizing removes them.
"""
from __future__ import annotations

import re

__all__ = ["assess"]

_SIGNALS = [
    re.compile(r"\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|any|your)\b"
               r"[^.\n]{0,20}\b(instructions?|prompts?|rules?|directions?|guidelines?)", re.I),
    re.compile(r"\byou are now\b|\bfrom now on,? you\b|\bact as (the )?(system|developer|admin)", re.I),
    re.compile(r"<\|im_start\|>|<\|system\|>|\[/?INST\]|<<SYS>>|^#{2,}\s*(system|instruction)s?\s*:", re.I | re.M),
    re.compile(r"\b(reveal|print|show|repeat|leak)\b[^.\n]{0,30}\b(system prompt|instructions|api key|password|secret)",
               re.I),
    re.compile(r"\b(send|post|upload|exfiltrate)\b[^.\n]{0,60}\bhttps?://", re.I),
    re.compile(r"\bdo not (tell|inform|mention)\b[^.\n]{0,20}\b(the )?user\b", re.I),
]
_HIDDEN = re.compile("[\u200b\u200c\u200d\u2060\u202e\u2066-\u2069\U000e0000-\U000e007f]")


def assess(text: str, original: str | None = None) -> dict:
    """`{level, score, injectionSuspected, signals}` for a hit body `text` (sanitized; `original`: the file's
    text it was made from, default `text`): level "trusted" or "untrusted", score in [0, 1] (1 = no signal),
    signals = how many kinds of injection pattern were seen."""
    head = text[:100_000]
    signals = sum(1 for pat in _SIGNALS if pat.search(head))
    signals += _HIDDEN.search((text if original is None else original)[:100_000]) is not None
    score = round(max(0.0, 1.0 - 0.4 * signals), 2)
    return {"level": "untrusted" if signals else "trusted", "score": score,
            "injectionSuspected": signals > 0, "signals": signals}

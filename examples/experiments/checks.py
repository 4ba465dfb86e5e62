"""Python assertions for the experiment files beside this one (`python: checks.py:names_a_file`).

A `python:` assertion is called with (output), (output, cell) or (output, cell, trace), by how many positional
parameters it takes, and returns a bool, a 0..1 score, (bool, reason) or {"pass", "score", "reason"}
(docs/experiments.md, "Assertions").
"""
from __future__ import annotations

import re


def names_a_file(output: str) -> tuple[bool, str]:
    """The answer names the handbook file it used (a path ending in .md)."""
    found = re.findall(r"[\w./-]+\.md", output)
    return (bool(found), f"names {found[0]}" if found else "names no .md file")


def brevity(output: str) -> float:
    """A score: 1.0 for an answer of at most 60 words, falling to 0 at 300 words."""
    words = len(output.split())
    return max(0.0, min(1.0, (300 - words) / 240))

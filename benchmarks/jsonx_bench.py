"""JSON extraction benchmark: `extract` on adversarial inputs of 10 KB, 100 KB and 1 MB.

    python benchmarks/jsonx_bench.py [--repeat 3] [--sizes 10000,100000,1000000]

Prints a table (input kind x size -> milliseconds, best of --repeat, and the counted work per
character) and writes benchmarks/results/jsonx.json. Linear time shows as a roughly constant
ms-per-MB across the sizes; tests/test_jsonx.py checks the same inputs with the work counter.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab import jsonx  # noqa: E402


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _soup(alphabet: str, n: int) -> str:
    rnd = random.Random(7)
    return "".join(rnd.choice(alphabet) for _ in range(n))


def _prose_then_json(n: int) -> str:
    tail = '\n```json\n{"request": {"files": ["core.md", "glossary.md"]}}\n```\n'
    return (
        _repeat("The model thinks aloud (about {braces} and [brackets]) for a while. ", n - len(tail)) + tail
    )


KINDS: dict[str, tuple[str, Callable[[int], str]]] = {
    "open_braces": ("'{' * n", lambda n: "{" * n),
    "open_brackets": ("'[' * n", lambda n: "[" * n),
    "object_chain": ("'{\"a\":' repeated", lambda n: _repeat('{"a":', n)),
    "array_chain": ("'[1,' repeated", lambda n: _repeat("[1,", n)),
    "quote_backslash_soup": ("random '\"\\{[ '", lambda n: _soup('"\\{[ ', n)),
    "json_soup": ("random '{}[]\":,1 \\'", lambda n: _soup('{}[]":,1 \\', n)),
    "unclosed_fences": ("'```json\\n{\\n' repeated", lambda n: _repeat("```json\n{\n", n)),
    "fence_pairs": ("'```\\n' repeated", lambda n: _repeat("```\n", n)),
    "mismatched": ("'[1}' repeated", lambda n: _repeat("[1}", n)),
    "string_frames": ("'[\",' repeated", lambda n: _repeat('[",', n)),
    "brace_in_string": ("'{\"' repeated", lambda n: _repeat('{"', n)),
    "deep_failing_blocks": (
        "'['*200 '1 1' ']'*200 rep.",
        lambda n: _repeat("[" * 200 + "1 1" + "]" * 200, n),
    ),
    "nested_early_failures": ("'[1 1 ' rep. + ']'s", lambda n: _repeat("[1 1 ", n - n // 6) + "]" * (n // 6)),
    "deep_balanced": ("'['*n/2 ']'*n/2", lambda n: "[" * (n // 2) + "]" * (n // 2)),
    "unterminated_strings": ("'[\"xxx...' repeated", lambda n: _repeat('["' + "x" * 50, n)),
    "big_integers": (
        "[[..4400 digits..]] rep.",
        lambda n: _repeat("[" * 50 + "1" * 4400 + "]" * 50 + " ", n),
    ),
    "prose_then_fence": ("prose, JSON fence at end", _prose_then_json),
}


def _time(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jsonx.extract(text)
        best = min(best, time.perf_counter() - t0)
    return best * 1000.0


def run(sizes: list[int], repeat: int) -> dict:
    """Time `extract` on every kind at every size and return the figures."""
    rows = []
    for kind, (shape, make) in KINDS.items():
        row = {"kind": kind, "shape": shape, "ms": {}, "work_per_char": {}, "found": None}
        for size in sizes:
            text = make(size)
            row["ms"][str(size)] = round(_time(text, repeat), 2)
            row["work_per_char"][str(size)] = round(jsonx._measure(text).total / len(text), 2)
            row["found"] = jsonx.extract(text).method
        rows.append(row)
    return {"sizes": sizes, "repeat": repeat, "rows": rows}


def _label(size: int) -> str:
    return f"{size // 1_000_000} MB" if size >= 1_000_000 else f"{size // 1000} KB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    figures = run(sizes, a.repeat)
    figures.update(
        python=platform.python_version(),
        platform=platform.platform(),
        cpus=os.cpu_count(),
        when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    head = f"{'input kind':<24}" + "".join(f"{_label(s) + ' ms':>12}" for s in sizes)
    head += f"{'work/char':>11}  found"
    print(head)
    print("-" * len(head))
    for row in figures["rows"]:
        line = f"{row['kind']:<24}" + "".join(f"{row['ms'][str(s)]:>12.1f}" for s in sizes)
        line += f"{max(row['work_per_char'].values()):>11.2f}  {row['found'] or '-'}"
        print(line)
    out = ROOT / "benchmarks" / "results" / "jsonx.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Ladder loading: hostile YAML is refused fast, ordinary ladders load fast.

    python benchmarks/config_bench.py [--repeat 5] [--no-cli]

Prints a table and writes benchmarks/results/config.json. Rows:
- hostile documents (recursive alias, "billion laughs" 9x9, `[` 5,000 deep, mappings 3,000 deep in flow
  and block style): `check_text` in-process (best of --repeat) and `ladr-lab validate` as a process
  (wall time, Python start-up included), with the rule each was refused under;
- every example ladder: `check_text` per ladder, cold (first check of a process: metaschema cache empty)
  and warm (median);
- a ladder of 100 retrieve steps sharing one 30-property requestMatch through an alias (~9,000 nodes
  added), and the same with 100 distinct schemas (no alias).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab.config import check_text  # noqa: E402

LAUGHS = "name: lol\na0: &a0 [lol]\n" + "".join(
    f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10)) + "steps: [{id: s}]\n"
HOSTILE = {
    "recursive alias": "name: x\nsteps: &s [*s]\n",
    "billion laughs 9x9": LAUGHS,
    "[ 5,000 deep": "name: x\nsteps: " + "[" * 5000 + "]" * 5000 + "\n",
    "{a: 3,000 deep": "name: x\nsteps: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
    "block maps 3,000 deep": "name: x\nsteps:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(3000)),
}


def _schema(props: int, salt: str = "") -> str:
    return ("{type: object, required: [request], properties: {request: {type: object, properties: {"
            + ", ".join(f"p{i}{salt}: {{type: string, minLength: 1}}" for i in range(props)) + "}}}}")


def _many_steps(shared: bool, steps: int = 100, props: int = 30) -> str:
    text = "name: many\nslates:\n  - title: K\n    folders: [{name: docs}]\n"
    text += f"description: &S {_schema(props)}\n" if shared else ""
    text += "steps:\n"
    for i in range(steps):
        schema = "*S" if shared else _schema(props, salt=f"s{i}")
        text += f"  - id: s{i}\n    retrieve: {{to: {{slate: K, folder: docs}}, as: D, maxRounds: 2, " \
                f"requestMatch: {schema}}}\n"
    return text


def _time(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _cli_ms(text: str) -> tuple[float, int, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "l.yaml"
        f.write_text(text)
        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONPATH=str(ROOT))
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "ladr_lab", "validate", str(f)], capture_output=True, text=True,
                           timeout=120, env=env)
        ms = (time.perf_counter() - t) * 1000
    return ms, p.returncode, "Traceback" in p.stdout + p.stderr


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-cli", action="store_true", help="skip the `ladr-lab validate` process timings")
    a = ap.parse_args()
    rows = []
    # cold first: the first example ladder checked in this process
    examples = sorted((ROOT / "examples").glob("*.yaml"))
    cold = _time(lambda: check_text(examples[0].read_text()), 1)[0]
    for name, text in HOSTILE.items():
        ms = _time(lambda t=text: check_text(t), a.repeat)
        _, problems = check_text(text)
        row = {"document": name, "bytes": len(text), "check_text_ms": round(min(ms), 2),
               "problems": len(problems), "rule": problems[0].rule if problems else None}
        if not a.no_cli:
            cli_ms, rc, tb = _cli_ms(text)
            row.update(cli_ms=round(cli_ms), exit=rc, traceback=tb)
        rows.append(row)
    warm = []
    for f in examples:
        text = f.read_text()
        ms = _time(lambda t=text: check_text(t), a.repeat)
        warm.append(statistics.median(ms))
    many = {}
    for label, shared in (("100 steps, one aliased schema", True), ("100 steps, 100 distinct schemas", False)):
        text = _many_steps(shared)
        ms = _time(lambda t=text: check_text(t), 1)[0]  # first check: nothing cached for these schemas
        ladder, problems = check_text(text)
        many[label] = {"bytes": len(text), "check_text_ms": round(ms, 1), "ok": ladder is not None}
    if not a.no_cli:
        base_ms, rc, _ = _cli_ms(examples[0].read_text())
        rows.append({"document": f"(ordinary: {examples[0].name})", "bytes": examples[0].stat().st_size,
                     "check_text_ms": round(min(_time(lambda: check_text(examples[0].read_text()), a.repeat)), 2),
                     "problems": 0, "rule": None, "cli_ms": round(base_ms), "exit": rc, "traceback": False})
    print(f"{'document':<24}{'bytes':>10}{'check_text ms':>15}{'validate ms':>13}  rule")
    for r in rows:
        print(f"{r['document']:<24}{r['bytes']:>10,}{r['check_text_ms']:>15.2f}{r.get('cli_ms', '-'):>13}  "
              f"{r['rule'] or 'valid'} ({r['problems']} problems)" + ("  TRACEBACK" if r.get("traceback") else ""))
    print(f"\nexample ladders ({len(examples)}): cold first check {cold:.1f} ms, warm median "
          f"{statistics.median(warm):.2f} ms, max {max(warm):.2f} ms")
    for label, m in many.items():
        print(f"{label:<32} {m['bytes']:>8,} bytes  {m['check_text_ms']:>8.1f} ms  ok={m['ok']}")
    out = {"machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S")},
           "hostile": rows, "examples": {"count": len(examples), "cold_first_ms": round(cold, 1),
                                         "warm_median_ms": round(statistics.median(warm), 2),
                                         "warm_max_ms": round(max(warm), 2)},
           "many_steps": many}
    (ROOT / "benchmarks" / "results").mkdir(exist_ok=True)
    (ROOT / "benchmarks" / "results" / "config.json").write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()

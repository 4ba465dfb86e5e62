"""Label every retrieve-round output of the tuning data sets by what it is — request or answer — with written
rules (checked by eye: `--show RULE` prints the outputs a rule labelled), into `<data set>/labels.csv`.

    python notebooks/recorded/tuning/label.py                # every data set here
    python notebooks/recorded/tuning/label.py --show path-list

A label says what the output *is*, not what the runtime made of it, nor what a schema could make of it: a request
the runtime cannot fetch (a bare list of paths, a file named under the listing's `file` key) is still a request.
The rules, first that applies:

| rule | label | the output |
|---|---|---|
| `names-mode` | request | JSON (any extraction: bare, fenced, in prose) naming a retrieval mode (`files`, `glob`, ...), bare or wrapped in `request` |
| `json-answer` | answer | a JSON object with an `answer` key (pitfall_loose.yaml asks for its answer so) |
| `file-key` | request | JSON whose object (or list of objects) names a handbook path under `file` or `path`: the listing's own shape echoed, pointing at a file to read |
| `path-list` | request | a JSON list of strings that are all paths (`*.md`) |
| `stem-list` | request | a JSON list of bare names, at least half of them a handbook file's name without its folder and `.md` (`["gate-actions", "gate-conditions", ...]`) |
| `other-json` | answer | any other JSON: a quoted summary in a list, a ladder fragment, ... |
| `path-only` | request | no JSON, and every non-empty line is a path (`*.md`) |
| `cut-request` | request | no JSON, but it opens a JSON object (or a list of them) whose first key is a retrieval mode, `request`, `file` or `path`, cut before it closed (`max_tokens`): a `names-mode` or `file-key` output cut short |
| `prose` | answer | no JSON: an answer in prose (good or bad, from a document or from the listing's summaries) |
"""
from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODES = ("files", "subfolders", "metatag", "glob", "similarTo")
PATH = re.compile(r"^\.?/?[\w./-]+\.md$")
STEMS = {p.stem for p in (HERE.parents[2] / "sample_slates" / "knowledge" / "docs").rglob("*.md")}


def _is_path(x) -> bool:
    return isinstance(x, str) and bool(PATH.match(x.strip()))


def rule_of(output: str) -> tuple[str, str]:
    """(rule, label) of one output, by the rules above."""
    from ladr_lab.jsonx import extract
    ext = extract(output)
    if ext.found:
        v = ext.value
        inner = v.get("request") if isinstance(v, dict) and isinstance(v.get("request"), dict) else v
        if isinstance(inner, dict) and any(m in inner for m in MODES):
            return "names-mode", "request"
        if isinstance(v, dict) and "answer" in v:
            return "json-answer", "answer"
        objs = v if isinstance(v, list) else [v]
        if objs and all(isinstance(o, dict) for o in objs) and \
                any(_is_path(o.get("file")) or _is_path(o.get("path")) for o in objs):
            return "file-key", "request"
        if isinstance(v, list) and v and all(_is_path(x) for x in v):
            return "path-list", "request"
        if isinstance(v, list) and v and all(isinstance(x, str) and re.fullmatch(r"[a-z0-9-]+", x) for x in v) \
                and 2 * sum(x in STEMS for x in v) >= len(v):
            return "stem-list", "request"
        return "other-json", "answer"
    if re.match(r'^\s*(```(json)?\s*)?\[?\s*\{\s*"(request|file|path|' + "|".join(MODES) + ')"\s*:', output):
        return "cut-request", "request"
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    if lines and all(_is_path(ln.strip("`'\"-* ")) for ln in lines):
        return "path-only", "request"
    return "prose", "answer"


def label(folder: Path) -> dict[str, int]:
    """Write `folder/labels.csv` (row, step, node, round, iteration, label, rule); the count per rule (and
    `rows`, `outputs`, `request`, `answer`)."""
    from ladr_lab import tune_request_match
    t = tune_request_match(folder, {})
    counts: dict[str, int] = {"rows": len({o.row for o in t.outputs}), "outputs": len(t.outputs)}
    with open(folder / "labels.csv", "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["row", "step", "node", "round", "iteration", "label", "rule"])
        for o in t.outputs:
            rule, lab = rule_of(o.output)
            counts[rule] = counts.get(rule, 0) + 1
            counts[lab] = counts.get(lab, 0) + 1
            out.writerow([o.row, o.step, o.node, o.round, o.iteration, lab, rule])
    return counts


def folders() -> list[Path]:
    """The data set folders here (each holds slim traces)."""
    return sorted(p for p in HERE.iterdir() if p.is_dir() and any(p.glob("*.jsonl")))


if __name__ == "__main__":
    if "--show" in sys.argv:
        want = sys.argv[sys.argv.index("--show") + 1]
        from ladr_lab import tune_request_match
        for f in folders():
            for o in tune_request_match(f, {}).outputs:
                if rule_of(o.output)[0] == want:
                    print(f"{f.name} {o.row} r{o.round}: {' '.join(o.output.split())[:160]}")
    else:
        lines = ["# The data sets (written by label.py)", "",
                 "| data set | questions | outputs | request | answer | by rule |", "|---|---|---|---|---|---|"]
        for f in folders():
            got = label(f)
            print(f"{f.name:24} {got}")
            rules = ", ".join(f"{k} {v}" for k, v in got.items() if k not in ("rows", "outputs", "request", "answer"))
            lines.append(f"| `{f.name}` | {got['rows']} | {got['outputs']} | {got.get('request', 0)} | "
                         f"{got.get('answer', 0)} | {rules} |")
        (HERE / "DATASETS.md").write_text("\n".join(lines) + "\n", encoding="utf-8")

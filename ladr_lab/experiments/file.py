"""The experiment file: an experiment written down as YAML, run with `ladr-lab eval experiment.yaml` (or
`load_experiment_file(path).run()`), read with the ladder's own machinery — `config.reader.load_yaml` (the YAML line
and column of every value, hostile YAML refused), did-you-mean for a misspelt key, and every problem reported at once
as an `ExperimentFileErrors` (a usage error: the command line exits 2).

    description: dedup questions, two ladders
    variants:                                     # NAME: LADDER_FILE, or NAME: {ladder: FILE, knobs: {...}}
      small: ../research_small.yaml
      tight: {ladder: ../pitfall_tight.yaml, knobs: {example: retrieve/dedup.md}}
    inputs: questions.jsonl                       # a .csv / .jsonl file, or a list of rows
    assert:
      - max-calls: 3
      - {fetched: retrieve/dedup.md, weight: 2, metric: retrieval}
    threshold: 0.6
    model: offline
    out: ../../runs/exp1

Every relative path in it (ladders, inputs, slates, out, cache, the filters' folders, outputs, a `python:` assertion's
`file.py`) is relative to the file's folder. Which keys it takes, and what each means, is the key tables below;
the published JSON Schema (`file_schema.py`, `ladr-lab schema --experiment`) is built from the same tables, so the
two cannot disagree. A file is an experiment file, not a ladder, when its top level is a mapping with `variants:` or
`inputs:` and no `steps:` (`is_experiment_file`).

`outputs:` is where files written after the run are named (`OUTPUT_KEYS`: a kind of output → its path): a face that
writes an output adds its key there and reads `ExperimentFile.outputs` (the command line sets each output flag not
given from it).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.reader import Positions, load_yaml
from ..config.rules import suggest, typename
from ..errors import ConfigError, ConfigErrors, LadrError, UsageError
from .assertions import KEYS as ASSERT_KEYS
from .assertions import Assertion, load_asserts

__all__ = ["FILTER_KEYS", "KEY_TABLES", "OTEL_KEYS", "OUTPUT_KEYS", "PHOENIX_KEYS", "TOP_KEYS", "VARIANT_KEYS", "ExperimentFile",
           "ExperimentFileErrors", "is_experiment_file", "load_experiment_file", "load_experiment_text"]

MAX_FILE_BYTES = 16 * 1024 * 1024

# the keys each part takes, each with the one sentence an editor shows on hover (the JSON Schema reads these)
TOP_KEYS = {
    "description": "What this experiment is for, in your own words.",
    "variants": "The variants: {NAME: LADDER_FILE}, {NAME: {ladder: FILE, knobs: {...}}}, or a list of ladder files "
                "(each named by its file stem).",
    "knobSets": "Knob sets {SET: {knob: value}}: each variant runs under each set (named SET for one ladder, "
                "VARIANT-SET for several).",
    "knobs": "Knobs every variant runs with (a variant's own knobs and a knob set's go over them).",
    "inputs": "The input rows: a .csv or .jsonl file, or a list of rows {id, context, NAME..., assert}.",
    "assert": "Assertions checked on every cell: KIND: VALUE, or {type, value, weight, metric, threshold, name, "
              "negate, provider}.",
    "threshold": "A cell passes when the weighted score of its assertions is at least this (0 to 1); without it, "
                 "when none of them failed.",
    "passRate": "The exit code's bar: exit 0 when at least this share of cells passed (0 to 1); without it, "
                "exit 0 only when every cell completed and none failed.",
    "repeat": "Run each cell this many times (runs 2..N ask the model afresh); the summary says how far they agree.",
    "model": "The model: offline, script:PATH, local, or a litellm model such as openai/gpt-4o-mini (default: each "
             "ladder's).",
    "modelOptions": "Options for the model: temperature, seed, max_tokens, constrain, api_base, ...",
    "grader": "The model of model-graded assertions (default: model, when it is a model name).",
    "concurrency": "Cells run at once (default 4, as on the command line).",
    "rateLimit": "Calls per period shared by every worker: 60/min, or {PROVIDER: RATE}.",
    "ray": "Run the cells as Ray tasks: true (a local Ray) or the cluster's ADDRESS.",
    "rejudge": "Variants that differ only in judging: auto (re-judged, live where the recording ends), only, off.",
    "slates": "Slate folders by title: {TITLE: DIR}, instead of the ladders' path:.",
    "shareSlates": "true: cells share the slates the ladders write to (default: a copy per cell).",
    "cache": "The response cache: true (the per-user one), false (none) or a folder.",
    "out": "The output folder (traces, results.jsonl, results.csv, summary.csv).",
    "resume": "false: run every cell again (default: keep the cells an earlier run into out finished).",
    "retryErrors": "false: keep the cells an earlier run ended in an error (default: run them again).",
    "progress": "false: no progress bar.",
    "maxFetchChars": "The most characters of one retrieved entry.",
    "maxRoundChars": "The most characters of one round's retrieved block.",
    "filters": "Run only some cells: {variants, rows, sample, seed, failing, errors}.",
    "outputs": "Files written after the run, by kind: {KIND: PATH}.",
    "otel": "Export each cell's run as OpenTelemetry spans tagged with its results: true, or {content, "
            "document_chars, endpoint, headers, hide_inputs, hide_outputs} (docs/otel.md).",
    "phoenix": "Upload the finished experiment to Arize Phoenix (a dataset and an experiment per variant): true, its "
               "URL, or {url, dataset}.",
}
VARIANT_KEYS = {
    "ladder": "The variant's ladder file.",
    "knobs": "The knobs this variant runs with.",
}
FILTER_KEYS = {
    "variants": "Only these variants: a list of names, or A,B.",
    "rows": "Only the rows whose id matches: a glob (q*, dedup-?), re:REGEX, or a list of them.",
    "sample": "A random sample of this many rows (drawn with seed).",
    "seed": "The sample's seed (default 0).",
    "failing": "Only the cells that failed in this earlier experiment folder.",
    "errors": "Only the cells that ended in an error in this earlier experiment folder.",
}
# the outputs the command line writes after a run, by kind (docs/experiments.md, "Reports for CI and for people")
OUTPUT_KEYS: dict[str, str] = {
    "html": "A standalone HTML page of the results (--html): the summary, the grid, each cell's assertions, output "
            "and trace.",
    "junit": "A JUnit XML report (--junit): a test suite per variant, a test case per cell.",
}
# `otel:` as a mapping: OtelExport's options (`telemetry.OPTIONS`; a test keeps the two the same)
OTEL_KEYS = {
    "content": "false: send no text at all (prompts, outputs, documents), as --otel-no-content.",
    "document_chars": "The most characters of a retrieved document's text on a span (default 4000; 0: none).",
    "endpoint": "The OTLP/HTTP receiver's base URL (default: OTEL_EXPORTER_OTLP_ENDPOINT).",
    "headers": "HTTP headers for the receiver, such as an API key: {NAME: VALUE}.",
    "hide_inputs": "true: hide the inputs (prompts, documents), as OPENINFERENCE_HIDE_INPUTS.",
    "hide_outputs": "true: hide the outputs, as OPENINFERENCE_HIDE_OUTPUTS.",
}
PHOENIX_KEYS = {
    "url": "Phoenix's URL (default http://localhost:6006, or PHOENIX_COLLECTOR_ENDPOINT).",
    "dataset": "The dataset's name (default: the output folder's name).",
}
KEY_TABLES: dict[str, dict[str, str]] = {"experiment": TOP_KEYS, "variant": VARIANT_KEYS, "filters": FILTER_KEYS,
                                         "outputs": OUTPUT_KEYS, "assertion": ASSERT_KEYS, "otel": OTEL_KEYS,
                                         "phoenix": PHOENIX_KEYS}
REJUDGE = ("auto", "only", "off")


class ExperimentFileErrors(ConfigErrors, UsageError):
    """Every problem of an experiment file, each located (file, YAML line and column, did-you-mean): a usage error,
    which the command line answers with exit code 2."""

    def __init__(self, errors: list[ConfigError]) -> None:
        super().__init__(errors)
        self.message = f"{len(self.errors)} problem(s) in experiment file: " + "; ".join(str(e) for e in self.errors)
        Exception.__init__(self, self.message)


@dataclass
class ExperimentFile:
    """An experiment file as read: its path, the `experiment()` keyword arguments it gives (paths made absolute),
    the exit code's pass rate and the outputs it names."""

    path: Path
    kwargs: dict[str, Any] = field(default_factory=dict)
    pass_rate: float | None = None
    outputs: dict[str, Path] = field(default_factory=dict)
    description: str | None = None

    @property
    def folder(self) -> Path:
        """The folder its relative paths are read from."""
        return self.path.parent

    def run(self, **overrides: Any):
        """Run it: `experiment(**kwargs)`, with `overrides` (experiment()'s keyword arguments) over the file's."""
        from .runner import experiment
        kw = {**self.kwargs, **overrides}
        return experiment(kw.pop("ladders"), kw.pop("inputs"), **kw)


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ExperimentFileErrors([ConfigError(f"cannot read experiment file: it is larger than "
                                                    f"{MAX_FILE_BYTES // (1024 * 1024)} MB", file=str(path),
                                                    rule="unreadable-file")])
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ExperimentFileErrors([ConfigError(f"cannot read experiment file: {why}", file=str(path),
                                                rule="unreadable-file")]) from None


def is_experiment_file(path: str | os.PathLike) -> bool:
    """Whether `path` is an experiment file: a .yaml/.yml file whose top level is a mapping with `variants:` or
    `inputs:` and no `steps:` (a ladder has steps). A file that cannot be read or parsed is not one."""
    p = Path(path)
    if p.suffix.lower() not in (".yaml", ".yml") or not p.is_file():
        return False
    try:
        raw, _ = load_yaml(_read(p), str(p))
    except LadrError:
        return False
    return isinstance(raw, dict) and "steps" not in raw and ("variants" in raw or "inputs" in raw)


class _Reader:
    """Reads one experiment file's values into `experiment()`'s arguments, keeping every problem, located."""

    def __init__(self, text: str, file: str | None, folder: Path) -> None:
        self.file, self.folder = file, folder
        self.problems: list[ConfigError] = []
        self.pos = Positions()
        self.raw: Any = None
        try:
            self.raw, self.pos = load_yaml(text, file)
        except ConfigErrors as many:
            self.problems.extend(many.errors)
        except ConfigError as one:
            self.problems.append(one)

    def fail(self, message: str, at: tuple, *, rule: str = "wrong-type", key: bool = False,
             suggestion: str | None = None) -> None:
        err = ConfigError(message, path=at, file=self.file, rule=rule, suggestion=suggestion)
        lc = self.pos.of(at, key=key)
        if lc is not None:
            err.line, err.column = lc
        self.problems.append(err)

    def keys(self, value: dict, table: dict[str, str], at: tuple, label: str) -> None:
        for k in value:
            if k not in table:
                self.fail(f'unknown key "{k}" in {label}', at + (k,), rule="unknown-key", key=True,
                          suggestion=suggest(k, table))

    def path(self, value: Any, at: tuple, what: str, *, must_exist: str | None = None) -> Path | None:
        """A path relative to the file's folder; `must_exist`: "file" or "dir" checks it is there."""
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{what} must be a path (got {typename(value)})", at)
            return None
        p = Path(value.strip()).expanduser()
        p = Path(os.path.normpath(p if p.is_absolute() else self.folder / p))
        if must_exist == "file" and not p.is_file():
            self.fail(f"{what}: no file {p}", at, rule="missing-file")
        elif must_exist == "dir" and not p.is_dir():
            self.fail(f"{what}: no folder {p}", at, rule="missing-file")
        return p

    def number(self, value: Any, at: tuple, what: str, *, lo: float, hi: float | None = None,
               whole: bool = False) -> Any:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= lo \
            and (hi is None or value <= hi) and (not whole or float(value).is_integer())
        if not ok:
            span = f"from {lo:g} to {hi:g}" if hi is not None else f">= {lo:g}"
            self.fail(f"{what} must be a {'whole ' if whole else ''}number {span} (got {value!r})", at,
                      rule="bad-value")
            return None
        return int(value) if whole else float(value)

    def flag(self, value: Any, at: tuple, what: str) -> bool | None:
        if not isinstance(value, bool):
            self.fail(f"{what} must be true or false (got {value!r})", at)
            return None
        return value

    def mapping(self, value: Any, at: tuple, what: str) -> dict | None:
        if not isinstance(value, dict):
            self.fail(f"{what} must be a mapping (got {typename(value)})", at)
            return None
        return value

    def text(self, value: Any, at: tuple, what: str) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.fail(f"{what} must be a non-empty string (got {typename(value)})", at)
            return None
        return value.strip()

    # ---- the parts ---------------------------------------------------------------------------------------
    def ladder(self, value: Any, at: tuple, name: str) -> Any:
        if isinstance(value, dict):
            self.keys(value, VARIANT_KEYS, at, f'variant "{name}"')
            if "ladder" not in value:
                self.fail(f'variant "{name}" needs a ladder: FILE', at, rule="missing-key")
                return None
            lad = self.path(value["ladder"], at + ("ladder",), f'variant "{name}": ladder', must_exist="file")
            knobs = self.mapping(value.get("knobs") or {}, at + ("knobs",), f'variant "{name}": knobs')
            return None if lad is None or knobs is None else {"ladder": str(lad), "knobs": knobs}
        got = self.path(value, at, f'variant "{name}": ladder', must_exist="file")
        return None if got is None else str(got)

    def variants(self, value: Any) -> Any:
        from .variants import NAME_PATTERN
        at = ("variants",)
        if isinstance(value, str):
            got = self.ladder(value, at, Path(value).stem)
            return None if got is None else [got]
        if isinstance(value, list):
            if not value:
                self.fail("variants is empty: give at least one ladder", at, rule="bad-value")
            out = []
            for i, v in enumerate(value):
                if isinstance(v, str):
                    out.append(self.ladder(v, at + (i,), f"{i + 1}"))
                else:
                    self.fail(f"variants[{i}] must be a ladder file (got {typename(v)}); name variants with a "
                              "mapping {NAME: FILE}", at + (i,))
                    out.append(None)
            return None if None in out else out
        if isinstance(value, dict):
            if not value:
                self.fail("variants is empty: give at least one ladder", at, rule="bad-value")
            named = {}
            for name, v in value.items():
                if not NAME_PATTERN.match(str(name)):
                    self.fail(f'variant name "{name}": use 1-64 letters, digits, ".", "_" or "-" (it names a '
                              "folder)", at + (name,), rule="bad-value", key=True)
                named[str(name)] = self.ladder(v, at + (name,), str(name))
            return None if None in named.values() else named
        self.fail(f"variants must be a mapping {{NAME: LADDER_FILE}} or a list of ladder files (got "
                  f"{typename(value)})", at)
        return None

    def knob_sets(self, value: Any) -> dict | None:
        sets = self.mapping(value, ("knobSets",), "knobSets")
        if sets is None:
            return None
        for name, kset in sets.items():
            self.mapping(kset, ("knobSets", name), f'knob set "{name}"')
        return sets

    def asserts(self, value: Any, at: tuple, where: str) -> list[Assertion]:
        items = value if isinstance(value, list) else [value]
        out: list[Assertion] = []
        for i, item in enumerate(items):
            spot = at + (i,) if isinstance(value, list) else at
            if isinstance(item, dict):
                bad = [k for k in item if k not in ASSERT_KEYS and not _kind_word(k)]
                for k in bad:
                    self.fail(f'unknown key "{k}" in an assertion', spot + (k,), rule="unknown-key", key=True,
                              suggestion=suggest(k, [*ASSERT_KEYS, *_kinds()]))
                if bad:
                    continue
            try:
                out.extend(load_asserts(item, base_dir=self.folder))
            except UsageError as exc:
                self.fail(str(exc), spot, rule="bad-assertion")
        return out

    def inputs(self, value: Any) -> Any:
        at = ("inputs",)
        if isinstance(value, str):
            p = self.path(value, at, "inputs", must_exist="file")
            if p is not None and p.suffix.lower() not in (".csv", ".jsonl", ".ndjson"):
                self.fail(f"inputs: {p.name} is not a .csv or .jsonl file", at, rule="bad-value")
            return None if p is None else str(p)
        if isinstance(value, list):
            rows = []
            for i, row in enumerate(value):
                if not isinstance(row, dict):
                    self.fail(f"inputs[{i}] must be a row: a mapping of input fields (got {typename(row)})", at + (i,))
                    continue
                row = {str(k): v for k, v in row.items()}
                if "assert" in row:           # read here, so its problems are located and its paths file-relative
                    row["assert"] = self.asserts(row["assert"], at + (i, "assert"), f"inputs[{i}]")
                rows.append(row)
            if not value:
                self.fail("inputs is empty: give at least one row", at, rule="bad-value")
            return rows
        self.fail(f"inputs must be a .csv or .jsonl file, or a list of rows (got {typename(value)})", at)
        return None

    def rate_limit(self, value: Any) -> Any:
        from ..models.limited import parse_rate
        rates = value if isinstance(value, dict) else {"*": value}
        for provider, rate in rates.items():
            try:
                parse_rate(rate)
            except LadrError as exc:
                self.fail(str(exc), ("rateLimit",) + ((provider,) if isinstance(value, dict) else ()),
                          rule="bad-value")
        return value

    def filters(self, value: Any, names: list[str] | None) -> dict[str, Any]:
        at = ("filters",)
        got = self.mapping(value, at, "filters")
        if got is None:
            return {}
        self.keys(got, FILTER_KEYS, at, "filters")
        out: dict[str, Any] = {}
        if "variants" in got:
            v = got["variants"]
            chosen = [x.strip() for x in v.split(",")] if isinstance(v, str) else v
            if not isinstance(chosen, list) or not all(isinstance(x, str) and x.strip() for x in chosen):
                self.fail("filters.variants must be variant names (a list, or A,B)", at + ("variants",))
            else:
                for i, x in enumerate(chosen):
                    if names is not None and x not in names:
                        self.fail(f'filters.variants: no variant "{x}"; the variants are {", ".join(names)}',
                                  at + ("variants",) + ((i,) if isinstance(v, list) else ()), rule="bad-value",
                                  suggestion=suggest(x, names))
                out["variants"] = chosen
        if "rows" in got:
            from .filters import row_patterns
            try:
                out["rows"] = row_patterns(got["rows"])
            except UsageError as exc:
                self.fail(str(exc), at + ("rows",), rule="bad-value")
        if "sample" in got:
            out["sample"] = self.number(got["sample"], at + ("sample",), "filters.sample", lo=1, whole=True)
        if "seed" in got:
            if isinstance(got["seed"], bool) or not isinstance(got["seed"], int):
                self.fail(f"filters.seed must be a whole number (got {got['seed']!r})", at + ("seed",),
                          rule="bad-value")
            else:
                out["sample_seed"] = got["seed"]
        for key, kw in (("failing", "filter_failing"), ("errors", "filter_errors")):
            if key in got:
                p = self.path(got[key], at + (key,), f"filters.{key}", must_exist="dir")
                if p is not None:
                    out[kw] = str(p)
        return out

    def outputs(self, value: Any) -> dict[str, Path]:
        at = ("outputs",)
        got = self.mapping(value, at, "outputs")
        if got is None:
            return {}
        self.keys(got, OUTPUT_KEYS, at, "outputs")
        found = {k: self.path(v, at + (k,), f"outputs.{k}") for k, v in got.items() if k in OUTPUT_KEYS}
        return {k: p for k, p in found.items() if p is not None}


def _model_path(name: str | None, folder: Path) -> str | None:
    """A model name, a `script:` or `replay:` path in it made relative to the file's folder."""
    if name and name.split(":", 1)[0] in ("script", "replay") and ":" in name:
        kind, rel = name.split(":", 1)
        path = Path(rel.strip()).expanduser()
        return f"{kind}:{os.path.normpath(path if path.is_absolute() else folder / path)}"
    return name


def _kinds() -> list[str]:
    from .assertions import ALIASES
    from .checks import CHECKS
    return [*CHECKS, *ALIASES]


def _kind_word(key: Any) -> bool:
    text = str(key).strip().lower()
    return (text[4:] if text.startswith("not-") else text) in _kinds()


def _read_all(r: _Reader, raw: dict) -> ExperimentFile:
    """Every value of a parsed experiment file, read into an ExperimentFile (its problems kept in `r`)."""
    r.keys(raw, TOP_KEYS, (), "experiment file")
    for need in ("variants", "inputs"):
        if need not in raw:
            r.fail(f"an experiment file needs {need}:", (), rule="missing-key")
    kw: dict[str, Any] = {"concurrency": 4}
    variants = r.variants(raw["variants"]) if "variants" in raw else None
    kw["ladders"] = variants
    names = list(variants) if isinstance(variants, dict) else None
    if "inputs" in raw:
        kw["inputs"] = r.inputs(raw["inputs"])
    if "knobSets" in raw:
        kw["knob_sets"] = r.knob_sets(raw["knobSets"])
        if names is not None and kw["knob_sets"]:
            sets = list(kw["knob_sets"])
            names = sets if len(names) == 1 else [f"{v}-{s}" for v in names for s in sets]
    if "knobs" in raw:
        kw["knobs"] = r.mapping(raw["knobs"], ("knobs",), "knobs")
    if "assert" in raw:
        kw["asserts"] = r.asserts(raw["assert"], ("assert",), "assert")
    if "threshold" in raw:
        kw["threshold"] = r.number(raw["threshold"], ("threshold",), "threshold", lo=0, hi=1)
    if "repeat" in raw:
        kw["repeat"] = r.number(raw["repeat"], ("repeat",), "repeat", lo=1, whole=True)
    for key in ("model", "grader"):
        if key in raw:
            kw[key] = _model_path(r.text(raw[key], (key,), key), r.folder)
    if "modelOptions" in raw:
        kw["model_options"] = r.mapping(raw["modelOptions"], ("modelOptions",), "modelOptions")
    if "concurrency" in raw:
        kw["concurrency"] = r.number(raw["concurrency"], ("concurrency",), "concurrency", lo=1, whole=True)
    if "rateLimit" in raw:
        kw["rate_limit"] = r.rate_limit(raw["rateLimit"])
    if "ray" in raw:
        ray = raw["ray"]
        if ray is True or (isinstance(ray, str) and ray.strip()):
            kw["backend"], kw["ray_address"] = "ray", (ray.strip() if isinstance(ray, str) else None)
        elif ray is not False:
            r.fail(f"ray must be true, false or a cluster ADDRESS (got {ray!r})", ("ray",), rule="bad-value")
    if "rejudge" in raw:
        if raw["rejudge"] not in REJUDGE:
            r.fail(f"rejudge must be one of {', '.join(REJUDGE)} (got {raw['rejudge']!r})", ("rejudge",),
                   rule="bad-value", suggestion=suggest(raw["rejudge"], REJUDGE))
        kw["rejudge"] = raw["rejudge"]
    if "slates" in raw:
        slates = r.mapping(raw["slates"], ("slates",), "slates")
        if slates is not None:
            bound = {str(t): r.path(d, ("slates", t), f'slate "{t}"', must_exist="dir") for t, d in slates.items()}
            kw["slates"] = {t: str(p) for t, p in bound.items() if p is not None}
    for key, kwarg, invert in (("shareSlates", "isolate_slates", True), ("resume", "resume", False),
                               ("retryErrors", "retry_errors", False), ("progress", "progress", False)):
        if key in raw:
            got = r.flag(raw[key], (key,), key)
            if got is not None:
                kw[kwarg] = not got if invert else got
    if "cache" in raw:
        cache = raw["cache"]
        kw["cache"] = cache if isinstance(cache, bool) else str(p) if (p := r.path(cache, ("cache",), "cache")) \
            else None
    if "out" in raw:
        out = r.path(raw["out"], ("out",), "out")
        kw["out"] = str(out) if out is not None else None
    for key, kwarg in (("maxFetchChars", "max_fetch_chars"), ("maxRoundChars", "max_round_chars")):
        if key in raw:
            kw[kwarg] = r.number(raw[key], (key,), key, lo=1, whole=True)
    if "filters" in raw:
        kw.update(r.filters(raw["filters"], names))
    if "otel" in raw:
        otel = raw["otel"]
        if isinstance(otel, dict):
            r.keys(otel, OTEL_KEYS, ("otel",), "otel")
            kw["otel"] = {k: v for k, v in otel.items() if k in OTEL_KEYS}
        elif isinstance(otel, bool):
            kw["otel"] = otel
        else:
            r.fail(f"otel must be true, false or a mapping of options (got {typename(otel)})", ("otel",),
                   rule="bad-value")
    if "phoenix" in raw:
        ph = raw["phoenix"]
        if isinstance(ph, bool) or (isinstance(ph, str) and ph.strip()):
            kw["phoenix"] = ph
        elif isinstance(ph, dict):
            r.keys(ph, PHOENIX_KEYS, ("phoenix",), "phoenix")
            kw["phoenix"] = {k: v for k, v in ph.items() if k in PHOENIX_KEYS}
        else:
            r.fail(f"phoenix must be true, false, a URL or {{url, dataset}} (got {typename(ph)})", ("phoenix",),
                   rule="bad-value")
    pass_rate = r.number(raw["passRate"], ("passRate",), "passRate", lo=0, hi=1) if "passRate" in raw else None
    outputs = r.outputs(raw["outputs"]) if "outputs" in raw else {}
    description = raw.get("description")
    if description is not None and not isinstance(description, str):
        r.fail(f"description must be a string (got {typename(description)})", ("description",))
    return ExperimentFile(Path(r.file or "<experiment>"), kw, pass_rate, outputs,
                          description if isinstance(description, str) else None)


def load_experiment_text(text: str, *, file: str | os.PathLike | None = None,
                         base_dir: str | os.PathLike | None = None) -> ExperimentFile:
    """Read an experiment file's text: the ExperimentFile, or ExperimentFileErrors listing every problem (located)."""
    name = os.fspath(file) if file is not None else None
    folder = Path(base_dir) if base_dir is not None else Path(name).resolve().parent if name else Path.cwd()
    r = _Reader(text, name, folder)
    if not r.problems and not isinstance(r.raw, dict):
        r.fail(f"an experiment file must be a YAML mapping with variants and inputs (got {typename(r.raw)})", (),
               rule="experiment-type")
    spec = _read_all(r, r.raw) if isinstance(r.raw, dict) and not r.problems else None
    if r.problems or spec is None:
        r.problems.sort(key=lambda e: (e.line or 0, e.column or 0))
        raise ExperimentFileErrors(r.problems)
    if file is not None:
        spec.path = Path(name).resolve() if name else spec.path
    return spec


def load_experiment_file(path: str | os.PathLike) -> ExperimentFile:
    """Read an experiment file (relative paths in it are relative to its folder): the ExperimentFile, or
    ExperimentFileErrors listing every problem, each with its YAML line and column."""
    p = Path(path)
    return load_experiment_text(_read(p), file=p, base_dir=p.resolve().parent)

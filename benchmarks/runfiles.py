"""Run-file search benchmark: index build throughput (unmasked and masked), a search after a 1 MB append, rg.

    python benchmarks/runfiles.py                 # a generated 1 GiB run folder under /tmp (default)
    python benchmarks/runfiles.py --size-mb 64    # smaller
    python benchmarks/runfiles.py --size-mb 32 --builds-only   # only the unmasked and the masked builds

It writes one agent's `.history` and `.log` (AgentRecordFormat, episodes, conversations, multi-line messages, rare
identifiers planted; about one message in 20 also carries what real run files hold: a path inside the run folder,
a URL, a git SHA, a UUID, a `key=value`, and about one in 2,000 an invented credential), builds the index with the
first search (everything is read), then builds it again in another file with `Masker.hiding_outside(run)` (the
`--mask` of `ladr-lab search`) and reports the two side by side, measures search latency once indexed next to
ripgrep on the same files and query, appends 1 MB and times the next search (which reads only the append) as a
ratio to the full build. Prints a table and writes benchmarks/results/runfiles.json.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ladr_lab.runfiles import Masker, RunFileRetriever, format_record  # noqa: E402

SYLLABLES = ["ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "da", "qu", "zo", "fe", "gi", "ha", "ju"]
RARE = ["ACME-7781", "ZX-99-LOOKUP", "ORBITAL-4412"]
# rare identifiers, a mid-frequency word (in about 2% of lines), the most frequent word (in most lines), and a
# question whose words are mostly absent (all-words finds nothing, any-word ranks)
QUERIES = ["ACME-7781", "ZX-99-LOOKUP", "dafemi", "dada", "where did ORBITAL-4412 go"]


def vocabulary(rng: random.Random, n: int = 20000) -> list[str]:
    words = set()
    while len(words) < n:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def sentence(rng: random.Random, vocab: list[str], cum: list[float], k: int) -> str:
    return " ".join(rng.choices(vocab, cum_weights=cum, k=k))


def extra(rng: random.Random, run: Path) -> str:
    """A fragment of what real run files hold beside prose: a path inside the run, a URL, a hash, a setting."""
    sha = f"{rng.getrandbits(160):040x}"
    pick = rng.randrange(8)
    if pick == 0:
        return f"wrote {run}/out/step-{rng.randint(1, 99)}.json"
    if pick == 1:
        return f"see https://example.org/docs/{rng.randint(1, 999)}/index.html"
    if pick == 2:
        return f"at commit {sha}"
    if pick == 3:
        return f"request {uuid.UUID(int=rng.getrandbits(128))}"
    if pick == 4:
        return f"max_tokens={rng.randint(16, 4096)} temperature=0.{rng.randint(0, 9)}"
    if pick == 5:
        return f"tokens_in: {rng.randint(1, 9999)}, key point {rng.randint(1, 9)}"
    if pick == 6:
        return f"ran python -m pytest -q tests/test_{rng.randint(1, 50)}.py in ./work"
    if rng.random() < 0.05:  # an invented credential, built from parts
        return "export API" + "_KEY=" + "".join(rng.choices("abcdefghijkmnopqrstuvwxyz0123456789", k=32))
    return f"sha256:{sha[:32]} {rng.randint(0, 10**6)} bytes"


def dense_extra(rng: random.Random, run: Path) -> str:
    """What one record in five holds in the dense variant: a path (inside the run or not), a URL or a setting."""
    pick = rng.randrange(9)
    if pick == 0:
        return f"wrote {run}/out/step-{rng.randint(1, 99)}.json ({rng.randint(1, 9999)} bytes)"
    if pick == 1:
        return f"loaded /usr/lib/python3.11/site-packages/pkg_{rng.randint(1, 99)}/mod.py and ~/.cache/ladr/{rng.randint(1, 9)}"
    if pick == 2:
        return f"GET https://api.example.org/v1/items/{rng.randint(1, 999)}?page={rng.randint(1, 9)}&limit=50 -> 200"
    if pick == 3:
        return f"see https://docs.example.org/guide/{rng.randint(1, 99)}#section-{rng.randint(1, 9)}"
    if pick == 4:
        return f"max_tokens={rng.randint(16, 4096)} temperature=0.{rng.randint(0, 9)} top_p=0.95 timeout=30"
    if pick == 5:
        return json.dumps({"model": "gpt-x", "max_tokens": rng.randint(16, 4096), "retries": 3,
                           "base_url": "https://api.example.org/v1", "api_key_env": "OPENAI_API_KEY"})
    if pick == 6:
        return f"config: cache_dir=./cache workers={rng.randint(1, 8)} log_level=info token_budget={rng.randint(1, 9)}000"
    if pick == 7:
        return f"ran python -m pytest -q tests/test_{rng.randint(1, 50)}.py --basetemp=/tmp/pt-{rng.randint(1, 99)}"
    if rng.random() < 0.05:  # an invented credential, built from parts
        return "export API" + "_KEY=" + "".join(rng.choices("abcdefghijkmnopqrstuvwxyz0123456789", k=32))
    return f"password_policy: min_length={rng.randint(8, 16)}, secret rotation every {rng.randint(30, 90)} days"


def generate(run: Path, size_mb: int, seed: int = 7, dense: bool = False) -> dict:
    """Write Alice.history and Alice.log of about `size_mb` MiB together; return what was planted.

    One message in 20 carries an `extra`; with `dense`, one in five carries a `dense_extra` (a path, URL or
    setting)."""
    rng = random.Random(seed)
    rng_extra = random.Random(seed + 1)  # its own stream: the prose is the same as without the extras
    vocab = vocabulary(rng) + ["velocity", "tariff"]
    weights = list(itertools.accumulate(1.0 / (i + 1) for i in range(len(vocab))))  # Zipf-like frequencies
    target = size_mb << 20
    run.mkdir(parents=True, exist_ok=True)
    written = 0
    episode = 0
    records = 0
    with open(run / "Alice.history", "w", encoding="utf-8") as h, open(run / "Alice.log", "w", encoding="utf-8") as lg:
        sec = 0
        while written < target:
            episode += 1
            buf_h, buf_l = [], []
            ts = f"2026-10-{1 + sec // 86400 % 28:02d} {sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
            marker = f"has started episode {episode}."
            buf_h.append(format_record(ts, "Alice", marker, state="running"))
            buf_l.append(format_record(ts, "Alice", marker, state="running", level="INFO"))
            for _ in range(400):
                sec += 1
                ts = f"2026-10-{1 + sec // 86400 % 28:02d} {sec // 3600 % 24:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}"
                conv = f"run-{episode % 50}/node-{rng.randint(1, 4)}"
                lines = [sentence(rng, vocab, weights, rng.randint(8, 30))
                         for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 5))]
                if rng.random() < 0.0005:
                    lines[0] += " " + rng.choice(RARE) + " bay " + str(rng.randint(1, 9))
                if rng_extra.random() < (0.2 if dense else 0.05):
                    lines[-1] += " " + (dense_extra if dense else extra)(rng_extra, run)
                kind = rng.choice(("was told (round 1): ", "said (round 1): "))
                buf_h.append(format_record(ts, "Alice", kind + "\n".join(lines), state="running", conversation=conv))
                answer = "round 1: answer " + lines[0][:80]
                if dense and rng_extra.random() < 0.2:  # the log's records hold them as often
                    answer += " " + dense_extra(rng_extra, run)
                buf_l.append(format_record(ts, "Alice", answer, state="running", conversation=conv, level="INFO"))
                if rng.random() < 0.3:
                    buf_l.append(format_record(ts, "Alice", "messages: " + json.dumps(lines), state="running",
                                               conversation=conv, level="DEBUG"))
                records += 2
            a, b = "".join(buf_h), "".join(buf_l)
            h.write(a)
            lg.write(b)
            written += len(a.encode()) + len(b.encode())
    return {"bytes": written, "episodes": episode, "records": records}


def append_mb(run: Path, episode: int, seed: int = 11) -> int:
    """Append about 1 MiB of records (a new episode) to Alice.history; return the bytes appended."""
    rng = random.Random(seed)
    vocab = vocabulary(rng, 2000)
    out = [format_record("2026-12-31 23:00:00", "Alice", f"has started episode {episode}.", state="running")]
    size = len(out[0])
    i = 0
    while size < (1 << 20):
        text = format_record("2026-12-31 23:00:01", "Alice", "said (round 1): " + " ".join(rng.choices(vocab, k=20))
                             + (" ACME-7781 appended" if i == 100 else ""), state="running",
                             conversation="fresh/node-1")
        out.append(text)
        size += len(text.encode())
        i += 1
    with open(run / "Alice.history", "a", encoding="utf-8") as fh:
        fh.write("".join(out))
    return size


def p50(values: list[float]) -> float:
    return statistics.median(values)


def time_rg(run: Path, query: str, repeat: int) -> tuple[float, int]:
    cmd = ["rg", "-n", "-i", "-F", "--no-messages", "--", query, str(run / "Alice.history"), str(run / "Alice.log")]
    times, hits = [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t)
        hits = p.stdout.count(b"\n")
    return p50(times), hits


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024, help="size of the generated run folder (default 1024)")
    ap.add_argument("--dir", default="/tmp/ladr-runfiles-bench", help="where to generate it (not in the repo)")
    ap.add_argument("--repeat", type=int, default=9, help="searches per query for the p50")
    ap.add_argument("--keep", action="store_true", help="keep the generated folder (the index is always removed)")
    ap.add_argument("--reuse", action="store_true", help="use the folder a --keep run left instead of generating")
    ap.add_argument("--builds-only", action="store_true", help="only the unmasked and the masked build (no latency)")
    ap.add_argument("--dense-mb", type=int, default=None,
                    help="size of the dense variant (1 record in 5 with a path, URL or setting; default: --size-mb, "
                         "0 to skip)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "runfiles.json"))
    a = ap.parse_args()
    a.dense_mb = a.size_mb if a.dense_mb is None else a.dense_mb
    base = Path(a.dir)
    run = base / "run"
    meta = base / "generated.json"
    if a.reuse and meta.exists():
        gen, gen_s = json.loads(meta.read_text()), 0.0
        (base / "index.sqlite").unlink(missing_ok=True)
    else:
        if base.exists():
            shutil.rmtree(base)
        t = time.perf_counter()
        gen = generate(run, a.size_mb)
        gen_s = time.perf_counter() - t
        meta.write_text(json.dumps(gen))
    how = f"generated in {gen_s:.1f} s" if gen_s else "reused"
    print(f"run folder: {gen['bytes'] / 2**20:.0f} MiB ({gen['records']} records, {gen['episodes']} episodes), {how}",
          flush=True)
    req = {"episode": 0, "conversation": "-", "top_k": 10}  # an episode not in the run: every record is evidence
    results: dict = {"machine": {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version,
                                 "cores": os.cpu_count(), "platform": platform.platform(),
                                 "load_average_at_start": os.getloadavg()[0]},
                     "size_bytes": gen["bytes"], "records": gen["records"], "episodes": gen["episodes"]}
    with RunFileRetriever(run, "Alice", index_path=base / "index.sqlite") as r:
        t, c = time.perf_counter(), time.process_time()
        first = r.search(QUERIES[0], **req)
        build_s, build_cpu = time.perf_counter() - t, time.process_time() - c
        st = first.refresh
        results["build"] = {"seconds": round(build_s, 2), "cpu_seconds": round(build_cpu, 2),
                            "bytes_read": st.bytes_read,
                            "mb_per_s": round(st.bytes_read / 2**20 / build_s, 2), "records": st.records,
                            "pieces": st.pieces, "index_bytes": (base / "index.sqlite").stat().st_size}
        print(f"build: {build_s:.1f} s, {results['build']['mb_per_s']} MiB/s, {st.pieces} pieces", flush=True)
        masked_s, masked_cpu, mst = masked_build(run, base / "index-masked.sqlite", req)
        results["build_masked"] = {"seconds": round(masked_s, 2), "cpu_seconds": round(masked_cpu, 2),
                                   "bytes_read": mst.bytes_read,
                                   "mb_per_s": round(mst.bytes_read / 2**20 / masked_s, 2), "records": mst.records,
                                   "pieces": mst.pieces, "ratio_to_unmasked": round(masked_s / build_s, 3),
                                   "cpu_ratio_to_unmasked": round(masked_cpu / build_cpu, 3)}
        print(f"masked build: {masked_s:.1f} s, {results['build_masked']['mb_per_s']} MiB/s, "
              f"x{masked_s / build_s:.2f} the unmasked build (CPU x{masked_cpu / build_cpu:.2f})", flush=True)
        if a.dense_mb:
            results["dense"] = dense_builds(base, a.dense_mb, req)
        if a.builds_only:
            return finish(a, base, results, build_s, None, None, {}, 0)
        lat = {}
        for q in QUERIES:
            times = []
            for _ in range(a.repeat):
                t = time.perf_counter()
                res = r.search(q, **req)
                times.append(time.perf_counter() - t)
            rg_p50, rg_hits = time_rg(run, q, a.repeat) if shutil.which("rg") else (None, None)
            lat[q] = {"p50_s": round(p50(times), 5), "pieces": len(res.pieces), "rg_p50_s": rg_p50 and round(rg_p50, 4),
                      "rg_lines": rg_hits, "speedup": rg_p50 and round(rg_p50 / p50(times), 1)}
            rg_ms = f"{rg_p50 * 1000:.0f} ms" if rg_p50 else "(no rg)"
            print(f"  {q!r}: {p50(times) * 1000:.2f} ms vs rg {rg_ms}", flush=True)
        results["latency"] = lat
        appended = append_mb(run, gen["episodes"] + 1)
        t = time.perf_counter()
        after = r.search("ACME-7781 appended", **req)
        append_s = time.perf_counter() - t
        results["append"] = {"bytes": appended, "search_seconds": round(append_s, 4),
                             "bytes_read": after.refresh.bytes_read,
                             "ratio_to_build": round(append_s / build_s, 5),
                             "found_appended": any("appended" in p.text for p in after.pieces)}
    return finish(a, base, results, build_s, append_s, after, lat, appended)


def masked_build(run: Path, index_path: Path, req: dict, masked: bool = True) -> tuple[float, float, Any]:
    """Build the index of `run` in `index_path` with the masker `ladr-lab search --mask` uses (or none); return
    its wall and CPU seconds (the masker's rules are compiled inside the timed part) and the refresh stats."""
    t, c = time.perf_counter(), time.process_time()
    with RunFileRetriever(run, "Alice", index_path=index_path,
                          masker=Masker.hiding_outside(run) if masked else None) as r:
        first = r.search(QUERIES[0], **req)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    index_path.unlink(missing_ok=True)
    return seconds, cpu, first.refresh


def dense_builds(base: Path, size_mb: int, req: dict) -> dict:
    """The dense variant (one record in five holds a path, URL or setting): unmasked and masked build, back to back."""
    run = base / "run-dense"
    gen = generate(run, size_mb, dense=True)
    plain_s, plain_cpu, st = masked_build(run, base / "index-dense.sqlite", req, masked=False)
    masked_s, masked_cpu, _ = masked_build(run, base / "index-dense-masked.sqlite", req)
    out = {"size_bytes": gen["bytes"], "records": st.records, "seconds": round(plain_s, 2),
           "cpu_seconds": round(plain_cpu, 2), "masked_seconds": round(masked_s, 2),
           "masked_cpu_seconds": round(masked_cpu, 2), "ratio_to_unmasked": round(masked_s / plain_s, 3),
           "cpu_ratio_to_unmasked": round(masked_cpu / plain_cpu, 3)}
    print(f"dense variant ({gen['bytes'] / 2**20:.0f} MiB, 1 record in 5 with a path, URL or setting): build "
          f"{plain_s:.1f} s, masked {masked_s:.1f} s, x{out['ratio_to_unmasked']:.2f} (CPU "
          f"x{out['cpu_ratio_to_unmasked']:.2f})", flush=True)
    shutil.rmtree(run)
    return out


def finish(a: argparse.Namespace, base: Path, results: dict, build_s: float, append_s: float | None, after,
           lat: dict, appended: int) -> int:
    """Print the table, write the JSON, tidy up."""
    run = base / "run"
    speedups = [v["speedup"] for v in lat.values() if v["speedup"]]
    results["machine"]["load_average_at_end"] = os.getloadavg()[0]
    results["summary"] = {"build_mb_per_s": results["build"]["mb_per_s"],
                          "masked_build_mb_per_s": results["build_masked"]["mb_per_s"],
                          "masked_ratio": results["build_masked"]["ratio_to_unmasked"], "masked_target": 1.5,
                          "masked_cpu_ratio": results["build_masked"]["cpu_ratio_to_unmasked"],
                          "dense_masked_ratio": results.get("dense", {}).get("ratio_to_unmasked"),
                          "dense_masked_cpu_ratio": results.get("dense", {}).get("cpu_ratio_to_unmasked"),
                          "append_ratio": results["append"]["ratio_to_build"] if "append" in results else None,
                          "append_target": 0.01,
                          "p50_speedup_vs_rg_median": speedups and statistics.median(speedups),
                          "speedup_target": 10}
    masked = results["build_masked"]
    print()
    print(f"{'measure':<44} {'value':>14}")
    print(f"{'run folder':<44} {results['size_bytes'] / 2**20:>10.0f} MiB")
    print(f"{'index build (first search)':<44} {build_s:>12.1f} s")
    print(f"{'build throughput':<44} {results['build']['mb_per_s']:>8.1f} MiB/s")
    print(f"{'masked index build (--mask)':<44} {masked['seconds']:>12.1f} s")
    print(f"{'masked build throughput':<44} {masked['mb_per_s']:>8.1f} MiB/s")
    print(f"{'  masked / unmasked build time (<= 1.5)':<44} {masked['ratio_to_unmasked']:>14.3f}")
    print(f"{'  masked / unmasked build CPU (<= 1.5)':<44} {masked['cpu_ratio_to_unmasked']:>14.3f}")
    if "dense" in results:
        dense = results["dense"]
        print(f"{'dense variant (1 record in 5: path/URL/setting)':<44} {dense['size_bytes'] / 2**20:>10.0f} MiB")
        print(f"{'  build, masked build':<44} {dense['seconds']:>6.1f}, {dense['masked_seconds']:.1f} s")
        print(f"{'  masked / unmasked build time (<= 1.5)':<44} {dense['ratio_to_unmasked']:>14.3f}")
        print(f"{'  masked / unmasked build CPU (<= 1.5)':<44} {dense['cpu_ratio_to_unmasked']:>14.3f}")
    print(f"{'index size':<44} {results['build']['index_bytes'] / 2**20:>10.0f} MiB")
    if append_s is not None:
        print(f"{'search after 1 MiB append':<44} {append_s * 1000:>11.1f} ms")
        print(f"{'  as a ratio to the full build (<= 0.01)':<44} {append_s / build_s:>14.5f}")
        print(f"{'  bytes read by that search':<44} {after.refresh.bytes_read:>14}")
    for q, v in lat.items():
        rg_ms = f"{v['rg_p50_s'] * 1000:.0f} ms" if v["rg_p50_s"] else "(no rg)"
        print(f"{'p50 ' + repr(q):<44} {v['p50_s'] * 1000:>9.2f} ms  rg {rg_ms}  x{v['speedup']}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {a.out}")
    (base / "index.sqlite").unlink(missing_ok=True)
    if not a.keep:
        shutil.rmtree(base)
    elif appended:  # the next --reuse run starts from the generated files, without the 1 MiB appended here
        with open(run / "Alice.history", "r+b") as fh:
            fh.truncate(fh.seek(0, os.SEEK_END) - appended)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

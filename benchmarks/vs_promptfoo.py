"""`python benchmarks/experiments.py --vs-promptfoo`: a cold `ladr-lab eval` beside a cold `promptfoo eval` on one
matrix (experiments.py's docstring says what is measured); this module builds both configurations and times them.

The fake server answers `{"answer": ..., "n": K}`, K read from the question ("question K?") plus one for the
second variant (its prompt says "citing"): every third K answers "beta" (the contains check fails), every fifth
gives n as a string (the schema check fails, and the code check, which wants an even integer, too).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROWS = 30
PROMPTS = {"plain": "Answer the Question as JSON.", "cite": "Answer the Question as JSON, citing the file."}
SCHEMA = {"type": "object", "required": ["answer", "n"], "properties": {"n": {"type": "integer"}}}
LADDER = """\
name: {name}
steps:
  - id: answer
    fields:
      - {{ name: Question, type: text, from: input.context }}
    systemPrompt: {prompt}
"""
CHECK_PY = '''\
import json


def even(output):
    """The code check: the answer's n is an even integer."""
    try:
        n = json.loads(output)["n"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(n, int) and not isinstance(n, bool) and n % 2 == 0
'''
CHECK_JS = ("(() => { try { const n = JSON.parse(output).n; return typeof n === 'number' && Number.isInteger(n) "
            "&& n % 2 === 0; } catch (e) { return false; } })()")


def answer_for(body: str) -> str:
    """The fake model's answer to one request body."""
    m = re.search(r"question (\d+)", body)
    k = int(m.group(1)) if m else 0
    if "citing" in body:
        k += 1
    n: object = str(k) if k % 5 == 0 else k
    return json.dumps({"answer": "beta" if k % 3 == 0 else "alpha", "n": n})


def expected(variant: str, row: int) -> bool:
    """Whether the cell passes all three checks (both tools must say this)."""
    k = row + (1 if variant == "cite" else 0)
    return k % 3 != 0 and k % 5 != 0 and k % 2 == 0


class _Handler(BaseHTTPRequestHandler):
    latency = 0.5
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode("utf-8", "replace")
        time.sleep(_Handler.latency)
        text = answer_for(body)
        out = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


def _write_matrix(work: Path) -> None:
    for name, prompt in PROMPTS.items():
        (work / f"{name}.yaml").write_text(LADDER.format(name=name, prompt=json.dumps(prompt)))
    (work / "benchcheck.py").write_text(CHECK_PY)
    with (work / "rows.jsonl").open("w") as f:
        for i in range(ROWS):
            f.write(json.dumps({"id": f"r{i}", "context": f"question {i}?"}) + "\n")


def _promptfoo_config(work: Path, url: str) -> Path:
    import yaml

    cfg = {"description": "ladr_lab bench",
           "prompts": [{"raw": f"{p}\n\nQuestion: {{{{context}}}}", "label": name} for name, p in PROMPTS.items()],
           "providers": [{"id": "openai:chat:fake", "config": {"apiBaseUrl": url, "apiKey": "x"}}],
           "defaultTest": {"assert": [{"type": "contains", "value": "alpha"},
                                      {"type": "is-json", "value": SCHEMA},
                                      {"type": "javascript", "value": CHECK_JS}]},
           "tests": [{"vars": {"id": f"r{i}", "context": f"question {i}?"}} for i in range(ROWS)]}
    path = work / "promptfooconfig.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _run_ladr(work: Path, url: str, package: Path, rep: int) -> tuple[float, dict]:
    out = work / f"ladr-out-{rep}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(work)]),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LADR_LAB_RESPONSE_CACHE": "off"}      # every run calls the server, as promptfoo's --no-cache does
    env.pop("OPENAI_API_KEY", None)
    cmd = [sys.executable, "-m", "ladr_lab", "eval", str(work / "plain.yaml"), str(work / "cite.yaml"),
           "--inputs", str(work / "rows.jsonl"), "--out", str(out), "--model", "openai/fake",
           "-O", f"api_base={url}", "-O", "api_key=x", "--concurrency", "10", "--no-progress", "--json",
           "--assert", "contains: alpha", "--assert", "json-schema: " + json.dumps(SCHEMA),
           "--assert", "python: benchcheck:even"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if not (out / "results.jsonl").is_file():
        raise SystemExit(f"ladr-lab eval failed ({done.returncode}): {done.stderr[-2000:]}")
    cells = {}
    for line in (out / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        cells[(r["variant"], int(r["row"][1:]))] = bool(r.get("passed"))
    return wall, cells


def _promptfoo_env(work: Path) -> dict:
    return {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
            "PROMPTFOO_SELF_HOSTED": "1", "PROMPTFOO_CONFIG_DIR": str(work / "promptfoo-home"),
            "PROMPTFOO_CACHE_ENABLED": "false", "NO_UPDATE_NOTIFIER": "1", "OPENAI_API_KEY": "x",
            "npm_config_update_notifier": "false", "npm_config_offline": "true"}


def _run_promptfoo(cmd: list[str], work: Path, config: Path, rep: int) -> tuple[float, dict]:
    out = work / f"promptfoo-out-{rep}.json"
    t0 = time.perf_counter()
    done = subprocess.run([*cmd, "eval", "-c", str(config), "-j", "10", "--no-cache", "--no-progress-bar",
                           "-o", str(out)], cwd=work, env=_promptfoo_env(work), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if not out.is_file():
        raise SystemExit(f"promptfoo eval failed ({done.returncode}): {done.stderr[-2000:]}")
    data = json.loads(out.read_text())
    results = data.get("results", {}).get("results", [])
    labels = list(PROMPTS)
    cells = {}
    for r in results:
        variant = (r.get("prompt") or {}).get("label") or labels[int(r.get("promptIdx", 0))]
        cells[(variant, int(r["vars"]["id"][1:]))] = bool(r.get("success"))
    return wall, cells


def _promptfoo_version(cmd: list[str], work: Path) -> str | None:
    try:
        done = subprocess.run([*cmd, "--version"], cwd=work, env=_promptfoo_env(work), capture_output=True,
                              text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\d+\.\d+\.\d+", done.stdout)
    return m.group(0) if done.returncode == 0 and m else None


def vs_promptfoo(a) -> None:
    """Run both tools cold `a.reps` times each (interleaved), check they agree, print and write the numbers."""
    root = Path(__file__).resolve().parents[1]
    package = Path(os.environ.get("LADR_BENCH_PACKAGE") or root)
    _Handler.latency = a.latency
    server = _Server(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    work = Path(tempfile.mkdtemp(prefix="ladr-bench-vs-pf-"))
    _write_matrix(work)
    config = _promptfoo_config(work, url)
    cmd = shlex.split(a.promptfoo)
    version = _promptfoo_version(cmd, work)
    want = {(v, i): expected(v, i) for v in PROMPTS for i in range(ROWS)}
    ladr_walls, pf_walls, problems = [], [], []
    for rep in range(a.reps):           # interleaved, so the machine's load hits both alike
        wall, cells = _run_ladr(work, url, package, rep)
        ladr_walls.append(round(wall, 3))
        if cells != want:
            problems.append(f"ladr_lab run {rep}: {sum(cells.get(k) != v for k, v in want.items())} cell(s) differ")
        if version is not None:
            wall, cells = _run_promptfoo(cmd, work, config, rep)
            pf_walls.append(round(wall, 3))
            if cells != want:
                problems.append(f"promptfoo run {rep}: {sum(cells.get(k) != v for k, v in want.items())} "
                                f"cell(s) differ")
    server.shutdown()
    server.server_close()
    ideal = 2 * ROWS * a.latency / 10
    ladr = statistics.median(ladr_walls)
    print(f"2 variants × {ROWS} inputs × 3 assertions, server latency {a.latency} s, concurrency 10 "
          f"(ideal {ideal:.1f} s); {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; ladr_lab from {package}")
    print(f"ladr-lab eval (cold)   median {ladr:6.2f} s   runs {ladr_walls}")
    pf = None
    if version is None:
        print(f"promptfoo: skipped ({a.promptfoo!r} --version failed; npm install -g promptfoo@0.121, or set "
              f"PROMPTFOO_CMD)")
    else:
        pf = statistics.median(pf_walls)
        print(f"promptfoo {version} eval (cold) median {pf:6.2f} s   runs {pf_walls}")
        print(f"ladr_lab / promptfoo: {ladr / pf:.2f}×")
    agree = not problems
    passing = sum(want.values())
    print(f"cells: {len(want)}, {passing} passing; " + ("both agree with the expected verdict on every cell"
                                                         if agree else "; ".join(problems)))
    out = {"rows": ROWS, "variants": 2, "assertions": 3, "latency_s": a.latency, "concurrency": 10,
           "ideal_s": ideal, "reps": a.reps, "ladr_lab_walls_s": ladr_walls, "ladr_lab_median_s": ladr,
           "ladr_lab_package": str(package), "promptfoo_version": version, "promptfoo_walls_s": pf_walls,
           "promptfoo_median_s": pf, "ratio": round(ladr / pf, 3) if pf else None, "agree": agree,
           "problems": problems, "cpus": os.cpu_count(), "load_average": list(os.getloadavg()),
           "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    dest = a.out or root / "benchmarks" / "results" / "experiments-vs-promptfoo.json"
    dest.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {dest}")

"""Streaming (issue 31): how long Stop takes to stop a call, and what watching a call costs the model.

    python benchmarks/streaming.py              # everything (~2 min on 2 cores with the local model installed)
    python benchmarks/streaming.py --quick      # fewer repetitions
    python benchmarks/streaming.py --no-local   # without the local model (no llama.cpp needed)

What it measures, each with the question it answers:

- **stop**: seconds from `TokenStream.cancel()` (what Stop does) to the model's `complete` raising CallCancelled, for
  a fake OpenAI-compatible server on 127.0.0.1 that sends one piece and then nothing (the socket is shut down: does
  Stop wait for the server?), a ScriptedModel pausing 1 s between words (the pause is a wait on the cancel), and the
  0.5B local model while it writes (between two tokens: at most one token's time?);
- **overhead**: the 0.5B model's tokens generated per second (llama.cpp's own counter) unwatched and watched (the
  hook decodes each token and writes it to the stream, with a watcher that keeps every piece), on the same cached
  prompt, interleaved: does watching slow generation?; and the cost of one `wrote` of the terminal's live region and
  of the Stepper's panel (throttled redraws), per piece.

Results go to benchmarks/results/streaming.json (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _stop_after_first_piece(model, messages, reps: int) -> list[float]:
    """Seconds from cancel() to complete() raising, the cancel made from another thread once one piece came."""
    from ladr_lab import CallCancelled
    from ladr_lab.models import CallInfo, TokenStream

    out = []
    for _ in range(reps):
        stream = TokenStream(CallInfo(step="s"))
        stamp: dict[str, float] = {}

        def stopper(s=stream, st=stamp):
            while s.pieces < 1:
                time.sleep(0.001)
            st["cancel"] = time.perf_counter()
            s.cancel()
        t = threading.Thread(target=stopper)
        t.start()
        try:
            model.complete(messages, call=CallInfo(step="s", stream=stream))
            raise AssertionError("the call was not stopped")
        except CallCancelled:
            out.append(time.perf_counter() - stamp["cancel"])
        t.join()
    return out


def stop_fake_server(reps: int) -> list[float]:
    from ladr_lab.models import get_model
    from tests.helpers_openai import MSGS, Fake, serve

    with serve() as base:
        Fake.stall.set()
        model = get_model("openai/m", options={"api_base": base, "api_key": "x", "timeout": 60, "max_retries": 0})
        return _stop_after_first_piece(model, MSGS, reps)


def stop_scripted(reps: int) -> list[float]:
    from ladr_lab.models import ScriptedModel

    model = ScriptedModel(lambda messages, call: "one two three four", stream_delay=1.0)
    return _stop_after_first_piece(model, [], reps)


def _local_model():
    from ladr_lab.models import get_model

    model = get_model("local", options={"max_tokens": 64})
    model.check()
    return model


MSGS_LOCAL = [{"role": "system", "content": "You are a careful technical writer."},
              {"role": "user", "content": "Explain in a long paragraph why a retrieval loop should never fetch the "
                                          "same file twice."}]


def stop_local(reps: int) -> dict:
    model = _local_model()
    times = _stop_after_first_piece(model, MSGS_LOCAL, reps)
    return {"seconds": times, "one_token_s": 1.0 / max(1e-9, _gen_tps(model, watched=False))}


class _Keep:
    def __init__(self) -> None:
        self.pieces: list[str] = []

    def started(self, stream) -> None:
        pass

    def wrote(self, stream, text) -> None:
        self.pieces.append(text)

    def ended(self, stream) -> None:
        pass


def _gen_tps(model, *, watched: bool) -> float:
    from ladr_lab.models import CallInfo, TokenStream

    stream = TokenStream(CallInfo(step="s"), [_Keep()]) if watched else None
    comp = model.complete(MSGS_LOCAL, call=CallInfo(step="s", stream=stream))
    return float(comp.gen_tps or 0.0)


def overhead_local(reps: int) -> dict:
    model = _local_model()
    _gen_tps(model, watched=False)          # the prompt cached: every timed call reads (almost) nothing
    plain, watched = [], []
    for _ in range(reps):
        plain.append(_gen_tps(model, watched=False))
        watched.append(_gen_tps(model, watched=True))
    return {"unwatched_tps": plain, "watched_tps": watched}


def overhead_watchers(pieces: int) -> dict:
    """Microseconds per `wrote` of the terminal region (to /dev/null) and of the Stepper's panel (no kernel)."""
    from ladr_lab.cli.live import LiveCalls
    from ladr_lab.models import CallInfo, TokenStream

    out: dict = {}
    with open(os.devnull, "w") as null:
        live = LiveCalls(null, columns=100, lines=40)
        s = TokenStream(CallInfo(step="s"), model="m")
        live.started(s)
        t0 = time.perf_counter()
        for i in range(pieces):
            s.write(f" word{i}")
            live.wrote(s, f" word{i}")
        out["terminal_us_per_piece"] = (time.perf_counter() - t0) / pieces * 1e6
        live.ended(s)
        live.close()
    try:
        from ladr_lab.widgets.live import LivePanel
    except ImportError:  # pragma: no cover - ipywidgets is a dependency
        return out
    panel = LivePanel()
    s = TokenStream(CallInfo(step="s"), model="m")
    panel.started(s)
    t0 = time.perf_counter()
    for i in range(pieces):
        s.write(f" word{i}")
        panel.wrote(s, f" word{i}")
    out["panel_us_per_piece"] = (time.perf_counter() - t0) / pieces * 1e6
    panel.ended(s)
    return out


def _ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.1f} ms (max {max(xs) * 1000:.1f})"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument("--no-local", action="store_true", help="leave the local model out")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "streaming.json"))
    a = p.parse_args(argv)
    reps = 3 if a.quick else 10
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    out: dict = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                             "time": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit.strip()}}
    out["stop_fake_server_s"] = stop_fake_server(reps)
    out["stop_scripted_s"] = stop_scripted(reps)
    local = not a.no_local
    if local:
        import importlib.util
        local = importlib.util.find_spec("llama_cpp") is not None
    if local:
        out["stop_local"] = stop_local(max(2, reps // 2))
        out["overhead_local"] = overhead_local(max(2, reps // 2))
    out["watchers"] = overhead_watchers(2000 if a.quick else 20000)
    rows = [("Stop, fake server waiting (socket shut down)", _ms(out["stop_fake_server_s"])),
            ("Stop, ScriptedModel pausing 1 s", _ms(out["stop_scripted_s"]))]
    if local:
        sl = out["stop_local"]
        rows.append(("Stop, 0.5B local model writing", f"{_ms(sl['seconds'])}; one token takes "
                                                         f"{sl['one_token_s'] * 1000:.0f} ms"))
        ol = out["overhead_local"]
        rows.append(("0.5B generated tok/s, unwatched / watched",
                     f"{statistics.median(ol['unwatched_tps']):.1f} / {statistics.median(ol['watched_tps']):.1f}"))
    w = out["watchers"]
    rows.append(("terminal region, per piece", f"{w['terminal_us_per_piece']:.1f} µs"))
    if "panel_us_per_piece" in w:
        rows.append(("Stepper panel, per piece", f"{w['panel_us_per_piece']:.1f} µs"))
    width = max(len(r[0]) for r in rows)
    print(f"{'measure':<{width}}  result")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"\nwritten: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

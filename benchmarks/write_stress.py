"""Write stress: N concurrent writers × M mergeByKey writes to one file, plus a separate process that is
killed with SIGKILL mid-write. Afterwards the file must parse and hold every acknowledged item.

    python benchmarks/write_stress.py [--nodes 16] [--writes 200] [--kill-after 100]

Prints a table and writes benchmarks/results/write_stress.json. The test suite runs the same function
(`stress`) at full size in tests/engine/test_write_stress.py.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ladr_lab.config.model import Target  # noqa: E402
from ladr_lab.engine.writes import write_value  # noqa: E402
from ladr_lab.slate import FolderSpec, SlateStore  # noqa: E402

CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from ladr_lab.config.model import Target
    from ladr_lab.engine.writes import write_value
    from ladr_lab.slate import FolderSpec, SlateStore
    store = SlateStore()
    store.bind("Registry", {slate!r}, [FolderSpec(name="entities")])
    target = Target("Registry", "entities", "index.md")
    i = 0
    while True:
        out = write_value(store, target, [{{"id": f"proc-{{i}}", "n": i}}], "mergeByKey", "id", None)
        assert out.status == "written", out.reason
        print(f"proc-{{i}}", flush=True)   # acknowledged only after the write returned
        i += 1
""")


def stress(slate_dir: Path, nodes: int = 16, writes: int = 200, kill_after: int = 100) -> dict:
    """Run the stress and return its figures; raises AssertionError when anything acknowledged is lost."""
    store = SlateStore()
    store.bind("Registry", slate_dir, [FolderSpec(name="entities")])
    target = Target("Registry", "entities", "index.md")
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), slate=str(slate_dir))],
                             stdout=subprocess.PIPE, text=True)
    acked_proc: list[str] = []
    acked_threads: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(writes):
                item = {"id": f"n{n}-{i}", "node": n, "i": i}
                out = write_value(store, target, [item], "mergeByKey", "id", None)
                if out.status != "written":
                    raise AssertionError(out.reason)
                with lock:
                    acked_threads.append(item["id"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(nodes)]
    for t in threads:
        t.start()
    # kill the other process in the middle of its writing, while the threads are writing too
    for line in child.stdout:
        acked_proc.append(line.strip())
        if len(acked_proc) >= kill_after:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    text = (slate_dir / "entities" / "index.md").read_text()
    data = json.loads(text)  # parses: no torn file
    ids = {d["id"] for d in data}
    lost_threads = sorted(set(acked_threads) - ids)
    lost_proc = sorted(set(acked_proc) - ids)
    visible = sorted(p.name for p in (slate_dir / "entities").iterdir() if not p.name.startswith("."))
    figures = {
        "nodes": nodes, "writes_per_node": writes, "thread_writes_acknowledged": len(acked_threads),
        "process_writes_acknowledged": len(acked_proc), "items_in_file": len(data),
        "lost_thread_items": len(lost_threads), "lost_process_items": len(lost_proc),
        "process_killed_with": "SIGKILL", "child_returncode": child.returncode,
        "visible_files_after": visible, "seconds": round(elapsed, 3),
        "writes_per_second": round((len(acked_threads) + len(acked_proc)) / elapsed, 1),
        "file_bytes": len(text.encode()),
    }
    assert not lost_threads and not lost_proc, figures
    assert visible == ["index.md"], figures
    return figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--writes", type=int, default=200)
    ap.add_argument("--kill-after", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ladr-stress-") as tmp:
        fig = stress(Path(tmp), a.nodes, a.writes, a.kill_after)
    fig.update(python=platform.python_version(), platform=platform.platform(), cpus=os.cpu_count(),
               when=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    print(f"{'figure':<30} value")
    for k, v in fig.items():
        print(f"{k:<30} {v}")
    out = ROOT / "benchmarks" / "results" / "write_stress.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fig, indent=2) + "\n")
    print(f"PASS: every acknowledged item is in the file ({fig['items_in_file']} items); saved {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""HTTP server under floods: the uvicorn-based `HttpServer` side by side with the old hand-made one, and the MCP face.

    python benchmarks/server_http.py [--idle 1025] [--pings 300] [--clients 4] [--per-client 250] [--servers new,old,mcp]

Each server runs in its own child process (descriptor limit 1,024, as in issue 18) over a five-document
slate; this process (its own limit raised) is the client. Per server:
- ping latency on one keep-alive connection (median and p99 of --pings calls, milliseconds);
- requests/s: --clients threads, each --per-client pings on its own keep-alive connection;
- with --idle idle TCP connections open (nothing sent): a new client's ping latency (5 s timeout, the
  issue's 1,025 idle connections exhaust the old server's descriptors), and the child's threads and
  open descriptors (/proc/PID) at rest, under the flood, and 2 s after the flood closes.
The old server is `git show REF:ladr_lab/server/http.py` for --old-ref (default: the last commit whose
http.py was the http.server one), loaded as `ladr_lab.server._old_http`.
The new JSON-RPC server and the MCP one (`McpHttpServer` at /mcp, its default limits; issue 29) also meet
--half-heads connections that each sent half a request head, and --mcp-idle idle connections (the issue's 300):
a new client's latency under each flood, and how many of the flood the server had closed --closed-after seconds
later. For the MCP face a "ping" is a fresh client's `initialize` (a new connection, as a new client's first
request), keep-alive latency is a `ping` inside one session, and --initializes `initialize` calls (the issue's
3,000) measure the growth of the child's resident memory (VmRSS) they leave behind.
Writes benchmarks/results/server_http.json.
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
JSON = {"Content-Type": "application/json"}
OLD_REF = "267a1b4"   # main before the server moved to uvicorn


def _slate(root: Path) -> Path:
    folder = root / "Papers" / "papers"
    folder.mkdir(parents=True)
    for name, text in {"a.md": "# A\n\ntransformer attention", "b.md": "# B\n\nresidual networks",
                       "c.md": "# C\n\nrecurrent memory", "d.md": "# D\n\nmasked language model",
                       "e.md": "# E\n\nconvolution depth"}.items():
        (folder / name).write_text(text, encoding="utf-8")
    return root / "Papers"


def child(kind: str, slate: str, old_ref: str) -> None:
    """Serve with the `kind` server ('new' or 'old') until killed; print the port."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    from ladr_lab.search import EmbeddedEngine
    from ladr_lab.server import Dispatcher
    from ladr_lab.slate import SlateStore

    store = SlateStore()
    store.bind("Papers", slate)
    dispatcher = Dispatcher(EmbeddedEngine.from_store(store, dense=False, chunks=False))
    if kind == "mcp":
        from ladr_lab.server import McpHttpServer, SlateResources, build_mcp_server

        engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
        mcp = McpHttpServer(build_mcp_server(engine, SlateResources(store)), "127.0.0.1", 0)
        print(mcp.address[1], flush=True)
        mcp.serve_forever()
        return
    if kind == "new":
        from ladr_lab.server import HttpServer
    else:
        source = subprocess.run(["git", "show", f"{old_ref}:ladr_lab/server/http.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
        path = Path(tempfile.mkdtemp()) / "_old_http.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("ladr_lab.server._old_http", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        HttpServer = module.HttpServer   # noqa: N806
    server = HttpServer(dispatcher)
    print(server.address[1], flush=True)
    server.serve_forever()


def _ping(port: int, conn: http.client.HTTPConnection | None = None, timeout: float = 5.0) -> float:
    t0 = time.perf_counter()
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/", body=PING, headers=JSON)
        resp = conn.getresponse()
        resp.read()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
    finally:
        if own:
            conn.close()
    return (time.perf_counter() - t0) * 1000


def _proc(pid: int) -> dict:
    return {"threads": len(os.listdir(f"/proc/{pid}/task")), "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))
    return round(kib / 1024, 1)


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "0"}}}).encode()


def _initialize(port: int, timeout: float = 5.0) -> tuple[float, str]:
    """A fresh client's `initialize` on a new connection: (milliseconds, the session id)."""
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", "/mcp", body=INITIALIZE, headers=MCP_HEADERS)
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200 or b"serverInfo" not in body:
            raise RuntimeError(f"HTTP {resp.status}")
        session = resp.getheader("mcp-session-id") or ""
    finally:
        conn.close()
    return (time.perf_counter() - t0) * 1000, session


def _mcp_ping(port: int, conn: http.client.HTTPConnection, session: str) -> float:
    t0 = time.perf_counter()
    conn.request("POST", "/mcp", body=PING, headers={**MCP_HEADERS, "mcp-session-id": session})
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or b'"result"' not in body:
        raise RuntimeError(f"HTTP {resp.status}")
    return (time.perf_counter() - t0) * 1000


def _probe(kind: str, port: int) -> float:
    return _initialize(port)[0] if kind == "mcp" else _ping(port)


def _closed(sock: socket.socket) -> bool:
    """Whether the server has closed this connection (after an answer or none), without waiting."""
    sock.setblocking(False)
    try:
        while chunk := sock.recv(4096):
            del chunk
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def _under(kind: str, port: int, pid: int, a: argparse.Namespace, n: int, data: bytes) -> dict:
    """Open `n` connections that each sent `data` (nothing, or half a head); probe a new client; count closures."""
    flood = []
    for _ in range(n):
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if data:
                sock.sendall(data)
            flood.append(sock)
        except OSError:
            break
    time.sleep(1.0)
    out: dict = {"opened": len(flood), "server": _proc(pid)}
    answered: list = []
    for _ in range(10):
        try:
            answered.append(_probe(kind, port))
        except (OSError, RuntimeError, http.client.HTTPException) as exc:
            answered.append(f"failed: {type(exc).__name__}: {exc}"[:80])
    ok = [x for x in answered if isinstance(x, float)]
    out["new_client"] = {"answered": len(ok), "of": len(answered),
                         "median_ms": round(statistics.median(ok), 3) if ok else None,
                         "failures": sorted({x for x in answered if isinstance(x, str)})}
    time.sleep(max(0.0, a.closed_after - 1.0))
    out[f"closed_by_server_after_{a.closed_after:g}s"] = sum(_closed(sock) for sock in flood)
    for sock in flood:
        sock.close()
    time.sleep(1.0)
    return out


def measure_mcp(port: int, pid: int, a: argparse.Namespace) -> dict:
    """The MCP face: initialize and ping latency, the issue's floods, and the memory many sessions leave."""
    _initialize(port)
    new = sorted(_initialize(port)[0] for _ in range(50))
    session = _initialize(port)[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    lat = sorted(_mcp_ping(port, conn, session) for _ in range(a.pings))
    conn.close()
    out: dict = {"initialize_new_connection_median_ms": round(statistics.median(new), 3),
                 "ping_keepalive_median_ms": round(statistics.median(lat), 3),
                 "ping_keepalive_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 3), "rest": _proc(pid)}
    return out


def measure_floods(kind: str, port: int, pid: int, a: argparse.Namespace) -> dict:
    """The issue 29 floods: idle connections, then half-sent request heads."""
    path = "/mcp" if kind == "mcp" else "/"
    half = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl".encode()
    return {f"idle_{a.mcp_idle}": _under(kind, port, pid, a, a.mcp_idle, b""),
            f"half_heads_{a.half_heads}": _under(kind, port, pid, a, a.half_heads, half)}


def measure_sessions(port: int, pid: int, a: argparse.Namespace) -> dict:
    """Resident memory before and after --initializes `initialize` calls (each a new session, never deleted)."""
    time.sleep(2.0)   # the floods' last connections go
    before = _rss_mib(pid)
    failed = 0
    t0 = time.perf_counter()
    for _ in range(a.initializes):
        try:
            _initialize(port)
        except (OSError, RuntimeError, http.client.HTTPException):
            failed += 1
    took = time.perf_counter() - t0
    time.sleep(1.0)
    after = _rss_mib(pid)
    return {"initializes": a.initializes, "failed": failed, "per_s": round(a.initializes / took, 1),
            "rss_before_mib": before, "rss_after_mib": after, "rss_growth_mib": round(after - before, 1)}


def measure(kind: str, slate: Path, a: argparse.Namespace) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, "--slate", str(slate), "--old-ref", a.old_ref],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        port = int(proc.stdout.readline())
        if kind == "mcp":
            out = measure_mcp(port, proc.pid, a)
            out["floods"] = measure_floods(kind, port, proc.pid, a)
            out["sessions"] = measure_sessions(port, proc.pid, a)
            return out
        _ping(port)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        lat = sorted(_ping(port, conn) for _ in range(a.pings))
        conn.close()
        out: dict = {"ping_keepalive_median_ms": round(statistics.median(lat), 3),
                     "ping_keepalive_p99_ms": round(lat[int(0.99 * (len(lat) - 1))], 3)}

        def client() -> None:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            for _ in range(a.per_client):
                _ping(port, c)
            c.close()

        threads = [threading.Thread(target=client) for _ in range(a.clients)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["requests_per_s"] = round(a.clients * a.per_client / (time.perf_counter() - t0), 1)
        new_conn = sorted(_ping(port) for _ in range(50))
        out["ping_new_connection_median_ms"] = round(statistics.median(new_conn), 3)
        out["rest"] = _proc(proc.pid)

        flood = []
        for _ in range(a.idle):
            try:
                flood.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(1.0)
        out["idle_opened"] = len(flood)
        out["under_flood"] = _proc(proc.pid)
        answered = []
        for _ in range(10):
            try:
                answered.append(_ping(port, timeout=5))
            except (OSError, RuntimeError, http.client.HTTPException) as exc:
                answered.append(f"failed: {type(exc).__name__}")
        ok = [x for x in answered if isinstance(x, float)]
        out["ping_under_flood"] = {"answered": len(ok), "of": len(answered),
                                   "median_ms": round(statistics.median(ok), 3) if ok else None,
                                   "failures": sorted({x for x in answered if isinstance(x, str)})}
        for s in flood:
            s.close()
        time.sleep(2.0)
        out["after_flood"] = _proc(proc.pid)
        if kind == "new":
            out["floods"] = measure_floods(kind, port, proc.pid, a)
        return out
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--idle", type=int, default=1025)
    p.add_argument("--pings", type=int, default=300)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--per-client", type=int, default=250)
    p.add_argument("--old-ref", default=OLD_REF)
    p.add_argument("--mcp-idle", type=int, default=300, help="idle connections in the issue 29 flood (300)")
    p.add_argument("--half-heads", type=int, default=2100, help="half-sent heads in the issue 29 flood (2,100)")
    p.add_argument("--closed-after", type=float, default=12.0, help="seconds after a flood to count closures (12)")
    p.add_argument("--initializes", type=int, default=3000, help="MCP initialize calls for the memory test")
    p.add_argument("--servers", default="new,old,mcp")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "server_http.json"))
    p.add_argument("--child")
    p.add_argument("--slate")
    a = p.parse_args()
    if a.child:
        child(a.child, a.slate, a.old_ref)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * max(a.idle, a.half_heads) + 256)), hard))
    with tempfile.TemporaryDirectory() as tmp:
        slate = _slate(Path(tmp))
        results = {kind: measure(kind, slate, a) for kind in a.servers.split(",")}
    import uvicorn

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    doc = {"machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                       "uvicorn": uvicorn.__version__, "commit": commit.strip(), "when": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                                       time.gmtime())},
           "args": {k: v for k, v in vars(a).items() if k not in ("child", "slate", "out")}, "results": results}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

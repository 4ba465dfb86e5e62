"""JupyterLab in headless Chromium for the browser tests: a server on 127.0.0.1 that always stops, a notebook copied
in without its outputs, and the page helpers the tests share.

Adapted from the shared widget-browser-test recipe: Debian's `/usr/bin/chromium` driven by Playwright (never
`playwright install`, which downloads a browser), all Jupyter state in a temporary folder, a fixed token, news and
update checks off, and the server and its kernels stopped by PID whatever happens.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "REPO", "TOKEN", "LabServer", "chromium", "cleared_copy", "missing",
           "notebook_in_lab", "run_all_cells", "screenshots_dir"]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
TOKEN = "ladr-browser-test"


def missing() -> str | None:
    """Why the browser tests cannot run here (what to install), or None when they can."""
    needs = []
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        needs.append(f"Chromium at {CHROMIUM} (apt-get install chromium fonts-liberation)")
    for module, what in [("playwright", "playwright (pip)"), ("jupyterlab", 'jupyterlab (pip install -e ".[lab]")'),
                         ("jupyterlab_widgets", 'the widget front end jupyterlab_widgets (pip install -e ".[lab]")'),
                         ("ipykernel", "ipykernel")]:
        if importlib.util.find_spec(module) is None:
            needs.append(what)
    return "browser test needs " + "; ".join(needs) if needs else None


def cleared_copy(notebook: Path, root: Path) -> Path:
    """Copy `notebook` into `root/notebooks/` without outputs or saved widget state (stale outputs cannot fake a
    pass), with the repository's examples and sample slates linked beside it, as in a checkout, and the recorded
    runs notebook 07 replays (`notebooks/recorded/`) linked into the copy's folder."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb["metadata"].pop("widgets", None)
    # without a kernelspec JupyterLab blocks on a modal "Select Kernel" dialog
    nb["metadata"]["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (root / "notebooks").mkdir(parents=True, exist_ok=True)
    for name in ("examples", "sample_slates"):
        (root / name).symlink_to(REPO / name, target_is_directory=True)
    recorded = notebook.parent / "recorded"
    if recorded.is_dir() and not (root / "notebooks" / "recorded").exists():
        (root / "notebooks" / "recorded").symlink_to(recorded, target_is_directory=True)
    out = root / "notebooks" / notebook.name
    out.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as fh:   # a zombie counts as dead
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError, PermissionError):
        return False


def _stop(pid: int, grace: float = 10.0) -> None:
    if not _alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class LabServer:
    """`jupyter lab` on 127.0.0.1 (free port, fixed token) serving `root`; a context manager that stops the
    server and every kernel it started, by PID, on the way out."""

    def __init__(self, root: Path, work: Path, *, timeout: float = 60.0) -> None:
        self.root, self.work, self.timeout = root, work, timeout
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = work / "server.log"
        self.kernels: set[int] = set()
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> LabServer:
        settings = self.work / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        # the news toast only goes away with this user setting (news_url=None alone does not hide it)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.work / "cfg"),
                   JUPYTER_RUNTIME_DIR=str(self.work / "runtime"), IPYTHONDIR=str(self.work / "ipython"),
                   JUPYTER_PLATFORM_DIRS="1", LITELLM_LOCAL_MODEL_COST_MAP="True")
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
               f"--port={self.port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
               f"--ServerApp.root_dir={self.root}", "--LabApp.expose_app_in_browser=True",
               "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly",
               f"--LabApp.workspaces_dir={self.work / 'workspaces'}",
               f"--LabApp.user_settings_dir={self.work / 'settings'}"]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in __exit__
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited early (rc={self._proc.returncode}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={TOKEN}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"jupyter lab did not answer in {self.timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(0.25)

    def note_kernels(self) -> None:
        """Remember the server's children now (the kernels), so they are stopped even if the server is not."""
        if self._proc is not None:
            self.kernels.update(_children(self._proc.pid))

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server's log."""
        try:
            return "".join(self.log_path.read_text(errors="replace").splitlines(True)[-lines:])
        except OSError:
            return ""

    def __exit__(self, *exc) -> None:
        if self._proc is None:
            return
        self.note_kernels()
        _stop(self._proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        for pid in sorted(self.kernels):   # normally shut down by the server already
            _stop(pid, grace=3)
        self._log.close()
        self._proc = None

    def notebook_url(self, rel: str) -> str:
        """The JupyterLab address that opens `rel` (relative to the root) in a fresh workspace."""
        return f"{self.url}/lab/tree/{rel}?reset&token={TOKEN}"


def run_all_cells(page, timeout_ms: float) -> None:
    """Wait for an idle, connected kernel, then run every cell; fail if a cell raised."""
    page.wait_for_function("window.jupyterapp !== undefined", timeout=timeout_ms)
    page.wait_for_function("""() => {
        const w = window.jupyterapp.shell.currentWidget;
        const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
        return k && k.status === 'idle' && k.connectionStatus === 'connected';
    }""", polling=250, timeout=timeout_ms)
    # the command's promise resolves when execution has ended, false when a cell raised
    ok = page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    if ok is not True:
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        detail = errors.first.inner_text()[:1500] if errors.count() else "(no error output shown)"
        raise AssertionError(f"run-all-cells returned {ok!r}: a cell raised\n{detail}")


@contextlib.contextmanager
def chromium(viewport: tuple[int, int] = (1280, 900)) -> Iterator:
    """A Playwright page in Debian's headless Chromium (a fresh profile), closed on the way out."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            yield page
        finally:
            browser.close()


_EMPTIED: set[Path] = set()


def screenshots_dir() -> Path:
    """Where screenshots go: $LADR_SCREENSHOTS or tests/browser/screenshots (git-ignored), emptied of old PNGs the
    first time a session asks (each notebook's test module asks, and keeps the others' screenshots)."""
    out = Path(os.environ.get("LADR_SCREENSHOTS") or Path(__file__).parent / "screenshots")
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() not in _EMPTIED:
        for old in out.glob("*.png"):
            old.unlink()
        _EMPTIED.add(out.resolve())
    return out


@contextlib.contextmanager
def notebook_in_lab(notebook: Path, work: Path, shots: Path, timings: dict[str, float],
                    timeout_ms: float = 60_000) -> Iterator:
    """A cleared copy of `notebook` open in JupyterLab in headless Chromium with every cell run: yields the page.
    `timings` gets "server up" and "cells run" (seconds); on a failure the page is saved as `NN_FAILED.png` and
    the page errors and the server log's tail are printed."""
    from playwright.sync_api import expect

    root = work / "root"
    root.mkdir()
    cleared_copy(notebook, root)
    t0 = time.monotonic()
    with LabServer(root, work) as server, chromium() as page:
        timings["server up"] = time.monotonic() - t0
        page.set_default_timeout(timeout_ms)
        expect.set_options(timeout=timeout_ms)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(server.notebook_url(f"notebooks/{notebook.name}"), wait_until="domcontentloaded")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
            page.evaluate("() => window.jupyterapp && window.jupyterapp.shell.collapseLeft()")   # room for the widgets
            run_all_cells(page, timeout_ms)
            server.note_kernels()
            timings["cells run"] = time.monotonic() - t0
            yield page
        except BaseException:
            page.screenshot(path=str(shots / f"{notebook.name[:2]}_FAILED.png"))
            print("page errors:", errors[:10], "\nserver log:\n", server.log_tail())
            raise


def require_or_skip():
    """The module mark of a browser test: skip, saying what to install, when a piece is missing; but when
    LADR_REQUIRE_BROWSER_TEST is set (.ci/run sets it once chromium is installed) a missing piece is a failure."""
    import pytest

    absent = missing()
    if absent and os.environ.get("LADR_REQUIRE_BROWSER_TEST"):
        raise RuntimeError(f"LADR_REQUIRE_BROWSER_TEST is set but the {absent}")
    return pytest.mark.skipif(absent is not None, reason=str(absent))


@contextlib.contextmanager
def lab_page(notebook: Path, work: Path, timeout_ms: float = 60_000) -> Iterator:
    """`notebook_in_lab` with the screenshot folder and the timings it fills: yields (page, screenshot folder,
    timings) and prints the timings at the end."""
    shots = screenshots_dir()
    timings: dict[str, float] = {}
    try:
        with notebook_in_lab(notebook, work, shots, timings, timeout_ms) as page:
            yield page, shots, timings
    finally:
        print("browser test timings (s):", {k: round(v, 1) for k, v in timings.items()})

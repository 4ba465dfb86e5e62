"""`ladr-lab install local`: llama.cpp's runtime built with the portable flags, the build's progress read from pip's
verbose output, pip's wheel cache said, a failure named (issue 31, item 1). No network and no compiler: pip is a
script that plays recorded output back."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.errors import ModelError
from ladr_lab.models.local.installer import (
    PORTABLE_CMAKE_ARGS,
    BuildLog,
    Installer,
    extra_requirements,
    install_env,
)

ROOT = Path(__file__).resolve().parents[3]
BUILD = (Path(__file__).parent / "data" / "pip_build_llama_cpp.txt").read_text()
CACHED = (Path(__file__).parent / "data" / "pip_cached_llama_cpp.txt").read_text()


def _state(text: str):
    log = BuildLog()
    for line in text.splitlines(keepends=True):
        log.feed(line)
    return log.state


def test_the_recorded_source_build_is_read_as_compiled_steps_then_a_cached_wheel():
    s = _state(BUILD)
    assert (s.step, s.total) == (193, 193) and s.built and not s.from_cache and s.phase == "done"
    assert s.stored_in and "/wheels/" in s.stored_in                  # where pip keeps it for the next venv
    assert s.installed and "llama-cpp-python-0.3.36" in s.installed


def test_the_recorded_install_from_pips_cache_compiles_nothing():
    s = _state(CACHED)
    assert s.from_cache and not s.built and s.total == 0 and s.phase == "done"


@given(st.integers(min_value=1, max_value=400).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.integers(min_value=1, max_value=n), min_size=1, max_size=50))))
def test_the_step_count_only_grows_and_never_passes_the_total(case):
    total, steps = case
    log = BuildLog()
    log.feed("  Building wheel for llama-cpp-python (pyproject.toml): started\n")
    seen = []
    for n in steps:
        log.feed(f"  [{n}/{total}] /usr/bin/g++ -O3 -c x.cpp\n")
        seen.append(log.state.step)
    assert seen == sorted(seen) and seen[-1] == max(steps) <= log.state.total == total


def test_step_lines_before_the_runtimes_build_are_not_its_steps():
    log = BuildLog()
    assert log.feed("  [3/10] something another package built\n") is None and log.state.total == 0


def test_the_portable_flags_are_the_default_and_a_users_own_are_kept():
    env, own = install_env({"PATH": "/usr/bin"})
    assert env["CMAKE_ARGS"] == PORTABLE_CMAKE_ARGS and not own
    assert "-DGGML_NATIVE=OFF" in PORTABLE_CMAKE_ARGS and "-DGGML_AVX512=OFF" in PORTABLE_CMAKE_ARGS
    assert int(env["CMAKE_BUILD_PARALLEL_LEVEL"]) >= 1
    env, own = install_env({"CMAKE_ARGS": "-DGGML_NATIVE=ON", "CMAKE_BUILD_PARALLEL_LEVEL": "7"})
    assert own and env["CMAKE_ARGS"] == "-DGGML_NATIVE=ON" and env["CMAKE_BUILD_PARALLEL_LEVEL"] == "7"


def test_the_installer_installs_exactly_the_extras_pins_from_pyproject():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extra_requirements("local") == declared["local"]
    large = extra_requirements("local-large")
    assert large[: len(declared["local"])] == declared["local"]
    assert set(large) == set(declared["local"]) | {r for r in declared["local-large"] if not r.startswith("ladr_lab")}
    with pytest.raises(ModelError, match="no such local extra"):
        extra_requirements("lcoal")


def test_ci_installs_the_local_extra_through_the_installer():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "ladr_lab install local" in ci
    assert "CMAKE_ARGS=" not in ci          # one set of flags: the installer's


def _fake_pip(tmp_path: Path, text: str, code: int = 0) -> list[str]:
    out = tmp_path / "out.txt"
    out.write_text(text)
    script = tmp_path / "pip.py"
    script.write_text(f"import sys\nsys.stdout.write(open({str(out)!r}).read())\nsys.exit({code})\n")
    return [sys.executable, str(script)]


def test_a_build_shows_its_progress_a_line_a_tenth_and_says_the_wheel_is_cached(tmp_path):
    out = io.StringIO()
    inst = Installer("local", out=out, log=tmp_path / "install.log", pip=_fake_pip(tmp_path, BUILD), environ={})
    report = inst.install()
    said = out.getvalue()
    steps = re.findall(r"compiling llama\.cpp: (\d+)/193 steps", said)
    assert steps and steps[-1] == "193" and len(steps) <= 12, said
    assert [int(s) for s in steps] == sorted(int(s) for s in steps)
    assert "portable CPU flags" in said and "pip keeps the wheel in its cache" in said
    assert report.compiled and not report.from_cache
    log = (tmp_path / "install.log").read_text()
    assert log.startswith(f"# CMAKE_ARGS={PORTABLE_CMAKE_ARGS}") and "[193/193]" in log


def test_an_install_from_pips_cache_says_so(tmp_path):
    out = io.StringIO()
    report = Installer("local", out=out, log=tmp_path / "i.log", pip=_fake_pip(tmp_path, CACHED), environ={}).install()
    assert report.from_cache and not report.compiled
    assert "from pip's cache (nothing to compile)" in out.getvalue() and "compiling llama.cpp:" not in out.getvalue()


def test_a_failed_build_names_its_last_lines_the_log_and_a_missing_compiler(tmp_path):
    text = ("Building wheels for collected packages: llama-cpp-python\n"
            "  Building wheel for llama-cpp-python (pyproject.toml): started\n"
            "  CMake Error at CMakeLists.txt:3 (project):\n    No CMAKE_CXX_COMPILER could be found.\n"
            "  error: subprocess-exited-with-error\n")
    inst = Installer("local", out=io.StringIO(), log=tmp_path / "i.log", pip=_fake_pip(tmp_path, text, 1), environ={})
    with pytest.raises(ModelError) as err:
        inst.install()
    msg = str(err.value)
    assert "pip exited with 1" in msg and "No CMAKE_CXX_COMPILER" in msg and str(tmp_path / "i.log") in msg
    assert "build-essential" in msg


def test_rebuild_drops_the_cached_wheel_first():
    cmds = Installer("local", rebuild=True, out=io.StringIO(), environ={}).commands()
    assert cmds[0][-3:] == ["cache", "remove", "llama_cpp_python"]
    assert "--force-reinstall" in cmds[1] and cmds[1][-1].startswith("llama-cpp-python==")


def test_the_command_line_dry_run_prints_the_flags_and_pip_commands():
    done = subprocess.run([sys.executable, "-m", "ladr_lab", "install", "local", "--dry-run"], capture_output=True,
                          text=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "-DGGML_NATIVE=OFF" in done.stdout and "pip install -v llama-cpp-python==" in done.stdout

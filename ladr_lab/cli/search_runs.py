"""`ladr-lab search RUN_DIR QUERY --owner NAME`: seed 004's search of an agent's run files from the command line."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import textwrap

from ..errors import LadrError

__all__ = ["add_parser", "cmd_search"]


def _episode(value: str) -> int:
    from ..runfiles import parse_episode

    try:
        episode = parse_episode(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if episode is None:
        raise argparse.ArgumentTypeError(f"not an episode: {value!r}")
    return episode


def _top_k(value: str) -> int:
    try:
        k = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--top-k takes a whole number (got {value!r})") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"--top-k must be >= 1 (got {k})")
    return k


def cmd_search(a) -> int:
    """Search one agent's run files; print the pieces (or, with --json, one JSON array); WARNs go to stderr."""
    from ..runfiles import (
        LadrInterpreter,
        Masker,
        RunFileRetriever,
        cached_index_path,
        prune_cache,
        resolve_owner,
    )

    # the WARNs are printed below; keep logging's last-resort handler from printing them twice
    logging.getLogger("ladr_lab.runfiles").addHandler(logging.NullHandler())
    interpreter = LadrInterpreter()
    masker = Masker.hiding_outside(a.run_dir) if a.mask else None
    index = a.index
    cached = False
    try:
        try:
            if index is None and not a.no_cache and os.path.isdir(a.run_dir):
                index = cached_index_path(a.run_dir, resolve_owner(a.run_dir, a.owner), interpreter=interpreter,
                                          masker=masker, in_run_dir=a.index_in_run_dir)
                cached = not a.index_in_run_dir
            retriever = RunFileRetriever(a.run_dir, a.owner, interpreter=interpreter, masker=masker,
                                         index_path=index)
        except (OSError, LadrError) as exc:
            if a.index is not None or a.no_cache or not os.path.isdir(a.run_dir):
                raise
            # a cache that cannot be used (a read-only home, a damaged file) does not stop the search
            print(f"WARN the index cache cannot be used ({exc}): searching with a temporary index",
                  file=sys.stderr)
            index, cached = None, False
            retriever = RunFileRetriever(a.run_dir, a.owner, interpreter=interpreter, masker=masker)
    except (OSError, LadrError) as exc:
        print(f"ladr-lab: {exc}", file=sys.stderr)
        return 1
    with retriever:
        result = retriever.search(a.query, episode=a.episode, conversation=a.conversation, scope=a.scope,
                                  top_k=a.top_k)
    for w in result.warnings:
        print(f"WARN {w}", file=sys.stderr)
    pruned = None
    if cached:
        try:   # keep the cache folder bounded: stale and least recently used indexes go (docs/runfiles.md)
            pruned = prune_cache(index)
        except ValueError as exc:
            print(f"WARN the index cache was not pruned: {exc}", file=sys.stderr)
    st = result.refresh
    if a.stats and st is not None:
        print(f"index {index or '(temporary)'}: {st.files} files, {st.bytes_read} bytes read, {st.records} records "
              f"and {st.pieces} pieces added" + (f", read again: {', '.join(st.reread)}" if st.reread else ""),
              file=sys.stderr)
    if a.stats and pruned is not None and pruned.removed:
        print(f"cache: removed {len(pruned.removed)} unused index file(s), {pruned.freed} bytes", file=sys.stderr)
    if a.json:
        print(json.dumps(result.to_dicts(), ensure_ascii=False))
        return 0
    if not result.pieces:
        print("(no evidence)")
    for p in result.pieces:
        where = f"{p.file}:{p.line}" + (f" (line {p.piece_line})" if p.piece_line != p.line else "")
        tags = [p.kind] + ([f"episode {p.episode}"] if p.episode is not None else []) + \
            ([p.conversation] if p.conversation not in (None, "-") else []) + ([p.timestamp] if p.timestamp else [])
        print(f"{where}  [{', '.join(tags)}]")
        print(textwrap.indent(p.text, "    "))
    return 0


def add_parser(sub) -> None:
    """Register `search`."""
    s = sub.add_parser("search", help="search an agent's run files (seed 004)")
    s.add_argument("run_dir", metavar="RUN_DIR")
    s.add_argument("query", metavar="QUERY")
    s.add_argument("--owner", required=True, metavar="NAME", help="the agent whose files are searched")
    s.add_argument("--episode", type=_episode, metavar="N", help="the current episode (N or episode-N)")
    s.add_argument("--conversation", metavar="ID", help="the request's conversation id")
    s.add_argument("--scope", choices=("run", "episode"), default="run", help="every episode (run) or the current one")
    s.add_argument("--top-k", type=_top_k, default=5, metavar="K", help="at most K pieces (default 5)")
    s.add_argument("--mask", action="store_true", help="hide local paths outside RUN_DIR and credentials")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--index", metavar="FILE", help="keep the index in FILE, so the next search reads only what "
                       "was appended (default: the per-user cache, see docs/runfiles.md)")
    where.add_argument("--index-in-run-dir", action="store_true",
                       help="keep the index in RUN_DIR/.ladr_lab/ rather than the per-user cache")
    where.add_argument("--no-cache", action="store_true", help="build a temporary index, kept nowhere")
    s.add_argument("--stats", action="store_true", help="print which index was used and what its refresh read "
                   "(to standard error)")
    s.add_argument("--json", action="store_true", help="print one JSON array of pieces")
    s.set_defaults(fn=cmd_search)

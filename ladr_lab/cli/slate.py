"""`ladr-lab slate show | set`: a slate's files and their metatags, and metatags set without writing Python.

`slate set LADDER SLATE/FOLDER/FILE NAME=VALUE... [--unset NAME]...` sets metatags through the slate's own atomic,
serialized writes (`Folder.set_metatag(..., checked=True)`): the ladder says each metatag's type, a name it does
not declare is refused with `did you mean`, and a value is read for its type (`string[]`: `a, b` or a JSON array;
`number`; `boolean`: true/false; `object`: JSON). `slate show LADDER SLATE/FOLDER[/FILE]` prints them. `--slate
TITLE=DIR` binds a slate elsewhere, as `run` does. Without a ladder, `--dir DIR` takes DIR as the slate and the
target as FOLDER/FILE, with no declarations: any name, and values read as JSON when they are JSON.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import LadrError, SlateError
from ._common import USAGE_ERROR, _kv

__all__ = ["add_parser", "cmd_slate_set", "cmd_slate_show"]


def _positionals(a) -> None:
    """With `--dir` there is no LADDER: argparse filled LADDER with the target and the target with the first value."""
    if a.dir is None or a.ladder is None:
        return
    if getattr(a, "values", None) is None:            # show: LADDER TARGET given with --dir
        _usage("give either a LADDER (and SLATE/FOLDER/FILE) or --dir DIR (and FOLDER/FILE), not both")
    if "=" not in a.target:                            # two paths before the values: both a ladder and --dir
        _usage("give either a LADDER (and SLATE/FOLDER/FILE) or --dir DIR (and FOLDER/FILE), not both")
    a.values = [a.target, *a.values]
    a.ladder, a.target = None, a.ladder


def _open(a):
    """(folder, file or "", where): the folder the target names, bound from the ladder (or `--dir`)."""
    from ..slate import SlateStore
    _positionals(a)
    store = SlateStore()
    if a.dir is not None:
        root = Path(a.dir)
        if not root.is_dir():
            raise LadrError(f"--dir {a.dir}: not a directory")
        folder_name, _, rel = a.target.strip("/").partition("/")
        store.bind(root.name or "slate", root)
        return store.slate(root.name or "slate").folder(folder_name), rel, f"{root}/{folder_name}"
    if a.ladder is None:
        _usage("give the LADDER that declares the slate, or --dir DIR for a folder no ladder declares")
    from ..config import load_ladder
    from ..engine.binding import bind_slates
    ladder = load_ladder(a.ladder)
    title, _, rest = a.target.strip("/").partition("/")
    decl = next((d for d in ladder.slates if d.title == title), None)
    if decl is None:
        import difflib
        titles = [d.title for d in ladder.slates]
        near = difflib.get_close_matches(title, titles, n=1)
        raise LadrError(f'{a.ladder} declares no slate "{title}"'
                        + (f' (did you mean "{near[0]}"?)' if near else "") + f"; its slates: {', '.join(titles)}"
                        + "; the target is SLATE/FOLDER/FILE")
    names = sorted((f.name for f in decl.folders), key=len, reverse=True)   # the longest declared folder first
    folder_name = next((n for n in names if rest == n or rest.startswith(n + "/")), None)
    if folder_name is None:
        raise LadrError(f'slate "{title}" declares no folder that "{rest}" is in; its folders: '
                        f"{', '.join(f.name for f in decl.folders)}")
    for note in bind_slates(ladder, store, _kv(a.slate, "--slate")):
        print(f"ladr-lab: warning: {note}", file=sys.stderr)
    rel = rest[len(folder_name):].strip("/")
    return store.slate(title).folder(folder_name), rel, f"{title}/{folder_name}"


def _usage(message: str) -> None:
    print(f"ladr-lab slate: {message}", file=sys.stderr)
    raise SystemExit(USAGE_ERROR)


def cmd_slate_set(a) -> int:
    """Set (or unset) metatags of one file; prints what each became. Exit 1 when one cannot be set."""
    from ..slate import parse_metatag_text
    folder, rel, where = _open(a)
    if not a.values and not a.unset:
        _usage("slate set needs NAME=VALUE (or --unset NAME) after the file")
    if not rel:
        _usage(f"slate set names a file: {a.target}/FILE")
    changes: list[tuple[str, object]] = []
    for item in a.values:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            _usage(f"slate set takes NAME=VALUE (got {item!r})")
        name = name.strip()
        try:
            type_ = folder.check_metatag(rel, name, None)
            changes.append((name, parse_metatag_text(text, type_)))
        except SlateError as exc:
            raise LadrError(f"{where}/{rel}: {name}: {exc}") from None
    changes += [(name, None) for name in a.unset]
    for name, value in changes:
        try:
            folder.set_metatag(rel, name, value, checked=True)
        except SlateError as exc:
            raise LadrError(f"{where}/{rel}: {exc}") from None
    now = folder.metatags().get(rel, {})
    if a.json:
        print(json.dumps({"file": f"{where}/{rel}", "metatags": now}, ensure_ascii=False))
    else:
        for name, value in changes:
            shown = "(removed)" if value is None else json.dumps(now.get(name), ensure_ascii=False)
            print(f"{where}/{rel}: {name} = {shown}")
    return 0


def cmd_slate_show(a) -> int:
    """Print a folder's files with their metatags (or one file's), as JSON with --json."""
    folder, rel, where = _open(a)
    tags = folder.metatags()
    declared = folder.spec.effective_schema(rel) if rel else dict(folder.spec.metatags)
    if rel:
        if not folder.exists(rel):
            raise LadrError(f'no file "{rel}" in {where}')
        files = [rel]
    else:
        files = folder.files()
    if a.json:
        print(json.dumps({"folder": where, "declared": declared,
                          "files": {f: tags.get(f, {}) for f in files}}, ensure_ascii=False))
        return 0
    if declared:
        print(f"{where} declares: " + ", ".join(f"{k}: {v}" for k, v in declared.items()))
    for f in files:
        got = tags.get(f, {})
        print(f"{f}" + ("" if got else "  (no metatags)"))
        for name, value in got.items():
            print(f"  {name}: {json.dumps(value, ensure_ascii=False)}")
    return 0


def add_parser(sub) -> None:
    """Register `slate` and its subcommands."""
    s = sub.add_parser("slate", help="a slate's files and metatags: show them, set them (typed, atomic)")
    ssub = s.add_subparsers(dest="slate_cmd", required=True)
    for name, fn, help_ in (("show", cmd_slate_show, "print a folder's files (or one file) with their metatags"),
                            ("set", cmd_slate_set, "set metatags of a file: NAME=VALUE, typed by the ladder")):
        p = ssub.add_parser(name, help=help_)
        p.add_argument("ladder", nargs="?", metavar="LADDER", help="the ladder that declares the slate")
        p.add_argument("target", metavar="SLATE/FOLDER[/FILE]",
                       help="e.g. Knowledge/docs/retrieve/dedup.md (with --dir: FOLDER/FILE)")
        if name == "set":
            p.add_argument("values", nargs="*", metavar="NAME=VALUE",
                           help='e.g. summary="How dedup works" tags=dedup,rounds confidence=0.8')
            p.add_argument("--unset", action="append", default=[], metavar="NAME", help="remove this metatag")
        p.add_argument("--slate", action="append", default=[], metavar="TITLE=DIR",
                       help="bind a declared slate to DIR (default: its path: in the ladder)")
        p.add_argument("--dir", metavar="DIR", help="no ladder: DIR is the slate, the target FOLDER/FILE, "
                                                    "nothing declared (values read as JSON when they are)")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(fn=fn)

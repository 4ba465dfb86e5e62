"""The document's shape: the keys each construct takes, the top level, the budget and the slate declarations."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError, short_repr, short_text
from ..slate import METATAG_TYPES, SYSTEM_METATAGS, FolderSpec
from .model import SlateDecl
from .rules import Site, children, problem, rule, suggest, typename, whole, yaml_word

TOP_KEYS = ("name", "description", "model", "knobs", "executionBudget", "slates", "steps", "embedder")
STEP_KEYS = ("id", "type", "nodes", "fields", "systemPrompt", "retrieve", "if", "slateWrite", "steps", "call",
             "model", "description")
FIELD_KEYS = ("name", "type", "from", "value", "knob", "description")
RETRIEVE_KEYS = ("to", "as", "maxRounds", "requestMatch")
SLATEWRITE_KEYS = ("to", "field", "on", "key", "match")
GATE_KEYS = ("equals", "jsonMatches", "then", "else")
ACTION_KEYS = ("jump", "write")
WRITE_KEYS = ("to", "from", "on", "key")
TARGET_KEYS = ("slate", "folder", "file", "metatag")
SLATE_KEYS = ("title", "path", "folders", "description")
FOLDER_KEYS = ("name", "metatags", "files", "description")
FILE_KEYS = ("name", "metatags", "description")
BUDGET_KEYS = ("maxLlmCalls", "maxSteps")
CALL_KEYS = ("ladder", "input", "maxDepth")
STEP_REF_KEYS = ("stepId", "nodeRef", "node")
SLATE_REF_KEYS = ("slate", "folder", "file", "metatag", "depth")


def _source_keys(site: Site) -> tuple[tuple, str] | None:
    if not isinstance(site.raw, dict):
        return None
    if "stepId" in site.raw:
        return STEP_REF_KEYS, f"{site.what} from:"
    if "slate" in site.raw:
        return SLATE_REF_KEYS, f"{site.what} from:"
    return None


# construct kind -> (allowed keys, how the unknown-key message names the construct)
_KEYS = {
    "ladder": lambda s: (TOP_KEYS, "ladder"),
    "budget": lambda s: (BUDGET_KEYS, "executionBudget"),
    "slate": lambda s: (SLATE_KEYS, "slate"),
    "folder": lambda s: (FOLDER_KEYS, f'folder "{s.raw["name"]}"'),
    "file": lambda s: (FILE_KEYS, f'file "{s.raw["name"]}"'),
    "step": lambda s: (STEP_KEYS, "step"),
    "field": lambda s: (FIELD_KEYS, f'field "{s.field}"'),
    "slate-read": lambda s: (SLATE_REF_KEYS, s.what),
    "source": _source_keys,
    "retrieve": lambda s: (RETRIEVE_KEYS, "retrieve"),
    "retrieve-to": lambda s: (("slate", "folder"), "retrieve.to"),
    "slateWrite": lambda s: (SLATEWRITE_KEYS, "slateWrite"),
    "target": lambda s: (TARGET_KEYS, f"{s.what}.to"),
    "if": lambda s: (GATE_KEYS, "if"),
    "action": lambda s: (ACTION_KEYS, f"if.{s.branch}"),
    "write": lambda s: (WRITE_KEYS, s.what),
    "call": lambda s: (CALL_KEYS, "call"),
}


def _unknown_keys(site: Site) -> Iterator[ConfigError]:
    shape = _KEYS[site.kind](site) if isinstance(site.raw, dict) else None
    if shape is None:
        return
    allowed, label = shape
    for k in site.raw:
        if k not in allowed:
            yield problem(f'unknown key "{k}" in {label}', at=(k,), suggestion=suggest(k, allowed))


for _kind in _KEYS:
    rule(_kind, "unknown-key")(_unknown_keys)


def unsafe_name(name: Any) -> bool:
    """True when a declared file name could leave its folder or is hidden (such names are never written)."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return True
    return any(part in ("", ".", "..") or part.startswith(".") for part in name.split("/"))


def _named(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str) and bool(item["name"].strip())


def file_entries(raw: Any) -> list[tuple[Any, Any]]:
    """A folder's `files:` as (key in the document, entry) pairs; an entry is `{name, metatags?}`.

    The list form is `[{name, metatags?}, "name.md", ...]`; the mapping form `{name.md: {tag: type}}`
    (as `FolderSpec.from_config` reads it) is taken too.
    """
    if isinstance(raw, list):
        return [(k, {"name": f} if isinstance(f, str) else f) for k, f in enumerate(raw)]
    if isinstance(raw, dict):
        return [(k, {"name": str(k), "metatags": v}) for k, v in raw.items()]
    return []


def _metatag_types(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if k not in SYSTEM_METATAGS and isinstance(v, str) and v in METATAG_TYPES}


def declared_slates(data: dict) -> dict[str, SlateDecl]:
    """The slates the document declares, by title, built from what is usable (the last of a title wins)."""
    out: dict[str, SlateDecl] = {}
    raw = data.get("slates")
    for s in raw if isinstance(raw, list) else []:
        if not isinstance(s, dict) or not isinstance(s.get("title"), str) or not s["title"].strip():
            continue
        folders = []
        raw_folders = s.get("folders")
        for f in raw_folders if isinstance(raw_folders, list) else []:
            if not _named(f):
                continue
            files = {e["name"]: _metatag_types(e.get("metatags")) for _, e in file_entries(f.get("files"))
                     if isinstance(e, dict) and isinstance(e.get("name"), str) and not unsafe_name(e["name"])}
            folders.append(FolderSpec(name=f["name"].strip("/"), metatags=_metatag_types(f.get("metatags")),
                                      files=files))
        path = s.get("path")
        out[s["title"]] = SlateDecl(title=s["title"], path=path if isinstance(path, str) else None,
                                    folders=tuple(folders))
    return out


# ---- the top level ---------------------------------------------------------------------------------------
@rule("ladder", "ladder-name")
def _ladder_name(site: Site) -> Iterator[ConfigError]:
    name = site.raw.get("name")
    if not isinstance(name, str) or not name.strip():
        yield problem("the ladder needs a name (a non-empty string)", at=("name",) if "name" in site.raw else ())


@rule("ladder", "wrong-type")
def _top_types(site: Site) -> Iterator[ConfigError]:
    data = site.raw
    if data.get("model") is not None and not isinstance(data["model"], str):
        yield problem("model must be a string" + yaml_word(site, ("model",)), at=("model",))
    if data.get("executionBudget") is not None and not isinstance(data["executionBudget"], dict):
        yield problem("executionBudget must be a mapping", at=("executionBudget",))
    if data.get("slates") is not None and not isinstance(data["slates"], list):
        yield problem(f"slates must be a list (got {typename(data['slates'])})", at=("slates",))
    for i, s in enumerate(data.get("slates") if isinstance(data.get("slates"), list) else []):
        if not isinstance(s, dict):
            yield problem(f"slates[{i}] must be a mapping (got {typename(s)})", at=("slates", i))


@rule("budget", "budget-value")
def _budget_values(site: Site) -> Iterator[ConfigError]:
    for k in BUDGET_KEYS:
        v = site.raw.get(k)
        if v is not None and not whole(v):
            yield problem(f"executionBudget.{k} must be a whole number >= 1 (got {short_repr(v)})", at=(k,))


@children("ladder")
def _below_ladder(site: Site) -> Iterator[Site]:
    data = site.raw
    if isinstance(data.get("executionBudget"), dict):
        yield site.at("budget", data["executionBudget"], ("executionBudget",))
    slates = data.get("slates")
    for i, s in enumerate(slates if isinstance(slates, list) else []):
        if isinstance(s, dict):
            yield site.at("slate", s, ("slates", i))
    yield site.at("steps", data.get("steps"), ("steps",))


# ---- slates, folders, files ------------------------------------------------------------------------------
def _slate_label(site: Site) -> str:
    title = site.raw.get("title")
    return f'slate "{title}"' if isinstance(title, str) and title.strip() else f"slates[{site.path[-1]}]"


@rule("slate", "slate-title")
def _slate_title(site: Site) -> Iterator[ConfigError]:
    title = site.raw.get("title")
    if not isinstance(title, str) or not title.strip():
        yield problem(f"slates[{site.path[-1]}].title is required (a non-empty string)")


@rule("slate", "duplicate-slate")
def _duplicate_slate(site: Site) -> Iterator[ConfigError]:
    title = site.raw.get("title")
    earlier = site.doc.data["slates"][:site.path[-1]]
    if isinstance(title, str) and any(isinstance(s, dict) and s.get("title") == title for s in earlier):
        yield problem(f'slate "{title}" is declared twice', at=("title",))


@rule("slate", "wrong-type")
def _slate_types(site: Site) -> Iterator[ConfigError]:
    path = site.raw.get("path")
    if path is not None and not isinstance(path, str):
        yield problem(f"{_slate_label(site)}: path must be a string" + yaml_word(site, ("path",)), at=("path",))
    folders = site.raw.get("folders")
    if folders is not None and not isinstance(folders, list):
        yield problem(f"{_slate_label(site)}: folders must be a list (got {typename(folders)})", at=("folders",))


@rule("slate", "folder-name")
def _folder_names(site: Site) -> Iterator[ConfigError]:
    folders = site.raw.get("folders")
    for j, f in enumerate(folders if isinstance(folders, list) else []):
        if not _named(f):
            yield problem(f"{_slate_label(site)}: folders[{j}] needs a name", at=("folders", j))


@children("slate")
def _below_slate(site: Site) -> Iterator[Site]:
    folders = site.raw.get("folders")
    for j, f in enumerate(folders if isinstance(folders, list) else []):
        if _named(f):
            yield site.at("folder", f, ("folders", j), what=_slate_label(site))


@rule("folder", "unsafe-name")
def _folder_name_safe(site: Site) -> Iterator[ConfigError]:
    name = site.raw["name"].strip("/")
    if name.startswith(".") or ".." in name.split("/"):
        yield problem(f'{site.what}: folder name "{name}" is not allowed', at=("name",))


@rule("folder", "duplicate-folder")
def _duplicate_folder(site: Site) -> Iterator[ConfigError]:
    name = site.raw["name"].strip("/")
    earlier = site.doc.data["slates"][site.path[1]]["folders"][:site.path[-1]]
    if any(_named(f) and f["name"].strip("/") == name for f in earlier):
        yield problem(f'{site.what}: folder "{name}" is declared twice', at=("name",))


def _metatag_problems(raw: Any, owner: str, at: tuple) -> Iterator[tuple[str, ConfigError]]:
    if raw is None:
        return
    if not isinstance(raw, dict):
        yield "wrong-type", problem(f"{owner}: metatags must be a mapping of name to type", at=at)
        return
    for k, v in raw.items():
        if k in SYSTEM_METATAGS:
            yield "system-metatag", problem(f'{owner}: "{k}" is a system metatag and cannot be declared',
                                            at=at + (k,))
        elif not isinstance(v, str) or v not in METATAG_TYPES:
            yield "metatag-type", problem(f'{owner}: metatag "{k}" has unknown type "{short_text(v)}"; use one of '
                                          + ", ".join(METATAG_TYPES), at=at + (k,),
                                          suggestion=suggest(v, METATAG_TYPES))


def _declared_metatags(site: Site) -> Iterator[ConfigError]:
    name = site.raw["name"].strip("/") if site.kind == "folder" else site.raw["name"]
    owner = f'{site.kind} "{name}"'
    for code, err in _metatag_problems(site.raw.get("metatags"), owner, ("metatags",)):
        err.rule = code
        yield err


for _kind in ("folder", "file"):
    rule(_kind, "metatag-type")(_declared_metatags)


@rule("folder", "file-name")
def _file_names(site: Site) -> Iterator[ConfigError]:
    name = site.raw["name"].strip("/")
    files = site.raw.get("files")
    if files is not None and not isinstance(files, (list, dict)):
        yield problem(f'{site.what}: folder "{name}": files must be a list (got {typename(files)})',
                      at=("files",), rule="wrong-type")
    for k, entry in file_entries(files):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            yield problem(f'{site.what}: folder "{name}" files[{k}] needs a name', at=("files", k))
        elif unsafe_name(entry["name"]):
            yield problem(f'{site.what}: folder "{name}" declares file "{entry["name"]}", which is not allowed '
                          '(no "..", no absolute path, no hidden names)', at=("files", k, "name"), rule="unsafe-name")


@children("folder")
def _below_folder(site: Site) -> Iterator[Site]:
    for k, entry in file_entries(site.raw.get("files")):
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and not unsafe_name(entry["name"]):
            yield site.at("file", entry, ("files", k))


__all__ = ["declared_slates", "file_entries", "unsafe_name"]

"""The document's shape: the keys each construct takes, the top level, the budget and the slate declarations."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError, short_repr, short_text
from ..slate import METATAG_TYPES, SYSTEM_METATAGS, FolderSpec
from .model import SlateDecl
from .rules import Site, children, problem, rule, suggest, typename, whole, yaml_word

# The keys each construct takes, each with the one sentence an editor shows on hover: the loader rejects any
# other key, and the JSON Schema (jsonschema.py) is built from these same tables, so the two cannot disagree.
_DESCRIPTION = "What this is for, in your own words (not sent to the model)."
TOP_KEYS = {
    "name": "The ladder's name (a non-empty string).",
    "description": _DESCRIPTION,
    "model": "The model: offline, script:PATH, replay:TRACE, local, or a litellm model string such as "
             "openai/gpt-4o-mini.",
    "knobs": "Defaults for {{knobs.NAME}} and knob fields; override them with --knob K=V.",
    "executionBudget": "Limits on the run: maxLlmCalls and maxSteps.",
    "slates": "The slates the ladder reads and writes: each a title, a path and its folders.",
    "steps": "The steps, run in order (a non-empty list).",
    "embedder": "The embedding model for similarTo and dense retrieval (for example st:all-MiniLM-L6-v2).",
}
STEP_KEYS = {
    "id": "The step's id, unique in the ladder (a non-empty string).",
    "type": "normal (the default), sequential, group (its steps: run as one unit) or call (runs a ladder again).",
    "nodes": "How many independent nodes run this step (a whole number >= 1).",
    "fields": "The named blocks of the step's prompt, each with a type and a source.",
    "systemPrompt": "The instructions sent to the model.",
    "retrieve": "Let the model request slate files: to, as, maxRounds and requestMatch.",
    "if": "A gate on the step's output: equals or jsonMatches, then an action, else an action.",
    "slateWrite": "Write the first JSON value of the final output to a slate file (to, on, key, match, field).",
    "steps": "A group step's steps, run as one unit.",
    "call": "A call step's call: {ladder: self or PATH, input: SOURCE, maxDepth: N}.",
    "model": "This step's model, instead of the ladder's.",
    "description": _DESCRIPTION,
}
FIELD_KEYS = {
    "name": "The field's name, as the prompt shows it (unique in the step).",
    "type": "text, slateRead, nodeInfo, ingest, multi_ingest, knob or json.",
    "from": "Where the value comes from: input.context, input.NAME, previous, output, {stepId: ID} or "
            "{slate, folder, file | metatag}.",
    "value": "A literal value (a json field's value, or a text field's text).",
    "knob": "The knob a knob field reads.",
    "description": _DESCRIPTION,
}
RETRIEVE_KEYS = {
    "to": "The slate folder requests are answered from: {slate, folder}.",
    "as": "The block name the prompt shows the fetched entries under.",
    "maxRounds": "The most retrieval rounds (a node makes at most maxRounds + 1 calls).",
    "requestMatch": "The JSON Schema that tells a retrieval request from a final answer.",
}
RETRIEVE_TO_KEYS = {
    "slate": "The title of a slate declared under slates:.",
    "folder": "A folder the slate declares.",
}
_POLICY = "How to write: append (the default), overwrite or mergeByKey."
_KEY = "With on: mergeByKey, the identifying property of a JSON array's objects."
SLATEWRITE_KEYS = {
    "to": "The slate file (or metatag) to write: {slate, folder, file | metatag}.",
    "field": "Write only this property of the extracted JSON value.",
    "on": _POLICY,
    "key": _KEY,
    "match": "The JSON Schema the extracted JSON value must match to be written.",
}
GATE_KEYS = {
    "equals": "The condition: the step's output equals this text.",
    "jsonMatches": "The condition: the step's output is JSON matching this JSON Schema.",
    "then": "The action when the condition holds: continue, abort, prune, {jump: STEP_ID} or {write: ...}.",
    "else": "The action when it does not: continue, abort, prune, {jump: STEP_ID} or {write: ...}.",
}
ACTION_KEYS = {
    "jump": "Jump to a top-level step: STEP_ID or {stepId: STEP_ID}.",
    "write": "Write to a slate file: {to, from, on, key}, or a list of them.",
}
WRITE_KEYS = {
    "to": "The slate file (or metatag) to write: {slate, folder, file | metatag}.",
    "from": "What to write: previous, output, a literal, {stepId: ID} or a slate reference.",
    "on": _POLICY,
    "key": _KEY,
}
TARGET_KEYS = {
    "slate": "The title of a slate declared under slates:.",
    "folder": "A folder the slate declares.",
    "file": "A file the folder declares.",
    "metatag": "A metatag to write instead of the file's contents.",
}
SLATE_KEYS = {
    "title": "The slate's title, as references name it (unique).",
    "path": "The slate's folder on disk, relative to the ladder file.",
    "folders": "The folders of the slate the ladder uses.",
    "description": _DESCRIPTION,
}
FOLDER_KEYS = {
    "name": "The folder's path inside the slate.",
    "metatags": "The folder's metatags: NAME: string | string[] | number | boolean | object.",
    "files": "Declared files: names, or {name, metatags}.",
    "description": _DESCRIPTION,
}
FILE_KEYS = {
    "name": "The file's name inside its folder.",
    "metatags": "The file's own metatags: NAME: string | string[] | number | boolean | object.",
    "description": _DESCRIPTION,
}
BUDGET_KEYS = {
    "maxLlmCalls": "The most model calls the run may make (a whole number >= 1).",
    "maxSteps": "The most steps the run may execute (a whole number >= 1).",
}
CALL_KEYS = {
    "ladder": "self (the default) or the path of a ladder file.",
    "input": "The called ladder's input: a source, as in from:.",
    "maxDepth": "The deepest nesting of calls (a whole number >= 1; default 3).",
}
STEP_REF_KEYS = {
    "stepId": "The step whose output is read.",
    "nodeRef": "Which node's output: current, previous or accumulate (every node's).",
    "node": "The number of the node whose output is read (a whole number >= 1).",
}
SLATE_REF_KEYS = {
    "slate": "The title of a slate declared under slates:.",
    "folder": "A folder the slate declares.",
    "file": "A file the folder declares.",
    "metatag": "A metatag: a declared one, or index (one level), tree (with depth) or another system metatag.",
    "depth": "How many levels a tree shows (a whole number >= 1).",
}


# construct kind -> the keys it takes (the loader's unknown-key rule and the JSON Schema both read this)
KEY_TABLES: dict[str, dict[str, str]] = {
    "ladder": TOP_KEYS, "budget": BUDGET_KEYS, "slate": SLATE_KEYS, "folder": FOLDER_KEYS, "file": FILE_KEYS,
    "step": STEP_KEYS, "field": FIELD_KEYS, "slate-read": SLATE_REF_KEYS, "step-ref": STEP_REF_KEYS,
    "slate-ref": SLATE_REF_KEYS, "retrieve": RETRIEVE_KEYS, "retrieve-to": RETRIEVE_TO_KEYS,
    "slateWrite": SLATEWRITE_KEYS, "target": TARGET_KEYS, "if": GATE_KEYS, "action": ACTION_KEYS,
    "write": WRITE_KEYS, "call": CALL_KEYS,
}


def _source_keys(site: Site) -> tuple[dict[str, str], str] | None:
    if not isinstance(site.raw, dict):
        return None
    if "stepId" in site.raw:
        return KEY_TABLES["step-ref"], f"{site.what} from:"
    if "slate" in site.raw:
        return KEY_TABLES["slate-ref"], f"{site.what} from:"
    return None


def _plain(label: str):
    return lambda s: (KEY_TABLES[s.kind], label)


# construct kind -> (allowed keys, how the unknown-key message names the construct)
_KEYS = {
    "ladder": _plain("ladder"),
    "budget": _plain("executionBudget"),
    "slate": _plain("slate"),
    "folder": lambda s: (FOLDER_KEYS, f'folder "{s.raw["name"]}"'),
    "file": lambda s: (FILE_KEYS, f'file "{s.raw["name"]}"'),
    "step": _plain("step"),
    "field": lambda s: (FIELD_KEYS, f'field "{s.field}"'),
    "slate-read": lambda s: (SLATE_REF_KEYS, s.what),
    "source": _source_keys,
    "retrieve": _plain("retrieve"),
    "retrieve-to": _plain("retrieve.to"),
    "slateWrite": _plain("slateWrite"),
    "target": lambda s: (TARGET_KEYS, f"{s.what}.to"),
    "if": _plain("if"),
    "action": lambda s: (ACTION_KEYS, f"if.{s.branch}"),
    "write": lambda s: (WRITE_KEYS, s.what),
    "call": _plain("call"),
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


__all__ = ["KEY_TABLES", "declared_slates", "file_entries", "unsafe_name"]

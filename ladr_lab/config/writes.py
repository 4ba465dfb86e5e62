"""Writes and the gates that trigger them: slateWrite, if:/then:/else:, gate branches and gated writes.

Every independent problem of a block is its own rule, so one pass reports them all: a gate's
condition, both its branches and their writes; a write's target, policy and key.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError, short_repr, short_text
from .model import WRITE_POLICIES
from .references import jump_target
from .rules import Site, children, problem, rule, suggest, yaml_word

ACTIONS = ("continue", "abort", "prune")


# ---- writes (slateWrite and gated writes) ----------------------------------------------------------------
def write_policy(raw: dict) -> str:
    """The write policy as declared (append when absent)."""
    return raw.get("on", "append")


def _policy(site: Site) -> Iterator[ConfigError]:
    on = write_policy(site.raw)
    if not isinstance(on, str) or on not in WRITE_POLICIES:
        yield problem(f"{site.what}.on must be one of " + ", ".join(WRITE_POLICIES) + f' (got "{short_text(on)}")',
                      at=("on",), suggestion=suggest(on, WRITE_POLICIES))


def _key_required(site: Site) -> Iterator[ConfigError]:
    if write_policy(site.raw) == "mergeByKey" and site.raw.get("key") is None:
        yield problem(f"{site.what} on: mergeByKey requires key.", at=("on",))


def _key_without_merge(site: Site) -> Iterator[ConfigError]:
    on = write_policy(site.raw)
    if site.raw.get("key") is not None and on != "mergeByKey" and on in WRITE_POLICIES:
        yield problem(f"{site.what}.key is only valid when on: mergeByKey (got on: {on}).", at=("key",))


def _key_type(site: Site) -> Iterator[ConfigError]:
    key = site.raw.get("key")
    if key is not None and (not isinstance(key, str) or not key.strip()):
        yield problem(f"{site.what}.key must be a field name (a non-empty string) (got {short_repr(key)}).", at=("key",))


for _kind in ("slateWrite", "write"):
    rule(_kind, "write-policy")(_policy)
    rule(_kind, "key-required")(_key_required)
    rule(_kind, "key-without-merge")(_key_without_merge)
    rule(_kind, "key-type")(_key_type)


@rule("slateWrite", "wrong-type")
def _slate_write_field(site: Site) -> Iterator[ConfigError]:
    fld = site.raw.get("field")
    if fld is not None and not isinstance(fld, str):
        yield problem("slateWrite.field must be a string" + yaml_word(site, ("field",)), at=("field",))


@children("slateWrite")
def _below_slate_write(site: Site) -> Iterator[Site]:
    yield site.at("target", site.raw.get("to"), ("to",), what="slateWrite")
    yield site.at("schema", site.raw.get("match"), ("match",), what="slateWrite.match")


@rule("write", "write-source")
def _write_source(site: Site) -> Iterator[ConfigError]:
    if "from" not in site.raw:
        yield problem(f"{site.what} needs from: (previous, output, a literal, a step or a slate ref)")


@children("write")
def _below_write(site: Site) -> Iterator[Site]:
    yield site.at("target", site.raw.get("to"), ("to",), what=site.what)
    if "from" in site.raw:
        yield site.at("source", site.raw["from"], ("from",), what=site.what)


# ---- gates -----------------------------------------------------------------------------------------------
@rule("if", "gate-condition")
def _condition(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    if "equals" in raw and "jsonMatches" in raw:
        yield problem("if takes equals or jsonMatches, not both")
    elif "equals" not in raw and "jsonMatches" not in raw:
        yield problem("if needs a condition: equals or jsonMatches")


@rule("if", "wrong-type")
def _equals_type(site: Site) -> Iterator[ConfigError]:
    equals = site.raw.get("equals")
    if "equals" in site.raw and (not isinstance(equals, (str, int, float)) or isinstance(equals, bool)):
        yield problem("if.equals must be a string" + yaml_word(site, ("equals",)), at=("equals",))


@children("if")
def _below_gate(site: Site) -> Iterator[Site]:
    raw = site.raw
    if "jsonMatches" in raw:
        yield site.at("schema", raw["jsonMatches"], ("jsonMatches",), what="if.jsonMatches")
    for branch in ("then", "else"):
        yield site.at("action", raw.get(branch, "continue"), (branch,), branch=branch)


@rule("action", "unknown-action")
def _action_form(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    if isinstance(raw, str) and raw not in ACTIONS:
        yield problem(f'if.{site.branch} has unknown action "{short_text(raw)}"; use continue, abort, prune, '
                      "{jump: {stepId: ...}} or {write: ...}", suggestion=suggest(raw, ACTIONS))
    elif not isinstance(raw, (str, dict)):
        yield problem(f"if.{site.branch} must be an action")


@rule("action", "jump-form")
def _jump_form(site: Site) -> Iterator[ConfigError]:
    if isinstance(site.raw, dict) and "jump" in site.raw and jump_target(site.raw["jump"]) is None:
        yield problem(f"if.{site.branch}.jump must be {{stepId: ...}}", at=("jump",))


@rule("action", "empty-action")
def _empty_action(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    if isinstance(raw, dict) and jump_target(raw.get("jump")) is None and "write" not in raw:
        yield problem(f"if.{site.branch} needs jump or write")


def write_items(raw: dict) -> list[tuple[tuple, Any]]:
    """A branch's writes as (path below the branch, write), for `write:` given as one mapping or a list."""
    w = raw.get("write")
    if isinstance(w, list):
        return [(("write", i), item) for i, item in enumerate(w)]
    return [(("write",), w)] if "write" in raw else []


@rule("action", "wrong-type")
def _write_items(site: Site) -> Iterator[ConfigError]:
    if isinstance(site.raw, dict):
        for at, w in write_items(site.raw):
            if not isinstance(w, dict):
                yield problem(f"if.{site.branch} write must be a mapping with to, from and on", at=at)


@children("action")
def _below_action(site: Site) -> Iterator[Site]:
    if isinstance(site.raw, dict):
        for at, w in write_items(site.raw):
            if isinstance(w, dict):
                yield site.at("write", w, at, what=f"if.{site.branch} write")

__all__ = ["ACTIONS", "write_items", "write_policy"]

"""ScriptedModel: a model that answers from a script, for tests, demos and the `script:PATH` model name.

Like httpx's MockTransport, it is public so users can drive their own ladders deterministically:

    ScriptedModel({"research/2": ['{"request": {"files": ["a.md"]}}', "Done."],
                   "research": ["Answer for every other node."],
                   "*": ["fallback for any step"]})
    ScriptedModel(["first call", "second call"])          # same as {"*": [...]}
    ScriptedModel(lambda messages, **hints: "echo")       # computed answers (str or Completion)
    ScriptedModel(lambda messages, call: call.step)       # a callable may take the CallInfo instead

Keys are looked up as `"STEP/NODE"`, then `"STEP"`, then `"*"`; the FIRST key that exists answers,
and each key's list is consumed in order independently of the others. When that key's list is used
up the call fails with ScriptExhausted naming the key (it does not fall through to a broader key:
a script that runs short is a bug worth hearing about). Calls are served under a lock, so any number
of threads may draw from one script and every output is used exactly once; `max_concurrency`
defaults to 1 so that, under the runtime, which node gets which output stays deterministic.

`ScriptedModel.from_file(path)` reads SPEC §9's YAML: a mapping from `STEP`, `STEP/NODE` or `"*"`
to a list of outputs (a bare list means `"*"`); an output that is not a string (a YAML mapping, a
list, a number) is sent as its JSON text. Every call is recorded in `calls` as
`{"key", "hints", "call", "messages"}` for assertions (`hints` is `call.hints()`).

`stream_delay=SECONDS` makes it write each answer to a watched call's stream a word at a time, that many seconds
apart (models/stream.py), as a slow real model would: a notebook or a test can watch the text grow and press Stop
(the call then ends as CallCancelled, its answer not used, so the next call of that key gets the same answer).
Without watchers it answers at once, as always.

A callable receives `(messages, **call.hints())`, the keyword form of earlier versions, unless its
signature names a `call` parameter, in which case it receives `(messages, call=CallInfo)`.
"""
from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import CallCancelled, ModelError, ScriptExhausted
from .base import CallInfo, Completion

__all__ = ["ScriptedModel"]


def _takes_call(fn) -> bool:
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "call" in params and params["call"].kind is not inspect.Parameter.VAR_KEYWORD


def _render(item) -> str | Completion:
    if isinstance(item, (str, Completion)):
        return item
    if item is None:
        return ""
    return json.dumps(item, ensure_ascii=False, default=str)


class ScriptedModel:
    """A model whose answers come from a per-step script, a plain list, or a callable."""

    def __init__(
        self,
        script: Mapping[str, list] | list | Callable[..., str | Completion],
        *,
        name: str = "script",
        max_concurrency: int = 1,
        reads_schemas: bool | None = None,
        stream_delay: float = 0.0,
    ) -> None:
        if not isinstance(stream_delay, (int, float)) or isinstance(stream_delay, bool) or stream_delay < 0:
            raise ModelError(f"script: stream_delay must be a number of seconds >= 0 (got {stream_delay!r})")
        self.stream_delay = float(stream_delay)
        self.name = name
        self.max_concurrency = max_concurrency
        # whether an answer may depend on the call's schemas (requestMatch, a gate's or write's): a callable is
        # handed them, so it may, unless its author says otherwise; a list or mapping never does. Experiments
        # re-judge a schema-only variant from recorded runs only for a model whose answers ignore the schemas.
        self.reads_schemas = callable(script) and not isinstance(script, (Mapping, list)) \
            if reads_schemas is None else bool(reads_schemas)
        self.calls: list[dict] = []
        self._lock = threading.Lock()
        self._handler: Callable[..., str | Completion] | None = None
        self._handler_takes_call = False
        self._script: dict[str, list] = {}
        self._used: dict[str, int] = {}
        if callable(script) and not isinstance(script, (Mapping, list)):
            self._handler = script
            self._handler_takes_call = _takes_call(script)
        elif isinstance(script, Mapping):
            for key, outputs in script.items():
                if isinstance(outputs, (str, bytes)) or not isinstance(outputs, (list, tuple)):
                    raise ModelError(f'script: key "{key}" must map to a list of outputs')
                self._script[str(key)] = [_render(o) for o in outputs]
        elif isinstance(script, (list, tuple)):
            self._script["*"] = [_render(o) for o in script]
        else:
            raise ModelError(f"script: expected a mapping, a list or a callable, got {type(script).__name__}")
        self._used = {key: 0 for key in self._script}

    @classmethod
    def from_file(cls, path: str | Path, **kwargs) -> ScriptedModel:
        """Load a SPEC §9 script file (YAML mapping of `STEP`/`STEP/NODE`/`"*"` to output lists)."""
        import yaml

        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"script file {path}: cannot read it ({exc.strerror or exc})") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ModelError(f"script file {path}: not valid YAML ({exc})") from exc
        if not isinstance(data, (dict, list)):
            raise ModelError(
                f"script file {path}: expected a mapping of STEP or STEP/NODE to a list of outputs, "
                f"got {type(data).__name__ if data is not None else 'an empty file'}"
            )
        kwargs.setdefault("name", f"script:{path}")
        try:
            return cls(data, **kwargs)
        except ModelError as exc:
            raise ModelError(f"script file {path}: {str(exc).removeprefix('script: ')}") from exc

    @property
    def remaining(self) -> dict[str, int]:
        """How many outputs are left under each key."""
        with self._lock:
            return {key: len(outs) - self._used[key] for key, outs in self._script.items()}

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Answer with the next scripted output for this call's step/node (see the module docstring)."""
        call = call or CallInfo(step="")
        step, node = call.step or None, call.node
        hints = call.hints()
        label = f"{step}/{node}" if step is not None else "*"
        if self._handler is not None:
            with self._lock:
                self.calls.append({"key": label, "hints": hints, "call": call, "messages": messages})
            out = self._handler(messages, call=call) if self._handler_takes_call else self._handler(messages, **hints)
            return self._streamed(self._completion(messages, out), call)
        keys = []
        if step is not None:
            keys.append(f"{step}/{node}")
            keys.append(str(step))
        keys.append("*")
        with self._lock:
            key = next((k for k in keys if k in self._script), None)
            if key is None:
                known = ", ".join(f'"{k}"' for k in self._script) or "none"
                raise ScriptExhausted(f'script: no outputs for "{label}" (keys in the script: {known})')
            used = self._used[key]
            if used >= len(self._script[key]):
                raise ScriptExhausted(f'script: no more outputs for "{key}" ({used} used)')
            self._used[key] = used + 1
            out = self._script[key][used]
            record = {"key": key, "hints": hints, "call": call, "messages": messages}
            self.calls.append(record)
        try:
            return self._streamed(self._completion(messages, out), call)
        except CallCancelled:
            with self._lock:          # not answered: the call made again gets this output again
                self._used[key] -= 1
                self.calls.remove(record)
            raise

    def _streamed(self, comp: Completion, call: CallInfo) -> Completion:
        """`comp`, written to the call's stream a word at a time when `stream_delay` is set and someone watches."""
        stream = call.stream
        if stream is None or not self.stream_delay:
            return comp
        for piece in re.findall(r"\S+\s*|\s+", comp.text):
            stream.sleep(self.stream_delay)
            stream.write(piece)
        return comp

    def reset(self) -> None:
        """Start every key's script again from its first output and forget the recorded calls (a notebook's
        Stepper does this when its run is reset)."""
        with self._lock:
            self._used = {key: 0 for key in self._script}
            self.calls.clear()

    def close(self) -> None:
        """Nothing to release."""

    def _completion(self, messages: list[dict], out) -> Completion:
        if isinstance(out, Completion):
            return out if out.provenance != "live" else dataclasses.replace(out, provenance="scripted")
        text = _render(out)
        if isinstance(text, Completion):
            return self._completion(messages, text)
        return Completion.of_text(text, messages, model=self.name, provenance="scripted")

    def __repr__(self) -> str:
        if self._handler is not None:
            return f"ScriptedModel({self._handler!r})"
        return f"ScriptedModel(keys={list(self._script)})"

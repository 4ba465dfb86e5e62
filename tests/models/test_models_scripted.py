"""ScriptedModel: key precedence, per-key order, exhaustion messages, callables, files, threads."""
from __future__ import annotations

import threading

import pytest

from ladr_lab.errors import ModelError, ScriptExhausted
from ladr_lab.models import CallInfo, Completion, ScriptedModel

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Question:\nwhy?"}]


def ask(model, step=None, node=None, **hints):
    if step is not None:
        hints["step"] = step
    if node is not None:
        hints["node"] = node
    return model.complete(MSGS, call=CallInfo(**hints)).text


def test_step_node_key_wins_over_step_and_star():
    m = ScriptedModel({"research/2": ["node two"], "research": ["step"], "*": ["any"]})
    assert ask(m, "research", 2) == "node two"
    assert ask(m, "research", 1) == "step"
    assert ask(m, "write", 1) == "any"
    assert [c["key"] for c in m.calls] == ["research/2", "research", "*"]


def test_each_key_is_consumed_in_order_independently():
    m = ScriptedModel({"a": ["a1", "a2"], "b": ["b1", "b2"]})
    assert [ask(m, "a", 1), ask(m, "b", 1), ask(m, "b", 2), ask(m, "a", 3)] == ["a1", "b1", "b2", "a2"]
    assert m.remaining == {"a": 0, "b": 0}


def test_exhaustion_names_the_key_and_count_and_does_not_fall_through():
    m = ScriptedModel({"research": ["one", "two"], "*": ["fallback"]})
    ask(m, "research", 1)
    ask(m, "research", 1)
    with pytest.raises(ScriptExhausted) as info:
        ask(m, "research", 1)
    assert str(info.value) == 'script: no more outputs for "research" (2 used)'
    assert isinstance(info.value, ModelError)


def test_missing_key_names_the_call_and_the_keys_that_exist():
    m = ScriptedModel({"plan": ["x"], "write/2": ["y"]})
    with pytest.raises(ScriptExhausted) as info:
        ask(m, "research", 1)
    text = str(info.value)
    assert "research/1" in text and '"plan"' in text and '"write/2"' in text


def test_plain_list_is_the_star_key():
    m = ScriptedModel(["first", "second"])
    assert [ask(m, "a", 1), ask(m, "b", 4)] == ["first", "second"]
    with pytest.raises(ScriptExhausted, match=r'"\*" \(2 used\)'):
        ask(m, "c", 1)


def test_callable_form_gets_messages_and_hints_and_may_return_a_completion():
    seen = []

    def handler(messages, **hints):
        seen.append((messages[1]["content"], hints["step"], hints["round"]))
        if hints["round"] == 2:
            return Completion("custom", tokens_in=7, model="mine")
        return f"echo {hints['step']}"

    m = ScriptedModel(handler)
    assert ask(m, "research", 1, round=1) == "echo research"
    out = m.complete(MSGS, call=CallInfo(step="research", node=1, round=2))
    assert out == Completion("custom", tokens_in=7, model="mine", provenance="scripted")
    assert seen == [("Question:\nwhy?", "research", 1), ("Question:\nwhy?", "research", 2)]
    assert [c["key"] for c in m.calls] == ["research/1", "research/1"]


def test_completion_has_estimated_tokens_and_zero_latency():
    out = ScriptedModel(["12345678"]).complete(MSGS, call=CallInfo(step="s", node=1))
    assert out.tokens_out == 2
    assert out.tokens_in == 5  # "sys" + "Question:\nwhy?" is 17 chars -> ceil(17 / 4)
    assert out.latency == 0.0 and out.cost == 0.0


def test_calls_record_key_hints_and_messages():
    m = ScriptedModel({"*": ["x"]})
    ask(m, "s", 3, round=2, forced_final=True)
    (call,) = m.calls
    assert call["key"] == "*" and call["messages"] == MSGS
    assert call["call"] == CallInfo(step="s", node=3, round=2, forced_final=True)
    assert {k: call["hints"][k] for k in ("step", "node", "round", "forced_final")} == \
        {"step": "s", "node": 3, "round": 2, "forced_final": True}


def test_a_callable_naming_call_gets_the_call_info():
    seen = []
    m = ScriptedModel(lambda messages, call: seen.append(call) or f"{call.step}/{call.node}/{call.round}")
    assert ask(m, "research", 2, round=3) == "research/2/3"
    assert seen == [CallInfo(step="research", node=2, round=3)]


def test_from_file_renders_mapping_items_as_json(tmp_path):
    path = tmp_path / "script.yaml"
    path.write_text(
        "research:\n"
        "  - request:\n"
        "      files: [faq.md]\n"
        "  - Because.\n"
        "research/2:\n"
        "  - 42\n"
        '"*": [fallback]\n',
        encoding="utf-8",
    )
    m = ScriptedModel.from_file(path)
    assert ask(m, "research", 1) == '{"request": {"files": ["faq.md"]}}'
    assert ask(m, "research", 1) == "Because."
    assert ask(m, "research", 2) == "42"
    assert ask(m, "other", 1) == "fallback"
    assert str(path) in m.name


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("research: [a\n", "not valid YAML"),
        ("just a string\n", "expected a mapping"),
        ("", "empty file"),
        ("research: one output\n", 'key "research" must map to a list'),
    ],
)
def test_bad_script_file_is_a_model_error_naming_the_path(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ModelError) as info:
        ScriptedModel.from_file(path)
    assert str(path) in str(info.value) and fragment in str(info.value)


def test_missing_script_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="nope.yaml"):
        ScriptedModel.from_file(tmp_path / "nope.yaml")


def test_many_threads_use_every_output_exactly_once():
    outputs = [f"out-{i}" for i in range(400)]
    m = ScriptedModel({"research": outputs}, max_concurrency=16)
    got: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def worker(node):
        start.wait()
        for _ in range(25):
            try:
                text = ask(m, "research", node)
            except BaseException as exc:  # pragma: no cover - surfaced by the assert below
                errors.append(exc)
                return
            with lock:
                got.append(text)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 17)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(got) == sorted(outputs)
    assert len(m.calls) == 400
    with pytest.raises(ScriptExhausted, match=r'"research" \(400 used\)'):
        ask(m, "research", 1)

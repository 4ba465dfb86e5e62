"""get_model: name → Model dispatch, and the package's public surface."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import ladr_lab.models as models
from ladr_lab.errors import ModelError
from ladr_lab.models import CallInfo, LiteLLMModel, Model, OfflineModel, ReplayModel, ScriptedModel, get_model


@pytest.mark.parametrize("name", [None, "offline", " offline "])
def test_offline_is_the_default(name):
    assert isinstance(get_model(name), OfflineModel)


def test_script_path_is_relative_to_base_dir(tmp_path):
    (tmp_path / "s.yaml").write_text("research: [hi]\n", encoding="utf-8")
    m = get_model("script:s.yaml", base_dir=tmp_path)
    assert isinstance(m, ScriptedModel)
    assert m.complete([], call=CallInfo(step="research", node=1)).text == "hi"


def test_script_path_defaults_to_cwd(tmp_path, monkeypatch):
    (tmp_path / "s.yaml").write_text('"*": [hi]\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert get_model("script:s.yaml").complete([]).text == "hi"


def test_missing_script_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="nope.yaml"):
        get_model("script:nope.yaml", base_dir=tmp_path)


def test_replay_path(tmp_path):
    event = {"type": "llm_call", "step": "s", "node": 1, "round": 1, "messages": [], "output": "recorded"}
    (tmp_path / "t.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    m = get_model("replay:t.jsonl", base_dir=tmp_path)
    assert isinstance(m, ReplayModel) and m.complete([], call=CallInfo(step="s", node=1)).text == "recorded"


def test_instances_pass_through_and_other_names_are_litellm():
    scripted = ScriptedModel(["x"])
    assert get_model(scripted) is scripted
    m = get_model("ollama/llama3.2")
    assert isinstance(m, LiteLLMModel) and m.name == "ollama/llama3.2"


def test_every_model_keeps_the_protocol():
    for m in (OfflineModel(), ScriptedModel([]), LiteLLMModel("x/y")):
        assert isinstance(m, Model) and m.max_concurrency >= 1 and m.name


def test_not_a_model_is_an_error():
    with pytest.raises(ModelError):
        get_model(42)


def test_all_lists_the_public_names():
    public = {n for n in dir(models) if not n.startswith("_") and n[0].isupper() or n in ("get_model", "estimate_tokens")}
    assert public <= set(models.__all__)
    assert models.__all__ == sorted(models.__all__)


def test_base_dir_is_typed_and_taken_as_a_str_or_a_path(tmp_path):
    import typing

    for fn in (get_model, ReplayModel.__init__):
        hint = typing.get_type_hints(fn)["base_dir"]
        assert str in typing.get_args(hint) and Path in typing.get_args(hint), fn
    script = tmp_path / "s.yaml"
    script.write_text("'*': [hello]\n")
    for base in (str(tmp_path), tmp_path):
        model = get_model("script:s.yaml", base_dir=base)
        assert model.complete([{"role": "user", "content": "q"}]).text == "hello"


@pytest.mark.parametrize(("name", "meant"), [("offlne", "offline"), ("ofline", "offline"), ("scrip:x", "script:x"),
                                             ("replay x", "replay:x")])
def test_a_name_close_to_ours_says_did_you_mean(name, meant):
    with pytest.raises(ModelError, match=f'did you mean "{meant}"\\?'):
        get_model(name)


@pytest.mark.parametrize("name", ["gpt-4o-mini", "openai/gpt-4o-mini", "ollama/llama3.2", "o1", "claude-3-5-sonnet"])
def test_litellm_names_are_not_taken_for_typos(name):
    assert isinstance(get_model(name), LiteLLMModel)


def test_did_you_mean_does_not_import_litellm():
    import subprocess
    import sys
    code = ("import sys, ladr_lab.models as m\n"
            "from ladr_lab.errors import ModelError\n"
            "try:\n    m.get_model('offlne')\nexcept ModelError as e:\n    print(e)\n"
            "print('litellm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, check=True)
    assert 'did you mean "offline"?' in done.stdout and done.stdout.split()[-1] == "False"


def test_get_model_resolves_a_mixed_replays_then(tmp_path):
    event = {"type": "llm_call", "step": "s", "node": 1, "round": 1, "messages": [], "output": "recorded"}
    (tmp_path / "t.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("s: [scripted]\n", encoding="utf-8")
    m = get_model("replay:t.jsonl", then="script:s.yaml", base_dir=tmp_path)   # then's path: same base_dir
    assert isinstance(m, ReplayModel) and isinstance(m.then, ScriptedModel) and m.name.endswith(f"then script:{tmp_path / 's.yaml'}")
    live = ScriptedModel(["x"])
    assert get_model("replay:t.jsonl", then=live, base_dir=tmp_path).then is live
    with pytest.raises(ModelError, match="goes with a replay:PATH model"):
        get_model("offline", then="offline")


def test_a_replay_given_a_model_name_as_then_has_it_resolved_by_the_registry(tmp_path):
    event = {"type": "llm_call", "step": "s", "node": 1, "round": 1, "messages": [], "output": "recorded"}
    (tmp_path / "t.jsonl").write_text(json.dumps(event) + "\n", encoding="utf-8")
    m = ReplayModel(tmp_path / "t.jsonl", then="offline")       # as notebooks write it
    assert isinstance(m.then, OfflineModel) and m.name.endswith(" then offline")
    with pytest.raises(ModelError, match="not a model name or Model"):
        ReplayModel(tmp_path / "t.jsonl", then=42)  # type: ignore[arg-type]


def test_replay_does_not_import_the_registry():
    import ast

    import ladr_lab.models.replay as replay

    tree = ast.parse(Path(replay.__file__).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(name and name.split(".")[-1] == "registry" for name in imported), imported


def test_completion_of_text_estimates_both_token_counts():
    from ladr_lab.models.base import Completion, estimate_message_tokens, estimate_tokens
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "Question:\nwhy " * 20}]
    c = Completion.of_text("because " * 30, messages, model="m", provenance="scripted")
    assert (c.tokens_in, c.tokens_out) == (estimate_message_tokens(messages), estimate_tokens("because " * 30))
    assert c.tokens_in > 20 and c.tokens_out > 20
    assert (c.model, c.provenance, c.cost, c.latency) == ("m", "scripted", 0.0, 0.0)

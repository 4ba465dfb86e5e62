"""folders.py's Watch: a slate folder's change token is read once per folder per request."""
from __future__ import annotations

from ladr_lab.search import EmbeddedEngine
from ladr_lab.slate import SlateStore
from ladr_lab.slate.folder import Folder


def test_the_change_token_is_read_once_per_folder_per_request(tmp_path, monkeypatch):
    calls = []
    real = Folder.change_token

    def counted(self):
        calls.append(self.path)
        return real(self)

    monkeypatch.setattr(Folder, "change_token", counted)   # before the engine binds it
    for name in ("a", "b"):
        (tmp_path / "S" / name).mkdir(parents=True)
        (tmp_path / "S" / name / "x.md").write_text(f"hello {name}", encoding="utf-8")
    store = SlateStore()
    store.bind("S", tmp_path / "S")
    engine = EmbeddedEngine.from_store(store, dense=False, chunks=False)
    engine.warm()
    calls.clear()
    assert len(engine.retrieve({"query": "hello"})["hits"]) == 2
    assert len(calls) == 2 and len(set(calls)) == 2            # nothing changed: one read a folder
    (tmp_path / "S" / "a" / "y.md").write_text("hello again", encoding="utf-8")
    calls.clear()
    assert len(engine.retrieve({"query": "hello"})["hits"]) == 3   # the write is seen at once
    assert len(calls) == 2 and len(set(calls)) == 2            # and the changed folder's token is read once too
    calls.clear()
    assert len(engine.retrieve({"query": "hello"})["hits"]) == 3
    assert len(calls) == 2

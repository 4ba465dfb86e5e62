"""Masking local paths and credentials (seed 004): evidence text passes through a Masker before it is indexed.

`Masker.hiding_outside(run_folder)` hides every local path outside the run folder (`PathRedactor`) and
credentials (`CredentialRedactor`: private-key blocks, cloud and service keys, bearer and basic tokens,
passwords in URLs, ``*_SECRET=``-style assignments). What a masker hides is neither returned nor searched.
Masking is off by default. The retriever masks a record whole before cutting it into lines and pieces; a record
whose lines arrive in separate reads (one still being written when a search reads it) is masked in parts, so a
key block over those lines can be left partly visible (the seed's known limit).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

MASKED_PATH = "[masked path]"
MASKED_SECRET = "[masked secret]"

_PATH_END = r"""[^\s'"`<>|;:,(){}\[\]*?]"""
# a POSIX absolute path: a "/" that no word, path or URL character precedes and that is not "//" (a URL)
_POSIX_RE = re.compile(rf"(?<![\w/.~%-])(?:~[\w.-]*)?/(?!/){_PATH_END}*")
_FILE_URL_RE = re.compile(rf"\bfile://(?:localhost)?(/{_PATH_END}*)", re.IGNORECASE)
_WINDOWS_RE = re.compile(rf"(?<![\w/\\])(?:[A-Za-z]:\\|\\\\[\w.$-]+\\){_PATH_END}*")
_TRAILING = ".:!?"


class PathRedactor:
    """Hides local paths (POSIX, ``~``, ``file://`` and Windows) that lie outside a folder; paths inside it stay."""

    def __init__(self, inside: str | Path, replacement: str = MASKED_PATH) -> None:
        folder = Path(inside).expanduser()
        roots = {os.path.normpath(os.path.abspath(folder))}
        try:
            roots.add(os.path.normpath(os.path.realpath(folder)))
        except OSError:  # pragma: no cover - realpath only fails on exotic file systems
            pass
        self.roots = sorted(roots)
        self.replacement = replacement
        self.name = "paths-outside:" + "|".join(self.roots)

    def _inside(self, path: str) -> bool:
        norm = os.path.normpath(os.path.expanduser(path))
        return any(norm == root or norm.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)

    def _sub(self, m: re.Match, group: int = 0) -> str:
        path = m.group(group)
        core = path.rstrip(_TRAILING)
        if not core.strip("/~") or self._inside(core):
            return m.group(0)
        prefix = m.group(0)[:m.start(group) - m.start(0)]
        return prefix + self.replacement + path[len(core):]

    def redact(self, text: str) -> str:
        """`text` with every local path outside the folder replaced."""
        if "/" not in text and "\\" not in text:
            return text
        text = _FILE_URL_RE.sub(lambda m: self._sub(m, 1), text)
        text = _WINDOWS_RE.sub(self._sub, text)
        return _POSIX_RE.sub(self._sub, text)


_PEM_RE = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK|)-----.*?"
                     r"(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL)
# an END line whose BEGIN was in an earlier part of the record: hide from the start of this part
_PEM_ORPHAN_END_RE = re.compile(r"\A.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", re.DOTALL)
_URL_PASSWORD_RE = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+):([^\s/@]+)@")
_AUTH_RE = re.compile(r"\b(Bearer|Basic)(\s+)(?!\[masked )([A-Za-z0-9\-._~+/]{8,}=*)")
_KEYWORDS = (r"secret|password|passwd|passphrase|pwd|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
             r"|secret[_-]?key|credentials?|accountkey|sas[_-]?token|client[_-]?secret")
_ASSIGN_RE = re.compile(
    rf"""(?<![\w.-])((?:[A-Za-z0-9_.-]*[_.-])?(?:{_KEYWORDS})(?:[_.-][A-Za-z0-9_.-]*)?["']?\s*[:=]\s*)"""
    r"""(?!\[masked )("[^"\n]*"|'[^'\n]*'|[^\s,;"'}\]]+)""",
    re.IGNORECASE)
_TOKEN_RES = [re.compile(p) for p in (
    r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b",  # AWS key ids
    r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])",  # Google API keys
    r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b",  # GitHub tokens
    r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab tokens
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",  # Slack tokens
    r"\bsk-(?:proj-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic keys
    r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe keys
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # JSON web tokens
    r"(?i)\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/=]{20,}",  # Azure storage / service bus keys
    r"\bsig=[A-Za-z0-9%+/=]{20,}",  # Azure SAS signatures
)]


class CredentialRedactor:
    """Hides credentials: private-key blocks, cloud and service keys, tokens, URL passwords, secret assignments."""

    name = "credentials"

    def __init__(self, replacement: str = MASKED_SECRET) -> None:
        self.replacement = replacement

    def redact(self, text: str) -> str:
        """`text` with every credential it recognises replaced."""
        r = self.replacement
        if "PRIVATE KEY" in text:
            text = _PEM_RE.sub(r, text)
            text = _PEM_ORPHAN_END_RE.sub(r, text)
        text = _URL_PASSWORD_RE.sub(lambda m: f"{m.group(1)}:{r}@", text)
        text = _AUTH_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{r}", text)
        text = _ASSIGN_RE.sub(lambda m: m.group(1) + r, text)
        for rx in _TOKEN_RES:
            text = rx.sub(r, text)
        return text


class Masker:
    """Passes evidence text through redactors in order; `Masker.hiding_outside(run_folder)` is the usual one."""

    def __init__(self, *redactors: PathRedactor | CredentialRedactor | Callable[[str], str]) -> None:
        self.redactors = redactors
        self.name = "+".join(getattr(r, "name", getattr(r, "__qualname__", repr(r))) for r in redactors) or "none"

    @classmethod
    def hiding_outside(cls, run_folder: str | Path) -> Masker:
        """A masker hiding local paths outside `run_folder` and credentials."""
        return cls(CredentialRedactor(), PathRedactor(run_folder))

    @classmethod
    def credentials(cls) -> Masker:
        """A masker hiding credentials only."""
        return cls(CredentialRedactor())

    def mask(self, text: str) -> str:
        """`text` with what the redactors hide replaced."""
        for r in self.redactors:
            text = r.redact(text) if hasattr(r, "redact") else r(text)
        return text

    __call__ = mask


__all__ = ["CredentialRedactor", "MASKED_PATH", "MASKED_SECRET", "Masker", "PathRedactor"]

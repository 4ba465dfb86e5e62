"""The vendored gitleaks rules brought up to date: ``python -m ladr_lab.runfiles.rules.refresh [--ref REF]``.

Downloads upstream's ``config/gitleaks.toml`` and ``LICENSE`` at REF (a branch, tag or commit; default
``master``), writes them beside this file (``gitleaks.toml``, ``LICENSE-gitleaks``) and converts the TOML to
``gitleaks.json``, the file the masker loads, with the commit it came from. ``--toml FILE --commit SHA`` converts a
copy already on disk instead. It needs the network (tests never run it) and Python 3.11's ``tomllib``; after a
refresh run ``tests/runfiles/test_masking_rules.py``: every rule must translate, compile and mask a sample of its own.
"""
from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

from .gitleaks import DATA, translate

REPO = "gitleaks/gitleaks"
HERE = Path(__file__).parent


def _get(url: str) -> bytes:
    """The body at `url` (GitHub's API and raw files)."""
    req = urllib.request.Request(url, headers={"User-Agent": "ladr-lab-rules-refresh",
                                               "Accept": "application/vnd.github+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - fixed https URLs
        return resp.read()


def convert(toml_text: str, source: dict) -> dict:
    """The JSON document the masker loads: the parsed TOML under "config", where it came from under "source"."""
    import tomllib

    config = tomllib.loads(toml_text)
    for rule in config.get("rules", ()):
        if rule.get("regex"):
            translate(rule["regex"])  # fails here, not in a run, when upstream uses syntax we do not translate
    return {"source": source, "config": config}


def write(toml_text: str, license_text: str | None, source: dict, folder: Path = HERE) -> Path:
    """Write the TOML, the licence and the JSON conversion into `folder`; return the JSON's path."""
    doc = convert(toml_text, source)
    (folder / "gitleaks.toml").write_text(toml_text, encoding="utf-8")
    if license_text is not None:
        (folder / "LICENSE-gitleaks").write_text(license_text, encoding="utf-8")
    out = folder / DATA.name
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    """Fetch (or take from disk) gitleaks' default rules and write the vendored copy."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="master", help="branch, tag or commit of gitleaks (default master)")
    ap.add_argument("--toml", help="convert this gitleaks.toml instead of downloading one")
    ap.add_argument("--license", help="with --toml: upstream's LICENSE file")
    ap.add_argument("--commit", help="with --toml: the upstream commit it is from")
    ap.add_argument("--describe", help="with --toml: `git describe --tags` of that commit")
    ap.add_argument("--date", help="with --toml: the commit's date")
    a = ap.parse_args(argv)
    if sys.version_info < (3, 11):
        print("refreshing the rules needs Python 3.11 or newer (tomllib)", file=sys.stderr)
        return 2
    if a.toml:
        if not a.commit:
            print("--toml needs --commit (the upstream commit the file is from)", file=sys.stderr)
            return 2
        toml_text = Path(a.toml).read_text(encoding="utf-8")
        license_text = Path(a.license).read_text(encoding="utf-8") if a.license else None
        source = {"commit": a.commit, "describe": a.describe or a.ref, "date": a.date}
    else:
        info = json.loads(_get(f"https://api.github.com/repos/{REPO}/commits/{a.ref}"))
        sha = info["sha"]
        raw = f"https://raw.githubusercontent.com/{REPO}/{sha}"
        toml_text = _get(f"{raw}/config/gitleaks.toml").decode("utf-8")
        license_text = _get(f"{raw}/LICENSE").decode("utf-8")
        source = {"commit": sha, "describe": a.ref, "date": info["commit"]["committer"]["date"]}
    source = {"repository": f"https://github.com/{REPO}", "path": "config/gitleaks.toml", "license": "MIT",
              **source}
    out = write(toml_text, license_text, source)
    print(f"wrote {out} ({len(json.loads(out.read_text())['config']['rules'])} rules, commit {source['commit']})")
    return 0


__all__ = ["REPO", "convert", "main", "write"]

if __name__ == "__main__":
    raise SystemExit(main())

"""The MCP face under a file that flips between a regular file and a link out of the slate while it is read."""
from __future__ import annotations

import os
import threading
import time

import pytest

if os.environ.get("LADR_REQUIRE_MCP") != "1":
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'ladr_lab[mcp]'); "
                                      "LADR_REQUIRE_MCP=1 makes this a failure")

import anyio  # noqa: E402 - after the skip: the SDK brings it
import mcp_types as types  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from ladr_lab.server.mcp_server import build_mcp_server  # noqa: E402
from ladr_lab.server.protocol import INVALID_PARAMS, RESOURCE_NOT_FOUND  # noqa: E402
from ladr_lab.server.resources import SlateResources  # noqa: E402
from ladr_lab.slate import SlateStore  # noqa: E402


def test_a_file_flipping_to_a_link_outside_reads_as_its_content_or_the_documented_error(tmp_path):
    root = tmp_path / "Notes"
    (root / "docs").mkdir(parents=True)
    target = root / "docs" / "flip.md"
    target.write_text("inside\n", encoding="utf-8")
    (root / "docs" / "keep.md").write_text("keep\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("SECRET outside\n", encoding="utf-8")
    store = SlateStore()
    store.bind("Notes", root)
    server = build_mcp_server(engine=None, resources=SlateResources(store))  # the resource path needs no engine
    handler = server._request_handlers["resources/read"].handler
    stop = threading.Event()

    def flip() -> None:
        tmp_file, tmp_link = root / "docs" / ".flip-file", root / "docs" / ".flip-link"
        while not stop.is_set():
            tmp_file.write_text("inside\n", encoding="utf-8")
            os.replace(tmp_file, target)
            os.symlink(tmp_path / "outside.md", tmp_link)
            os.replace(tmp_link, target)

    answers: dict[str, int] = {}

    async def reads() -> None:
        deadline = time.monotonic() + 2.0
        n = 0
        while time.monotonic() < deadline and n < 2000:
            n += 1
            params = types.ReadResourceRequestParams(uri="slate:Notes/docs/flip.md")
            try:
                result = await handler(None, params)
            except MCPError as exc:
                assert exc.error.code in (INVALID_PARAMS, RESOURCE_NOT_FOUND), exc.error
                key = f"error {exc.error.code}"
            else:
                assert [c.text for c in result.contents] == ["inside\n"]
                key = "content"
            answers[key] = answers.get(key, 0) + 1

    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        anyio.run(reads)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert answers.get("content")

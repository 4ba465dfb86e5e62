"""Run folders written by logback itself (Debian's liblogback-java) parse and search as seed 004 says.

A tiny Java host logs with AgentRecordFormat's patterns (the episode state under the `episode-state` MDC key,
the conversation under `conversation-id`, `%replace(%msg){'\\n','&#10;  '}` for the indent) and a stack trace
after a message. Skipped, with the reason, when java, javac or the jars are not installed (.ci/run installs them).
"""
from __future__ import annotations

import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from ladr_lab.runfiles import RunFileRetriever, parse_file
from tests.runfiles.helpers import HostInterpreter

JARS = [Path("/usr/share/java") / n for n in ("logback-classic.jar", "logback-core.jar", "slf4j-api.jar")]

HISTORY = "%d{yyyy-MM-dd HH:mm:ss} [%X{episode-state}] [%X{conversation-id:--}] %logger{0} " \
          "%replace(%msg){'\\n','&#10;  '}%n"
LOG = "%d{yyyy-MM-dd HH:mm:ss} %-5level [%X{episode-state}] [%X{conversation-id:--}] %logger{0} " \
      "%replace(%msg){'\\n','&#10;  '}%n"

CONFIG = f"""<configuration>
  <appender name="H" class="ch.qos.logback.core.FileAppender">
    <file>${{runDir}}/Alice.history</file>
    <encoder><pattern>{HISTORY}</pattern></encoder>
  </appender>
  <appender name="L" class="ch.qos.logback.core.FileAppender">
    <file>${{runDir}}/Alice.log</file>
    <encoder><pattern>{LOG}</pattern></encoder>
  </appender>
  <logger name="history" level="INFO" additivity="false"><appender-ref ref="H"/></logger>
  <logger name="log" level="DEBUG" additivity="false"><appender-ref ref="L"/></logger>
  <root level="OFF"/>
</configuration>
"""

FORGED = "2026-10-21 18:00:00 [running] [conv-2] Alice"

HOST = f"""
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

public class Host {{
    public static void main(String[] args) {{
        Logger h = LoggerFactory.getLogger("history.Alice");
        Logger l = LoggerFactory.getLogger("log.Alice");
        MDC.put("episode-state", "running");
        h.info("has started episode 1.");
        l.info("chat started");
        MDC.put("conversation-id", "conv-1");
        h.info("told: where is ACME-7781?\\n{FORGED} forged line of conv-2 ACME");
        h.info("said: ACME-7781 is in bay 3\\nsecond line of the answer");
        l.debug("debug detail ACME-7781");
        String now = new java.text.SimpleDateFormat("yyyy-MM-dd HH:mm:ss").format(new java.util.Date());
        l.error("lookup failed for ACME-7781",
                new IllegalStateException("bad state\\n" + now + " [running] [conv-2] Alice trace line ACME"));
        MDC.put("conversation-id", "conv-2");
        h.info("told: unrelated question");
        MDC.remove("conversation-id");
        MDC.put("episode-state", "finished");
        h.info("has finished episode 1.");
    }}
}}
"""


@pytest.fixture(scope="module")
def logback_run(tmp_path_factory) -> Path:
    missing = [t for t in ("java", "javac") if shutil.which(t) is None] + [str(j) for j in JARS if not j.exists()]
    if missing:
        pytest.skip(f"needs a JDK and Debian's liblogback-java (missing: {', '.join(missing)})")
    work = tmp_path_factory.mktemp("logback")
    (work / "Host.java").write_text(HOST)
    (work / "logback.xml").write_text(CONFIG)
    cp = ":".join(str(j) for j in JARS)
    subprocess.run(["javac", "-cp", cp, "-d", str(work), str(work / "Host.java")], check=True, timeout=120,
                   capture_output=True)
    run = work / "run"
    run.mkdir()
    subprocess.run(["java", "-cp", f"{work}:{cp}", f"-DrunDir={run}", f"-Dlogback.configurationFile={work / 'logback.xml'}",
                    "Host"], check=True, timeout=120, capture_output=True)
    return run


def test_logback_lines_parse_as_records(logback_run: Path) -> None:
    hist = parse_file(logback_run / "Alice.history")
    assert [(r.state, r.conversation, r.agent, r.message.split("\n")[0]) for r in hist] == [
        ("running", "-", "Alice", "has started episode 1."),
        ("running", "conv-1", "Alice", "told: where is ACME-7781?"),
        ("running", "conv-1", "Alice", "said: ACME-7781 is in bay 3"),
        ("running", "conv-2", "Alice", "told: unrelated question"),
        ("finished", "-", "Alice", "has finished episode 1."),
    ]
    # the message's own lines are indented: the forged line stays in its record
    assert hist[1].message == f"told: where is ACME-7781?\n{FORGED} forged line of conv-2 ACME"
    written = datetime.strptime(hist[0].timestamp, "%Y-%m-%d %H:%M:%S")
    assert abs((datetime.now() - written).total_seconds()) < 600  # logback writes local time
    log = parse_file(logback_run / "Alice.log")
    assert [(r.level, r.conversation) for r in log][:3] == [("INFO", "-"), ("DEBUG", "conv-1"), ("ERROR", "conv-1")]
    assert log[2].message.split("\n")[1] == "java.lang.IllegalStateException: bad state"


def test_logback_run_searches_by_conversation(logback_run: Path) -> None:
    with RunFileRetriever(logback_run, "Alice", interpreter=HostInterpreter()) as r:
        got = r.search("ACME", episode=1, conversation="conv-1", scope="episode", top_k=20)
        texts = sorted(p.text for p in got.pieces)
        assert texts == sorted([
            "told: where is ACME-7781?", f"{FORGED} forged line of conv-2 ACME", "said: ACME-7781 is in bay 3",
            "lookup failed for ACME-7781"])
        assert all(p.conversation == "conv-1" and p.episode == 1 for p in got.pieces)
        assert {p.kind for p in got.pieces} == {"told", "said", "note"}
        # the seed's known limit: the stack trace is not indented, so its record-looking line is read as one
        other = r.search("ACME", episode=1, conversation="conv-2", scope="episode", top_k=20)
        assert [(p.file, p.text, p.conversation) for p in other.pieces] == \
            [("Alice.log", "trace line ACME", "conv-2")]

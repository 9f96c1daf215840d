"""`brain chat` on a real pseudo-terminal against a real server: what a user at a terminal sees."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from brain.client import Brain
from tests.support.noting import NOTING, note
from tests.support.server import BrainServer, serving
from tests.support.terminal import CTRL_C, Terminal
from tests.support.waiting import wait_for

SLOW_MODEL = """
[models.slow]
provider = "scripted"
script = [{text = "done", delay_ms = 1500}]

[models.tooly]
provider = "scripted"
script = [{tool_calls = [{name = "echo", input = {word = "sun"}}]}, {text = "It is sunny."}]

[models.chunky]
provider = "scripted"
script = [{text = "abcdefgh", stream_chunks = 4, chunk_delay_ms = 400}]
""" + NOTING


# One server of each kind for the module: every test works in a session of its own (the
# scripted models answer from the session's own transcript), and none stops or restarts it.
@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    yield from serving(tmp_path_factory.mktemp("slow"), SLOW_MODEL)


@pytest.fixture(scope="module")
def brain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    server = BrainServer(tmp_path_factory.mktemp("plain") / "data").start()
    try:
        yield server
    finally:
        server.kill()


def chat_env(server: BrainServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env.update({"BRAIN_LISTEN": f"127.0.0.1:{server.port}", "BRAIN_API_TOKEN": server.token,
                "TERM": "dumb"})
    return env


def chat(server: BrainServer, *args: str) -> Terminal:
    return Terminal([sys.executable, "-m", "brain.cli", "chat", *args], chat_env(server))


def session_events(server: BrainServer, sid: str) -> list[str]:
    return [e["kind"] for e in server.events(sid)]


def test_a_turn_streams_its_answer_and_the_commands_work(brain_server):
    term = chat(brain_server, "--tools", "echo")
    try:
        at = term.expect("/help for commands")
        sid = term.text.split("session ", 1)[1].split(" ", 1)[0]
        term.type(b"hello there\n")
        at = term.expect("echo: hello there", start=at)  # the scripted model's answer
        at = term.expect("> ", start=at)
        term.type(b"/transcript\n")
        at = term.expect("user: hello there", start=at)
        at = term.expect("assistant: echo: hello there", start=at)
        term.type(b"/events 3\n")
        at = term.expect("turn_ended", start=at)
        lines = [line for line in term.text[at - 200:at].splitlines() if line.startswith("#")]
        assert lines and lines[-1].split()[1] == "turn_ended"
        term.type(b"/end\n")
        term.expect(f"session {sid} ended", start=at)
        assert term.wait() == 0
        assert "Traceback" not in term.text, term.text
    finally:
        term.close()
    assert brain_server.request("GET", f"/v1/sessions/{sid}").json()["status"] == "ended"


def test_quit_leaves_the_session_open(brain_server):
    term = chat(brain_server)
    try:
        term.expect("/help for commands")
        sid = term.text.split("session ", 1)[1].split(" ", 1)[0]
        term.type(b"/quit\n")
        term.expect(f"left session {sid}")
        assert term.wait() == 0
        assert "Traceback" not in term.text, term.text
    finally:
        term.close()
    assert brain_server.request("GET", f"/v1/sessions/{sid}").json()["status"] != "ended"


def test_ctrl_c_interrupts_a_held_turn_and_a_second_one_leaves(slow_server):
    term = chat(slow_server, "--model", "slow")
    try:
        at = term.expect("/help for commands")
        sid = term.text.split("session ", 1)[1].split(" ", 1)[0]
        term.type(b"take your time\n")
        # The turn is held by the model's 1.5 s delay: interrupt it once it is running.
        wait_for(lambda: "model_call_started" in session_events(slow_server, sid),
                 what="model call started")
        term.type(CTRL_C)
        at = term.expect("[interrupting", start=at)
        at = term.expect("[turn failed: cancelled", start=at)
        at = term.expect("> ", start=at)
        assert "done" not in term.text[at:]
        term.type(b"again please\n")
        wait_for(lambda: session_events(slow_server, sid).count("model_call_started") == 2,
                 what="second model call started")
        term.type(CTRL_C)
        term.expect("[interrupting", start=at)
        term.type(CTRL_C)
        term.expect(f"left session {sid}", start=at)
        assert term.wait(timeout=15) == 0
        assert "Traceback" not in term.text, term.text
    finally:
        term.close()
    assert "cancel_requested" in session_events(slow_server, sid)


def test_not_a_terminal_one_message_in_the_answer_out(brain_server):
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat"], input="ping from a pipe\n",
                          capture_output=True, text=True, env=chat_env(brain_server), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo: ping from a pipe"
    assert done.stderr.startswith("session ")


def test_a_wrong_token_is_said_in_one_line(brain_server):
    env = chat_env(brain_server) | {"BRAIN_API_TOKEN": "wrong"}
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat"], input="hi\n",
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1
    assert "unauthorized" in done.stderr.lower()


def test_the_token_comes_from_the_data_directory_last(brain_server, tmp_path):
    env = chat_env(brain_server)
    del env["BRAIN_API_TOKEN"]
    data = tmp_path / "chat-data"
    data.mkdir()
    (data / "operator.token").write_text(brain_server.token + "\n")
    env["BRAIN_DATA_DIR"] = str(data)
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat"], input="from the file\n",
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.stdout.strip() == "echo: from the file", done.stderr


def test_the_answer_streams_in_as_deltas_arrive(slow_server):
    term = chat(slow_server, "--model", "chunky")
    try:
        at = term.expect("/help for commands")
        term.type(b"stream it\n")
        at = term.expect("stream it\n", start=at)
        at = term.expect("ab", start=at)
        assert "abcdefgh" not in term.text[at - 2:], "the whole answer came at once"
        term.expect("abcdefgh", start=at - 2)
        term.type(b"/quit\n")
        assert term.wait() == 0
        assert "Traceback" not in term.text, term.text
    finally:
        term.close()


def test_tool_calls_and_their_outcomes_show_as_they_commit(slow_server):
    term = chat(slow_server, "--model", "tooly", "--tools", "echo")
    try:
        at = term.expect("/help for commands")
        term.type(b"weather?\n")
        at = term.expect('⚙ echo {"word": "sun"}', start=at)
        at = term.expect("✓ echo", start=at)
        term.expect("It is sunny.", start=at)
        term.type(b"/quit\n")
        assert term.wait() == 0
        assert "Traceback" not in term.text, term.text
    finally:
        term.close()


def test_extension_events_show_with_their_origin(slow_server):
    with Brain(slow_server.url, slow_server.token) as brain:
        host = brain.serve_host(tools={"note": note})
        term = chat(slow_server, "--model", "noting", "--tools", "note")
        try:
            at = term.expect("/help for commands")
            term.type(b"note the weather\n")
            at = term.expect("✓ note noted", start=at)
            at = term.expect('weather.noted (from tool #', start=at)
            at = term.expect('{"topic": "rain"}', start=at)
            term.expect("noted\n", start=at)
            term.type(b"/quit\n")
            assert term.wait() == 0
            assert "Traceback" not in term.text, term.text
        finally:
            term.close()
            host.stop()


def test_no_token_anywhere_is_one_line_and_exit_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    env["BRAIN_DATA_DIR"] = str(tmp_path / "empty")
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat"], input="hi\n",
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no token" in done.stderr


def test_attach_to_a_session_by_id(brain_server):
    sid = brain_server.create_session()["id"]
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat", sid], input="again\n",
                          capture_output=True, text=True, env=chat_env(brain_server), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "echo: again" and done.stderr == f"session {sid}\n"
    assert "turn_ended" in session_events(brain_server, sid)


def test_attach_to_a_missing_session_is_one_line(brain_server):
    done = subprocess.run([sys.executable, "-m", "brain.cli", "chat", "nope"], input="hi\n",
                          capture_output=True, text=True, env=chat_env(brain_server), timeout=60)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "not_found" in done.stderr, done.stderr

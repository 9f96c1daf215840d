"""The console in a real headless Chromium against a real server: what an operator does with it.

Skipped, with the reason, where Selenium, chromium or chromedriver is missing. Screenshots go
to BRAIN_SCREENSHOT_DIR when set (so a person can look at them), else to the test's tmp dir.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain.client import Brain
from tests.console.browser import (
    WAIT_SECS,
    browser,
    missing_browser,
    screenshot,
    script_errors,
)
from tests.support.damage import damage_first_record
from tests.support.guests import example_guest
from tests.support.noting import NOTING, note
from tests.support.server import BrainServer, serving

# What the browser runs is the console's JavaScript, the same on any Python (slow_e2e).
pytestmark = [pytest.mark.skipif(missing_browser() is not None,
                                 reason=missing_browser() or "a browser is here"),
              pytest.mark.slow_e2e]

MODELS = """
[models.slow]
provider = "scripted"
script = [{text = "done", delay_ms = 4000}]

[models.chunky]
provider = "scripted"
script = [{text = "one two three four five six", stream_chunks = 6, chunk_delay_ms = 400}]
""" + NOTING


SIDEWAYS = "return document.documentElement.scrollWidth - window.innerWidth"

# Holds the answer to a cancel back in the page for 1.5 s, and records (0.2 s after the page
# had it) that it was delivered.
LATE_CANCEL_ACK = """
const shippedFetch = window.fetch;
window.fetch = async (url, init) => {
  const response = await shippedFetch(url, init);
  if (String(url).endsWith("/cancel")) {
    await new Promise((resolve) => setTimeout(resolve, 1500));
    setTimeout(() => { window.cancelAcknowledged = true; }, 200);
  }
  return response;
};
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BrainServer]:
    yield from serving(tmp_path, MODELS)


@pytest.fixture
def driver() -> Iterator:
    yield from browser()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("BRAIN_SCREENSHOT_DIR") or tmp_path / "screenshots")


def wait(driver, condition, what: str, timeout: float = WAIT_SECS, shown=None):
    """Poll `condition` until it holds. A row the page replaced between being found and being
    read (a list re-rendered by a filter or a page change) means "not yet", not a failure.
    On a timeout, `shown(driver)` (when given) says what the page showed instead."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.05,
                             ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: condition(d), message=f"waiting for {what}")
    except TimeoutException as timeout_error:
        if shown is None:
            raise
        raise TimeoutException(f"waiting for {what}; the page showed {shown(driver)!r}") \
            from timeout_error


def choose(select_element, value: str) -> None:
    from selenium.webdriver.support.select import Select

    Select(select_element).select_by_value(value)


def find(driver, css: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, css)


def finds(driver, css: str) -> list:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def sign_in(driver, server: BrainServer) -> None:
    driver.get(server.url + "/console")
    wait(driver, lambda d: finds(d, "#token"), "the token form")
    find(driver, "#token").send_keys(server.token)
    find(driver, "#save-token").click()
    wait(driver, lambda d: finds(d, "#sessions"), "the session list")


def confirm_and_click(driver, css: str) -> None:
    find(driver, css).click()
    wait(driver, lambda d: _alert(d), f"the confirmation of {css}").accept()


def _alert(driver):
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None


def event_kinds(driver) -> list[str]:
    return [row.get_attribute("data-kind") for row in finds(driver, "#events .event")]


def test_create_send_stream_interrupt_end_delete(server, driver, shots):
    sign_in(driver, server)
    assert server.token not in driver.current_url

    # Create a session with the streaming model and send a message; the answer streams in.
    find(driver, "#new-model").send_keys("chunky")
    find(driver, "#create").click()
    wait(driver, lambda d: "#/s/" in d.current_url and finds(d, "#live.on"), "the live session")
    sid = driver.current_url.rsplit("/", 1)[1]
    find(driver, "#message").send_keys("count for me")
    find(driver, "#send").click()
    partial = wait(driver, lambda d: (t := find(d, "#pending").text) and
                   t != "one two three four five six" and t, "a partly streamed answer")
    assert "one two three four five six".startswith(partial), partial
    wait(driver, lambda d: "one two three four five six" in find(d, "#transcript").text,
         "the answer in the transcript")
    wait(driver, lambda d: "ended" in find(d, "#turn-result").text, "the send's answer")
    assert {"turn_started", "model_call_started", "turn_ended"} <= set(event_kinds(driver))
    screenshot(driver, shots, "console-session")

    # A held turn on the slow model: submitted, then interrupted with a confirmation.
    held = server.create_session(model="slow")["id"]
    driver.get(f"{server.url}/console#/s/{held}")
    wait(driver, lambda d: finds(d, "#live.on"), "the held session's live stream")
    find(driver, "#mode").send_keys("submit")
    find(driver, "#message").send_keys("take your time")
    find(driver, "#send").click()
    wait(driver, lambda d: "model_call_started" in event_kinds(d), "the held model call")
    confirm_and_click(driver, "#interrupt")
    wait(driver, lambda d: "turn_failed" in event_kinds(d), "the interrupted turn")
    failed = find(driver, '#events .event[data-kind="turn_failed"]').text
    assert "cancelled" in failed
    assert "cancel_requested" in event_kinds(driver)

    # A held send (the composer waits for its answer) interrupted the same way. The cancel's
    # own acknowledgement is held back in the page until after the send's answer, the order a
    # loaded server may produce: the answer must stay.
    driver.execute_script(LATE_CANCEL_ACK)
    find(driver, "#mode").send_keys("send")
    find(driver, "#message").send_keys("and again")
    find(driver, "#send").click()
    wait(driver, lambda d: event_kinds(d).count("model_call_started") == 2, "the second call")
    assert "waiting" in find(driver, "#turn-result").text
    confirm_and_click(driver, "#interrupt")
    wait(driver, lambda d: "failed (cancelled)" in find(d, "#turn-result").text,
         "the send's cancelled answer",
         shown=lambda d: (find(d, "#turn-result").text, event_kinds(d)))
    wait(driver, lambda d: d.execute_script("return window.cancelAcknowledged === true"),
         "the late cancel acknowledgement")
    assert "failed (cancelled)" in find(driver, "#turn-result").text

    # End, then delete, each after a confirmation.
    confirm_and_click(driver, "#end")
    wait(driver, lambda d: find(d, "#session-status").text == "ended", "the ended badge")
    assert not find(driver, "#send").is_enabled() and not find(driver, "#end").is_enabled()
    assert find(driver, "#delete").is_enabled()
    confirm_and_click(driver, "#delete")
    wait(driver, lambda d: finds(d, "#sessions tr"), "the list after the delete")
    assert server.request("GET", f"/v1/sessions/{held}").status_code == 404
    rows = [r.get_attribute("data-id") for r in finds(driver, "#sessions tr[data-id]")]
    assert sid in rows and held not in rows

    # An API error is shown as the API's message: a second delete of the gone session.
    driver.get(f"{server.url}/console#/s/{held}")
    wait(driver, lambda d: find(d, "#error").is_displayed(), "the error banner")
    assert "not_found" in find(driver, "#error").text
    screenshot(driver, shots, "console-error")
    assert script_errors(driver) == []


def test_filter_and_pages(server, driver, shots):
    ids = sorted(server.create_session()["id"] for _ in range(22))
    server.request("POST", f"/v1/sessions/{ids[0]}/end")
    sign_in(driver, server)
    wait(driver, lambda d: len(finds(d, "#sessions tr[data-id]")) == 20, "a full first page")
    screenshot(driver, shots, "console-list")
    find(driver, "#next-page").click()
    wait(driver, lambda d: len(finds(d, "#sessions tr[data-id]")) == 2, "the second page")
    # Select by value: typing into a <select> relies on the browser's type-ahead, which resets
    # between slow keystrokes and can land on `ending` on a loaded machine.
    choose(find(driver, "#status-filter"), "ended")
    wait(driver, lambda d: [r.get_attribute("data-id") for r in finds(d, "#sessions tr[data-id]")]
         == [ids[0]], "only the ended session")


def test_phone_width_has_no_sideways_scroll(server, driver, shots):
    sid = server.create_session()["id"]
    server.send(sid, "hello from a phone")
    driver.set_window_size(390, 844)
    sign_in(driver, server)
    wait(driver, lambda d: finds(d, f'#sessions tr[data-id="{sid}"]'), "the list")
    assert driver.execute_script(SIDEWAYS) <= 0, "the list is wider than a phone"
    screenshot(driver, shots, "console-phone-list")
    driver.get(f"{server.url}/console#/s/{sid}")
    wait(driver, lambda d: "hello from a phone" in find(d, "#transcript").text, "the transcript")
    wait(driver, lambda d: len(event_kinds(d)) >= 3, "the Events")
    time.sleep(0.2)  # let layout settle after the last Event row
    overflow = driver.execute_script(SIDEWAYS)
    assert overflow <= 0, f"the page is {overflow}px wider than a phone"
    screenshot(driver, shots, "console-phone")


def test_a_damaged_session_is_shown_as_damaged(server, driver, shots):
    sid = server.create_session()["id"]
    server.send(sid, "before the damage")
    server.kill()
    damage_first_record(server.data_dir / "sessions" / sid)
    server.start()
    sign_in(driver, server)
    wait(driver, lambda d: "damaged" in find(d, f'#sessions tr[data-id="{sid}"]').text,
         "the damaged badge in the list")
    driver.get(f"{server.url}/console#/s/{sid}")
    wait(driver, lambda d: find(d, "#damaged").is_displayed() and
         "session_damaged" in find(d, "#damaged").text, "the damage and its error")
    segment = f"sessions/{sid}/journal/{1:020d}.seg"
    wait(driver, lambda d: find(d, "#damage").is_displayed(), "where the journal is damaged")
    shown = find(driver, "#damage").text
    for part in (segment, "32", "payload checksum mismatch", "sequence"):
        assert part in shown, shown  # the Session's `damage`, as `brain journal verify` says it
    assert f"brain journal verify {sid}" in find(driver, "#damaged").text  # what to do next
    assert not find(driver, "#send").is_enabled() and find(driver, "#delete").is_enabled()
    screenshot(driver, shots, "console-damaged")
    assert script_errors(driver) == []


def test_extension_events_show_their_origin(server, driver):
    with Brain(server.url, server.token) as brain:
        host = brain.serve_host(tools={"note": note})
        sid = server.create_session(model="noting", tools=["note"])["id"]
        assert server.send(sid, "note the weather")["status"] == "ended"
        host.stop()
    sign_in(driver, server)
    driver.get(f"{server.url}/console#/s/{sid}")
    wait(driver, lambda d: "weather.noted" in event_kinds(d), "the extension Event")
    started = [e for e in server.events(sid) if e["kind"] == "tool_call_started"][0]["sequence"]
    row = find(driver, '#events .event.extension[data-kind="weather.noted"]').text
    assert f"from tool #{started}" in row
    assert '{"topic":"rain"}' in row


def test_fork_here_on_an_event_opens_the_fork(server, driver, shots):
    sid = server.create_session()["id"]
    server.send(sid, "the first question")
    server.send(sid, "the second question")
    first_end = [e for e in server.events(sid) if e["kind"] == "turn_ended"][0]["sequence"]
    sign_in(driver, server)
    driver.get(f"{server.url}/console#/s/{sid}")
    wait(driver, lambda d: event_kinds(d).count("turn_ended") == 2, "both turns' Events")
    # Only records outside a turn offer it: never one between turn_started and turn_ended.
    offered = {row.get_attribute("data-kind") for row in finds(driver, "#events .event")
               if row.find_elements("css selector", "button.fork")}
    assert offered == {"session_created", "turn_ended"}, offered
    find(driver, f'#events .event[data-seq="{first_end}"] summary').click()
    screenshot(driver, shots, "console-fork-here")
    confirm_and_click(driver, f'#events .event[data-seq="{first_end}"] button.fork')
    wait(driver, lambda d: "#/s/" in d.current_url and not d.current_url.endswith(sid),
         "the fork's page")
    child = driver.current_url.rsplit("/", 1)[1]
    wait(driver, lambda d: "the first question" in find(d, "#transcript").text, "its transcript")
    assert "the second question" not in find(driver, "#transcript").text
    wait(driver, lambda d: event_kinds(d)[:2] == ["forked_from", "session_created"],
         "its first Events")
    assert f"from {sid} #{first_end}" in find(driver, '#events .event[data-seq="1"]').text
    assert server.events(child)[0]["data"] == {"session_id": sid, "sequence": first_end}
    screenshot(driver, shots, "console-fork")
    find(driver, '#events .event[data-seq="1"] summary').click()
    find(driver, '#events .event[data-seq="1"] a.parent').click()
    wait(driver, lambda d: d.current_url.endswith(f"#/s/{sid}") and
         "the second question" in find(d, "#transcript").text, "back on the parent's page")
    assert script_errors(driver) == []


def test_replay_this_turn_shows_the_report(tmp_path, driver, shots):
    """On a finished turn's Event: the session's own loop agrees, another configured one
    diverges with both sides shown, and an unknown name is refused in the error bar."""
    counter = example_guest("turn_counter")
    running = serving(tmp_path, f'[agentloops.counter]\npath = "{counter}"\n')
    server = next(running)
    try:
        replay_with(server, driver, shots)
    finally:
        running.close()


def replay_with(server: BrainServer, driver, shots) -> None:
    sid = server.create_session()["id"]
    server.send(sid, "a turn to replay")
    end = [e for e in server.events(sid) if e["kind"] == "turn_ended"][0]["sequence"]
    sign_in(driver, server)
    driver.get(f"{server.url}/console#/s/{sid}")
    wait(driver, lambda d: "turn_ended" in event_kinds(d), "the turn's end")
    row = f'#events .event[data-seq="{end}"]'
    report = f"{row} pre.replay-report"
    assert [r.get_attribute("data-kind") for r in finds(driver, "#events .event")
            if r.find_elements("css selector", "button.replay")] == ["turn_ended"]
    find(driver, f"{row} summary").click()
    find(driver, f"{row} button.replay").click()
    wait(driver, lambda d: "no divergence" in find(d, report).text,
         "the report of the session's own loop")
    assert "1. transcript.read answered" in find(driver, report).text
    find(driver, f"{row} input.replay-agentloop").send_keys("counter")
    find(driver, f"{row} button.replay").click()
    wait(driver, lambda d: "diverged at guest call" in find(d, report).text,
         "the report of another loop")
    assert "diverged" in find(driver, report).get_attribute("class")
    assert "journal: " in find(driver, report).text and "asked: " in find(driver, report).text
    screenshot(driver, shots, "console-replay")
    find(driver, f"{row} input.replay-agentloop").clear()
    find(driver, f"{row} input.replay-agentloop").send_keys("nonesuch")
    find(driver, f"{row} button.replay").click()
    wait(driver, lambda d: "unknown name 'nonesuch'" in find(d, "#error").text,
         "the refusal in the error bar")
    assert script_errors(driver) == []

"""A session actor's unreported releases (brain/actors/session/release_report.py): one report
covers
every release of the session since the last, with the commands handled and the opens summed and
the metric deltas merged; it is due REPORT_DELAY_SECS after the latest release."""

from __future__ import annotations

import pytest

from brain.actors.session.release_report import REPORT_DELAY_SECS, ReleaseReports
from brain.protocol.messages import Released


def test_nothing_pending_reports_nothing() -> None:
    reports = ReleaseReports()
    assert reports.due_in(100.0) is None
    assert reports.take() is None


def test_one_report_covers_every_release_since_the_last() -> None:
    reports = ReleaseReports()
    reports.add("s1", 2, {("brain_turns_total", ()): 1.0}, {"commit": [0.001]}, now=10.0)
    reports.add("s1", 1, {("brain_turns_total", ()): 1.0}, {"commit": [0.002]}, now=10.03)
    assert reports.due_in(10.03) == pytest.approx(REPORT_DELAY_SECS)
    assert reports.due_in(10.03 + REPORT_DELAY_SECS + 1) == 0.0
    assert reports.take() == Released("s1", 3, {("brain_turns_total", ()): 2.0},
                                      {"commit": [0.001, 0.002]}, opens=2)
    assert reports.take() is None, "taken once"


def test_the_delay_counts_from_the_latest_release() -> None:
    reports = ReleaseReports()
    reports.add("s1", 1, {}, {}, now=10.0)
    reports.add("s1", 1, {}, {}, now=10.2)
    assert reports.due_in(10.2) == pytest.approx(REPORT_DELAY_SECS)


def test_a_release_of_another_session_while_one_is_unreported_is_refused() -> None:
    reports = ReleaseReports()
    reports.add("s1", 1, {}, {}, now=10.0)
    with pytest.raises(ValueError):
        reports.add("s2", 1, {}, {}, now=10.1)
    assert reports.take() == Released("s1", 1, {}, {}, opens=1)


# --- when the report goes --------------------------------------------------------------------

def no_backlog() -> bool:
    return False


def backlog_read_anyway() -> bool:
    raise AssertionError("the admission board was read although the answer was already known")


def released(reports: ReleaseReports, now: float = 10.0, backlog=no_backlog) -> float | None:
    reports.add("s1", 1, {}, {}, now=now)
    return reports.released(backlog)


def test_with_no_more_sessions_than_cpus_the_report_goes_at_once() -> None:
    reports = ReleaseReports()
    reports.busy = False
    assert released(reports, backlog=backlog_read_anyway) == 0.0


def test_while_busy_the_report_waits_and_the_timer_is_armed_once() -> None:
    reports = ReleaseReports()
    reports.busy = True
    assert released(reports) == REPORT_DELAY_SECS
    assert reports.armed
    assert released(reports, now=10.1) is None, "the timer already set covers the new release"


def test_while_busy_a_backlog_on_the_board_sends_the_report_at_once() -> None:
    reports = ReleaseReports()
    reports.busy = True
    assert released(reports, backlog=lambda: True) == 0.0


def test_an_ask_while_idle_reports_now_and_while_serving_at_the_next_release() -> None:
    reports = ReleaseReports()
    reports.busy = True
    assert reports.asked(serving=False)
    assert not reports.asked(serving=True)
    assert released(reports, backlog=backlog_read_anyway) == 0.0, "asked: not held back"
    reports.take()
    assert released(reports, now=11.0) == REPORT_DELAY_SECS, "the ask covered one report only"


def test_the_timer_reports_when_due_and_re_arms_for_a_later_release() -> None:
    reports = ReleaseReports()
    reports.busy = True
    released(reports, now=10.0)
    released(reports, now=10.2)  # the delay now counts from here
    assert reports.due(serving=False, now=10.0 + REPORT_DELAY_SECS, backlog=no_backlog) \
        == pytest.approx(0.2)
    assert reports.armed
    assert reports.due(serving=False, now=10.2 + REPORT_DELAY_SECS, backlog=no_backlog) == 0.0
    assert not reports.armed


def test_the_timer_sends_an_early_report_when_work_waits() -> None:
    reports = ReleaseReports()
    reports.busy = True
    released(reports, now=10.0)
    assert reports.due(serving=False, now=10.01, backlog=lambda: True) == 0.0


def test_the_timer_does_nothing_while_the_session_is_served_again() -> None:
    reports = ReleaseReports()
    reports.busy = True
    released(reports, now=10.0)
    assert reports.due(serving=True, now=20.0, backlog=backlog_read_anyway) is None
    assert not reports.armed, "the next release arms it afresh"
    assert released(reports, now=21.0) == REPORT_DELAY_SECS


def test_the_timer_with_nothing_pending_does_nothing() -> None:
    reports = ReleaseReports()
    assert reports.due(serving=False, now=10.0, backlog=backlog_read_anyway) is None

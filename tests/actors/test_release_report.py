"""A session actor's unreported releases (brain/actors/release_report.py): one report covers
every release of the session since the last, with the commands handled and the opens summed and
the metric deltas merged; it is due REPORT_DELAY_SECS after the latest release."""

from __future__ import annotations

import pytest

from brain.actors.messages import Released
from brain.actors.release_report import REPORT_DELAY_SECS, ReleaseReports


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

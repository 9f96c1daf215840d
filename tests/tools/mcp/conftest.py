"""Per-test alarm, so that a hung test fails instead of hanging the run."""

from tests.support.alarm import per_test_alarm  # noqa: F401 - autouse for this package

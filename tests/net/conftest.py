"""Real local servers (tests/models/fakes.py), a throwaway TLS certificate, a per-test alarm."""

from __future__ import annotations

import ssl

import pytest

from tests.models.fakes import FakeServer
from tests.support.alarm import per_test_alarm  # noqa: F401 - autouse for this package


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def tls_server(certificate):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    with FakeServer(tls=context) as fake:
        yield fake


@pytest.fixture
def trusting(certificate) -> ssl.SSLContext:
    """A client context that trusts the throwaway certificate."""
    return ssl.create_default_context(cafile=str(certificate[0]))

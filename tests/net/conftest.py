"""Real local servers (tests/models/fakes.py), a throwaway TLS certificate, a per-test alarm."""

from __future__ import annotations

import shutil
import ssl
import subprocess

import pytest

from tests.models.fakes import FakeServer
from tests.support.alarm import per_test_alarm  # noqa: F401 - autouse for this package


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


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

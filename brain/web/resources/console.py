"""GET /console: the operator console, static files shipped in brain/web/console/.

The page needs no token to load: it holds nothing secret and asks the operator for the token,
which it keeps in the tab's sessionStorage and sends as a bearer header on every API call. The
files are read once at start; there is no build step and nothing is fetched from elsewhere, and
the Content-Security-Policy lets the page talk to this server only.
"""

from __future__ import annotations

from pathlib import Path

import falcon

from brain import errors
from brain.web.contract import Answer, operation

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"
ASSETS = {  # name under /console/ -> media type
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self' data:; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def _serve(resp: falcon.Response, body: bytes, media_type: str) -> None:
    resp.content_type = media_type
    resp.data = body
    for name, value in SECURITY_HEADERS.items():
        resp.set_header(name, value)


class ConsolePageResource:
    def __init__(self) -> None:
        self.page = (CONSOLE_DIR / "index.html").read_bytes()

    @operation("console", "The operator console (HTML; asks for the token itself)",
               {200: Answer("The console page",
                            content={"text/html": {"schema": {"type": "string"}}})})
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        _serve(resp, self.page, "text/html; charset=utf-8")


class ConsoleAssetResource:
    def __init__(self) -> None:
        self.assets = {name: (CONSOLE_DIR / name).read_bytes() for name in ASSETS}

    @operation("consoleAsset", "A script or style sheet of the console",
               {200: Answer("The file", content={
                   media.split(";")[0]: {"schema": {"type": "string"}}
                   for media in ASSETS.values()})},
               errors=(404,))
    def on_get(self, req: falcon.Request, resp: falcon.Response, asset: str) -> None:
        if asset not in self.assets:
            raise errors.NotFound(f"the console has no file {asset!r}")
        _serve(resp, self.assets[asset], ASSETS[asset])

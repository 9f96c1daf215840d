"""Brain as an HTTP client: one interruptible HTTP/1.1 exchange and one Server-Sent Events parser.

Model providers (brain/models/) and the `http` Tool route (brain/tools/http_route.py) send their
requests through `brain.net.http_exchange`; the Python SDK (brain/client/) and the providers read
event streams with `brain.net.sse`. Standard library only, and nothing else from Brain, so the
SDK can use the parser without pulling in the server.
"""

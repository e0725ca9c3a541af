"""A throwaway HTTP server on 127.0.0.1 for tests of CSV URL sources: each GET gets what `respond` returns."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def serving(respond: Callable[[http.server.BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """Yield the server's base URL (no trailing slash); the server stops when the block ends."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            try:
                respond(self)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up, as a deadline makes it do

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def send_bytes(handler: http.server.BaseHTTPRequestHandler, body: bytes) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/csv")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def serving_file(path) -> contextlib.AbstractContextManager[str]:
    """Serve the current content of `path` at every URL."""
    return serving(lambda handler: send_bytes(handler, path.read_bytes()))

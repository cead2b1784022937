"""A webhook on loopback for the alert tests: a real HTTP server in a thread that records every
JSON body POSTed to it, and the Airflow connection (``AIRFLOW_CONN_ADLAKE_ALERTS``) pointing at
it. The alert sink POSTs synchronously and the handler records the body before it answers, so a
body is recorded by the time the sender returns."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from adlake.alerts import CONN_ID

CONN_VAR = f"AIRFLOW_CONN_{CONN_ID.upper()}"
PATH = "/services/T0/B0/alerts"


class Webhook:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self.server = server
        self.posts: list[dict] = []
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}{PATH}"

    def connection(self) -> str:
        """The connection's JSON, as ``connection_env`` writes it."""
        return json.dumps({"conn_type": "http", "host": self.url})


@contextlib.contextmanager
def webhook() -> Iterator[Webhook]:
    """A webhook server on 127.0.0.1 (a free port), stopped on exit."""
    hook: Webhook

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.posts.append(json.loads(body))
            hook.paths.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook = Webhook(server)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def closed_port_url() -> str:
    """The URL of a loopback port nothing listens on (a webhook that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{PATH}"

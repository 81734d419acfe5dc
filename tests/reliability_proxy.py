"""A bearer-token reverse proxy in front of a real `chroma run` (what Chroma 1.x deployments use).

chromadb 1.5.9's `chroma run` is the Rust server; its config (listen_address, persist_path,
cors_allow_origins, ...) has no authentication settings, and Chroma's docs for 1.0.x put token
auth in a proxy (Envoy) in front of it. This proxy does the same job for the tests: requests
without ``Authorization: Bearer <token>`` get 401, the rest are forwarded and counted. With
``drop(n)`` it hangs up on the next ``n`` requests without answering (a server dying mid-request);
with ``after=True`` it first forwards them, so the work is done but the answer is lost; with
``hang(n, seconds)`` it holds the next ``n`` requests that long without a word (a wedged server).
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "upgrade"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        drop = self.server.take_drop()
        if drop == "hang":
            time.sleep(self.server.hang_s)
            self.close_connection = True
            return
        if drop == "before":
            self.close_connection = True  # no status line at all: the client sees the peer hang up
            return
        if self.server.token and self.headers.get("Authorization") != f"Bearer {self.server.token}":
            self.server.count("rejected")
            reply = json.dumps({"error": "Unauthorized", "message": "missing or wrong bearer token"}).encode()
            self._reply(401, [("Content-Type", "application/json")], reply)
            return
        self.server.count("accepted")
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=120)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream.request(self.command, self.path, body=body, headers=headers)
            response = upstream.getresponse()
            data = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            if drop == "after":
                self.close_connection = True
                return
            self._reply(response.status, kept, data)
        finally:
            upstream.close()

    def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        return None


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream_port: int, token: str, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.upstream_port, self.token = upstream_port, token
        self.counts = {"accepted": 0, "rejected": 0, "dropped": 0}
        self.drops, self.drop_when, self.hang_s = 0, "before", 0.0
        self._lock = threading.Lock()

    def count(self, key: str) -> None:
        with self._lock:
            self.counts[key] += 1

    def take_drop(self) -> str:
        with self._lock:
            if self.drops <= 0:
                return ""
            self.drops -= 1
            self.counts["dropped"] += 1
            return self.drop_when


class AuthProxy:
    def __init__(self, upstream_port: int, token: str = "", port: int = 0) -> None:
        self.server = _ProxyServer(upstream_port, token, port)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.server.counts)

    def drop(self, n: int, after: bool = False) -> None:
        with self.server._lock:
            self.server.drops, self.server.drop_when = n, "after" if after else "before"

    def hang(self, n: int, seconds: float) -> None:
        with self.server._lock:
            self.server.drops, self.server.drop_when, self.server.hang_s = n, "hang", seconds

    def __enter__(self) -> AuthProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

"""A stand-in OpenTelemetry collector for the telemetry benchmark: accepts OTLP/HTTP exports
(``POST /v1/traces``, ``/v1/metrics``), counts the bytes and answers 200, nothing more. Its own
CPU is not the gateway's (the harness measures the gateway's process).

    python bench/otlp_sink.py PORT
"""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        Sink.received += len(self.rfile.read(int(self.headers.get("content-length", 0))))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        body = str(Sink.received).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()

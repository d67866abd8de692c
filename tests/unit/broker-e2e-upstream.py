#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""broker-e2e-upstream.py: the fake model API of test-broker-e2e. HTTPS with the test's certificate on
127.0.0.1:PORT and 127.0.0.2:PORT; appends each request (method, path, headers, body) as a JSON line to
LOG; answers Anthropic- and OpenAI-shaped responses, plain JSON or server-sent events with delays."""
import json
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, CERT, KEY, LOG = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
DELAY = 0.4


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Head and body are separate writes: without NODELAY, Nagle and delayed ACKs add 40 ms to each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def record(self, body):
        with open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body.decode(errors="replace")}) + "\n")

    def send_json(self, code, obj):
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.send_header("request-id", "req_test")
        self.send_header("Set-Cookie", "session=upstream")
        self.end_headers()
        self.wfile.write(b)

    def sse(self, events):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for name, data in events:
            chunk = (f"event: {name}\n" if name else "") + f"data: {json.dumps(data) if not isinstance(data, str) else data}\n\n"
            self.wfile.write(chunk.encode())
            self.wfile.flush()
            time.sleep(DELAY)
        self.close_connection = True

    def do_GET(self):
        self.record(b"")
        if self.path.startswith("/v1/models/echo"):
            # An upstream that echoes the key it received, as some API error messages do.
            return self.send_json(200, {"id": "echo", "seen_key": self.headers.get("x-api-key", "")})
        self.send_json(200, {"data": [{"id": "test-model"}]})

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.record(body)
        req = json.loads(body)
        if self.path == "/v1/messages" and req.get("stream"):
            return self.sse([
                ("message_start", {"type": "message_start",
                                   "message": {"id": "m1", "usage": {"input_tokens": 100, "output_tokens": 1}}}),
                ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "Hello"}}),
                ("content_block_delta", {"type": "content_block_delta", "delta": {"text": " world"}}),
                ("message_delta", {"type": "message_delta", "usage": {"output_tokens": 50}}),
                ("message_stop", {"type": "message_stop"}),
            ])
        if self.path == "/v1/messages":
            return self.send_json(200, {"id": "m1", "type": "message", "content": [{"type": "text", "text": "hi"}],
                                        "usage": {"input_tokens": 100, "output_tokens": 50}})
        if self.path == "/v1/chat/completions":
            chunk = {"object": "chat.completion.chunk", "choices": [{"delta": {"content": "hi"}}], "usage": None}
            return self.sse([(None, chunk), (None, chunk), (None, chunk),
                             (None, {"object": "chat.completion.chunk", "choices": [],
                                     "usage": {"prompt_tokens": 100, "completion_tokens": 50}}),
                             (None, "[DONE]")])
        self.send_json(404, {"error": "no such endpoint"})


def serve(addr):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv = ThreadingHTTPServer((addr, PORT), Handler)
    srv.daemon_threads = True
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.serve_forever()


if len(sys.argv) > 5:  # one address of the caller's choosing (the integration test's upstream namespace)
    serve(sys.argv[5])
threading.Thread(target=serve, args=("127.0.0.2",), daemon=True).start()
serve("127.0.0.1")

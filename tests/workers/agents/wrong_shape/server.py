"""A native (non-agentkit) agent that speaks the protocol wrongly: /ready is fine, but /batch
answers one string for the whole batch instead of one per turn."""

import http.server
import json
import os
import socketserver

SOCKET = "/podium/sock/agent.sock"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(200, {"ready": True, "batch_size": 4, "kit": "native"})

    def do_POST(self):
        batch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.reply(200, {"batch_id": batch["batch_id"], "responses": "one answer for everything"})

    def address_string(self):
        return "runner"


class Server(socketserver.UnixStreamServer):
    pass


if os.path.exists(SOCKET):
    os.unlink(SOCKET)
Server(SOCKET, Handler).serve_forever()

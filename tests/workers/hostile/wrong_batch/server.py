"""A native agent whose replies name the wrong batch: the first batch is answered properly, every
later one with a reply naming the batch before it (a stale reply, answers meant for other turns)."""

import http.server
import json
import os
import socketserver

SOCKET = "/podium/sock/agent.sock"
previous = {}


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
        self.reply(200, {"ready": True, "batch_size": 1, "kit": "native"})

    def do_POST(self):
        batch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answers = [f"answer to {turn['interaction_id']}" for turn in batch["turns"]]
        named = previous.get("batch_id", batch["batch_id"])
        previous["batch_id"] = batch["batch_id"]
        self.reply(200, {"batch_id": named, "responses": answers})

    def address_string(self):
        return "runner"


class Server(socketserver.UnixStreamServer):
    pass


if os.path.exists(SOCKET):
    os.unlink(SOCKET)
Server(SOCKET, Handler).serve_forever()

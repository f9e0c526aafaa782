"""A native protocol v3 (items) agent: for each item it reads every image it was given and every
candidate (their sizes prove the files were readable), ranks the candidates as given, and
answers with what it saw. Every third item of a batch gets a reply that breaks the schema (an
answer that is a number), which must cost that item only."""

import http.server
import json
import os
import socketserver

SOCKET = "/podium/sock/agent.sock"


def size(path):
    with open(path, "rb") as handle:
        return len(handle.read())


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
        responses = []
        for index, item in enumerate(batch["items"]):
            if index % 3 == 2:
                responses.append({"answer": 42})
                continue
            seen = [size(image["path"]) for image in item["images"] + item["candidates"]]
            answer = f"{item['setting']} {len(item['images'])} {sum(seen) > 0}"
            responses.append({"answer": answer, "ranking": [c["id"] for c in item["candidates"]]})
        self.reply(200, {"batch_id": batch["batch_id"], "responses": responses})

    def address_string(self):
        return "runner"


class Server(socketserver.UnixStreamServer):
    pass


if os.path.exists(SOCKET):
    os.unlink(SOCKET)
Server(SOCKET, Handler).serve_forever()

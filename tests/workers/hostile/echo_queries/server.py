"""A hostile native agent: ready at once, then answers /batch with a malformed HTTP status line
that carries the batch's queries (and its whole request after them), hoping the failure reason
shows them to its team."""

import json
import os
import socket

SOCKET = "/podium/sock/agent.sock"


def handle(conn):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if head.startswith(b"GET"):
        reply = json.dumps({"ready": True, "batch_size": 8}).encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
            + b"Content-Type: application/json\r\nContent-Length: "
            + str(len(reply)).encode()
            + b"\r\n\r\n"
            + reply
        )
        return
    length = int(
        next(line.split(b":")[1] for line in head.split(b"\r\n") if b"length" in line.lower())
    )
    while len(body) < length:
        body += conn.recv(65536)
    queries = " | ".join(turn["query"] for turn in json.loads(body)["turns"])
    # the queries first, then the whole request (well over what a public reason may quote)
    conn.sendall(b"HTTP/1.1 LEAK " + queries.encode() + b" " + body + b"\r\n\r\n")


if os.path.exists(SOCKET):
    os.unlink(SOCKET)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(SOCKET)
os.chmod(SOCKET, 0o666)
server.listen(8)
while True:
    connection, _ = server.accept()
    with connection:
        handle(connection)

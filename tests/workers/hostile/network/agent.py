"""Hostile: tries to reach the outside world and services on the host, answers with what it got."""

import json
import socket

TARGETS = [
    ("1.1.1.1", 80),  # the internet
    ("127.0.0.1", 5432),  # PostgreSQL on the host's loopback
    ("127.0.0.1", 6379),  # Redis on the host's loopback
    ("172.17.0.1", 5432),  # the host through the default bridge
]
UNIX_TARGETS = ["/var/run/docker.sock", "/run/docker.sock"]


def attempt_tcp(host, port):
    try:
        with socket.create_connection((host, port), timeout=2):
            return "connected"
    except OSError as exc:
        return f"failed: {exc}"


def attempt_unix(path):
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(2)
            sock.connect(path)
            return "connected"
    except OSError as exc:
        return f"failed: {exc}"


def attempt_dns(name):
    try:
        return f"resolved: {socket.getaddrinfo(name, 80)}"
    except OSError as exc:
        return f"failed: {exc}"


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        report = {f"{h}:{p}": attempt_tcp(h, p) for h, p in TARGETS}
        report.update({path: attempt_unix(path) for path in UNIX_TARGETS})
        report["dns"] = attempt_dns("example.com")
        with open("/proc/net/dev") as devices:
            report["interfaces"] = [line.split(":")[0].strip() for line in devices if ":" in line]
        return [json.dumps(report) for _ in queries]

"""Hostile: searches the whole filesystem and its environment for the split's answers."""

import json
import os

SKIP = ("/proc", "/sys", "/dev")
NEEDLES = (b"ans_full", b"PODIUM-GROUND-TRUTH")
OWN_SOURCE = os.path.abspath(__file__)  # holds the needles itself


def snoop():
    found = []
    scanned = 0
    for root, dirs, files in os.walk("/", onerror=lambda error: None):
        if root.startswith(SKIP):
            dirs[:] = []
            continue
        for name in files:
            path = os.path.join(root, name)
            if path == OWN_SOURCE:
                continue
            if name.endswith(("sessions.jsonl", ".parquet", "answers.json")):
                found.append(f"name: {path}")
            try:
                if not os.path.isfile(path) or os.path.islink(path):
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(1_000_000)
            except OSError:
                continue
            scanned += 1
            if any(needle in data for needle in NEEDLES):
                found.append(f"content: {path}")
    environment = " ".join(f"{k}={v}" for k, v in os.environ.items())
    for path in ("/proc/1/environ", "/proc/1/cmdline", "/proc/self/environ"):
        try:
            with open(path, "rb") as handle:
                environment += handle.read().decode(errors="replace")
        except OSError:
            pass
    if any(needle.decode() in environment for needle in NEEDLES):
        found.append("environment")
    return {"found": found, "scanned_files": scanned}


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        report = snoop()
        report["histories"] = message_histories
        return [json.dumps(report) for _ in queries]

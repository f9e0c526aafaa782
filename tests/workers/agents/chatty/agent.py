"""Prints about 42 KiB at every start (stdout and stderr, a NUL byte, invalid UTF-8), a line per
batch, and dies on the second batch of every container start."""

import os
import sys


class Agent:
    def __init__(self, search_pipeline):
        self.calls = 0
        self.start = os.environ.get("HOSTNAME", "?")
        for i in range(400):
            print(f"chatty start {self.start} line {i:04d} " + "x" * 70, flush=True)
        sys.stderr.write("chatty stderr line\n")
        sys.stderr.flush()
        sys.stdout.buffer.write(b"chatty nul\x00byte bad\xffutf8\n")
        sys.stdout.flush()

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        self.calls += 1
        print(f"chatty batch {self.calls} on {self.start}", flush=True)
        if self.calls == 2:
            os._exit(3)
        return [f"answer to {q}" for q in queries]

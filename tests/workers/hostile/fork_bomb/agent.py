"""Hostile: forks until the kernel refuses; the children stay alive holding their pids."""

import os
import time


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        children = 0
        error = "none"
        while children < 100_000:
            try:
                pid = os.fork()
            except OSError as exc:
                error = str(exc)
                break
            if pid == 0:
                time.sleep(3600)
                os._exit(0)
            children += 1
        return [f"forked {children} children, then: {error}" for _ in queries]

"""Answers its first batch, then dies abruptly on the second one (every container start)."""

import os


class Agent:
    def __init__(self, search_pipeline):
        self.calls = 0

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        self.calls += 1
        if self.calls == 2:
            os._exit(3)
        return [f"answer to {q}" for q in queries]

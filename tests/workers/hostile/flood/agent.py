"""Hostile: floods stdout and stderr, then answers."""

import sys

LINE = "x" * 4095 + "\n"


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        for _ in range(4000):  # 16 MB on each stream
            sys.stdout.write(LINE)
            sys.stderr.write(LINE)
        sys.stdout.flush()
        sys.stderr.flush()
        return ["flooded" for _ in queries]

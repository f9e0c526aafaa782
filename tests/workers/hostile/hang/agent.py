"""Hostile: ignores SIGTERM and never answers."""

import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        while True:
            time.sleep(60)

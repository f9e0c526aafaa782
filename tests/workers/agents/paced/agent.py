"""Takes 0.7 s on every batch call, whatever it holds, with a batch size of 2."""

import time


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        time.sleep(0.7)
        return [f"answer to {q}" for q in queries]

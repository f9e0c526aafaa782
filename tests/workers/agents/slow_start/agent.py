"""Never finishes loading."""

import time


class Agent:
    def __init__(self, search_pipeline):
        time.sleep(3600)

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        return ["never" for _ in queries]

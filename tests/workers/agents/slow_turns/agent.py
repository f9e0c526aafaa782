"""Takes far too long on any batch holding a query with the word "slow"; quick otherwise."""

import time


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        if any("slow" in q for q in queries):
            time.sleep(3600)
        return [f"answer to {q}" for q in queries]

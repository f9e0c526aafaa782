"""Fails while loading, the way a missing model file would."""


class Agent:
    def __init__(self, search_pipeline):
        raise FileNotFoundError("model weights not found at /agent/weights.bin")

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        return ["never" for _ in queries]

"""Hostile: allocates (and touches) memory without end."""


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        blocks = []
        while True:
            blocks.append(b"\x01" * (32 * 1024 * 1024))

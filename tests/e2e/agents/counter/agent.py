"""A slow kit A agent that keeps its own record of what it was asked, inside its answers.

Each answer is JSON: this process's random id, how many turns this process had been asked
when it got this one (1, 2, 3...) and the interaction's query. A turn asked twice shows as a
gap in the counts of the answers stored from one process.
"""

import json
import time
import uuid

DELAY_S = 0.4  # per batch: slow enough to stop a worker mid-run


class CountingAgent:
    def __init__(self, search_pipeline):
        self.process = uuid.uuid4().hex
        self.asked = 0

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        time.sleep(DELAY_S)
        answers = []
        for query in queries:
            self.asked += 1
            answers.append(json.dumps({"process": self.process, "asked": self.asked, "q": query}))
        return answers

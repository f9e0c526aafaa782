"""A well-behaved kit A agent that answers with what it was given, as JSON.

The tests read back the query, the history and the image size of each turn, the batch it
came in (a counter of this process's batch calls) and which images it could read then."""

import contextlib
import json
import os


def readable_images():
    """The image files this agent can list anywhere under /podium/images."""
    names = []
    for entry in os.listdir("/podium/images"):
        # a batch not being asked: hidden, or removed since the listing (the runner removes
        # the batches answered while it stages the next)
        with contextlib.suppress(PermissionError, FileNotFoundError):
            names += os.listdir(os.path.join("/podium/images", entry))
    return sorted(names)


class Agent:
    def __init__(self, search_pipeline):
        self.search_pipeline = search_pipeline
        self.calls = 0

    def get_batch_size(self):
        return 2

    def batch_generate_response(self, queries, images, message_histories):
        self.calls += 1
        image_dir = readable_images()
        return [
            json.dumps(
                {
                    "batch": self.calls,
                    "query": query,
                    "history": history,
                    "image_size": list(image.size) if image is not None else None,
                    "image_dir": image_dir,
                }
            )
            for query, image, history in zip(queries, images, message_histories, strict=True)
        ]

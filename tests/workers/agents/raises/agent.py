"""Raises on any batch holding a query with the word "boom" (its message quotes the query);
answers the others."""


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        for query in queries:
            if "boom" in query:
                raise RuntimeError(f"cannot answer {query!r}")
        return [f"answer to {q}" for q in queries]

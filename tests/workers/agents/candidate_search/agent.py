"""A Visual-RAG agent that ranks each query's candidates with Podium's candidate search: by its
first candidate as an example image (the colour encoder ranks by images only). It also tries a
text query and another batch's item, and answers with what the search service said to those."""

from __future__ import annotations


class SearchingAgent:
    def __init__(self, search_pipeline):
        self.search = search_pipeline
        self.asked = 0

    def get_batch_size(self) -> int:
        return 4

    def batch_answer(self, items):
        answers = []
        for item in items:
            example = item.candidates[0].open()
            results = self.search.search_candidates(item, example, k=30)
            answers.append({"answer": self._probe(item), "ranking": [r["id"] for r in results]})
        return answers

    def _probe(self, item) -> str:
        self.asked += 1
        try:
            if self.asked == 1:
                self.search.search_candidates(item.item_id, "what colour are the wings?")
            elif self.asked == 2:
                self.search.search_candidates("retrieval/not-in-this-batch", "wings")
            else:
                return "searched"
        except ValueError as refused:
            return f"refused: {refused}"
        return "not refused"

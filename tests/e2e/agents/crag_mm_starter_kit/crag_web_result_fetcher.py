"""A web search result's full page, fetched once and cached on disk (the kit's helper)."""

import hashlib
import os

import requests

CACHE_DIR = os.getenv(
    "CRAG_WEBSEARCH_CACHE_DIR",
    os.path.join(os.path.expanduser("~"), ".cache", "crag", "web_search_results"),
)
os.makedirs(CACHE_DIR, exist_ok=True)


class WebSearchResult:
    def __init__(self, result: dict):
        self.result = result

    def __getitem__(self, key):
        if key == "page_content" and key not in self.result:
            self.result[key] = self._page()
        return self.result[key]

    def _page(self) -> str:
        path = os.path.join(CACHE_DIR, hashlib.sha256(self.result["page_url"].encode()).hexdigest())
        if not os.path.exists(path):
            with open(path, "w") as cached:
                cached.write(requests.get(self.result["page_url"], timeout=10).text)
        with open(path) as cached:
            return cached.read()

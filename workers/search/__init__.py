"""Podium's search service: image and web search over an organiser's corpus, for agents.

- ``corpus``: reading and validating the corpus directory, chunking web pages;
- ``encoders``: text and image encoders named by spec strings;
- ``index``: faiss indexes cached on disk by content hash;
- ``queries``: what an agent may ask (``k``, query images, task rules, refusals);
- ``engine``: ``SearchEngine``, the search API with the official result shapes;
- ``candidates``: search among one item's candidate images (Visual-RAG);
- ``service``: ``start_search_service``, the HTTP service on ``search.sock``;
- ``rag``: ``rag_context`` for kit B agents.

``python -m workers.search build --corpus DIR`` builds and caches the indexes ahead of time.
"""

from workers.search.corpus import ChunkPolicy, Corpus, CorpusError
from workers.search.engine import SearchEngine
from workers.search.queries import TEXT_QUERY_REFUSED, BadQuery, SearchRefused, web_search_enabled
from workers.search.rag import rag_context
from workers.search.service import SearchService, start_search_service

__all__ = [
    "TEXT_QUERY_REFUSED",
    "BadQuery",
    "ChunkPolicy",
    "Corpus",
    "CorpusError",
    "SearchEngine",
    "SearchRefused",
    "SearchService",
    "rag_context",
    "start_search_service",
    "web_search_enabled",
]

"""Stand-in for the official ``cragmm_search`` package inside Podium's agent images.

Agents written for the CRAG-MM kits import ``cragmm_search.search.UnifiedSearchPipeline`` (most
only for type hints); this package makes that import work unchanged, naming Podium's client.
"""

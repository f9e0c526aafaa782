"""``from cragmm_search.search import UnifiedSearchPipeline`` resolves to Podium's search client.

agentkit constructs the pipeline and hands it to the agent; the search models and indexes are
Podium's, so the official constructor's model and dataset arguments have no equivalent here.
"""

from agentkit.search import SearchPipeline as UnifiedSearchPipeline

__all__ = ["UnifiedSearchPipeline"]

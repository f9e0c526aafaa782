import torch  # noqa: F401 (the kit's imports, kept)
import vllm
from agents.base_agent import BaseAgent
from crag_web_result_fetcher import WebSearchResult
from cragmm_search.search import UnifiedSearchPipeline

MODEL = "meta-llama/Llama-3.2-11B-Vision-Instruct"


class SimpleRAGAgent(BaseAgent):
    """Searches, then answers with the vision model (vLLM)."""

    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        super().__init__(search_pipeline)
        self.llm = vllm.LLM(MODEL, max_model_len=8192, max_num_seqs=2)

    def get_batch_size(self) -> int:
        return 8

    def batch_generate_response(self, queries, images, message_histories):
        pages = [[WebSearchResult(r) for r in self.search_pipeline(q, k=3)] for q in queries]
        prompts = [
            f"{q}\n{[p['page_snippet'] for p in found]}"
            for q, found in zip(queries, pages, strict=True)
        ]
        outputs = self.llm.generate(prompts, vllm.SamplingParams(max_tokens=75))
        return [output.outputs[0].text for output in outputs]

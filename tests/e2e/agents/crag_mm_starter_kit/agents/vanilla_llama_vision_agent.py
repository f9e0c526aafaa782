import torch  # noqa: F401 (the kit's imports, kept)
import vllm
from agents.base_agent import BaseAgent
from cragmm_search.search import UnifiedSearchPipeline
from transformers import AutoProcessor, MllamaForConditionalGeneration  # noqa: F401

MODEL = "meta-llama/Llama-3.2-11B-Vision-Instruct"


class LlamaVisionModel(BaseAgent):
    """Answers from the image and the query alone, with the vision model (vLLM)."""

    def __init__(self, search_pipeline: UnifiedSearchPipeline):
        super().__init__(search_pipeline)
        self.llm = vllm.LLM(MODEL, max_model_len=8192, max_num_seqs=2)

    def get_batch_size(self) -> int:
        return 8

    def batch_generate_response(self, queries, images, message_histories):
        inputs = [
            {"prompt": q, "multi_modal_data": {"image": i}}
            for q, i in zip(queries, images, strict=True)
        ]
        outputs = self.llm.generate(inputs, vllm.SamplingParams(max_tokens=75))
        return [output.outputs[0].text for output in outputs]

from agents.rag_agent import SimpleRAGAgent  # noqa: F401 (the kit names all three)
from agents.random_agent import RandomAgent
from agents.vanilla_llama_vision_agent import LlamaVisionModel  # noqa: F401

UserAgent = RandomAgent
# UserAgent = SimpleRAGAgent
# UserAgent = LlamaVisionModel

"""Errors raised by lightrag_prism."""

LLM_SETUP_HINT = (
    "Configure an OpenAI-compatible endpoint, e.g.\n"
    "  export PRISM_LLM_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-...                     # OpenAI\n"
    "  export PRISM_LLM_MODEL=qwen2.5 OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=ollama  # Ollama\n"
    "  export PRISM_LLM_MODEL=<served-model> OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=x  # vLLM\n"
    "and build the instance with llm_model_func=lightrag_prism.llm_from_env(), or pass your own llm_model_func."
)


class LLMNotConfiguredError(RuntimeError):
    """A step that has no offline fallback needed an LLM and none is configured."""

    def __init__(self, step: str):
        super().__init__(f"{step} needs an LLM, and no LLM is configured.\n{LLM_SETUP_HINT}")
        self.step = step

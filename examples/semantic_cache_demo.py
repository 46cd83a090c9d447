"""Semantic cache demo: a repeated question is answered from the cache, not the model. Offline.

The cache is litellm's in-memory cache; a tiny bag-of-words function stands in for
an embedding model, so a reworded question hits too. A scripted model stands in
for the LLM and counts its calls.

Run: python examples/semantic_cache_demo.py
"""

import re

import robotlab
from robotlab import semantic_cache
from robotlab.llm import ScriptedModel

WORDS = ("capital", "france", "city", "weather", "rain")


def embed(text: str) -> list[float]:
    """Stands in for an embedding model (e.g. embedding="text-embedding-3-small")."""
    found = re.findall(r"[a-z]+", text.lower())
    return [float(found.count(word)) for word in WORDS]


class ShowHits(robotlab.Hook):
    @classmethod
    def after_llm_generation(cls, ctx):
        print(f"  hook: llm_generation cache_hit={ctx.cache_hit}")


def main() -> None:
    cache = semantic_cache.install(embedding=embed, similarity_threshold=0.8)
    model = ScriptedModel(["Paris.", "Bring an umbrella."])
    robot = robotlab.build(name="geo", model=model, system_prompt="Answer briefly.", token_budget=10_000)
    robot.on(ShowHits)
    for question in ("What is the capital of France?", "What is the capital of France?",
                     "Tell me the capital city of France", "Will it rain? What's the weather?"):
        robot.clear_messages()  # each question starts a fresh conversation
        result = robot.run(question)
        print(f"{question!r} -> {result.last_text_content!r} "
              f"(llm_calls={result.llm_calls}, cache_hits={result.cache_hits}, tokens={result.total_tokens})")
    print("model calls:", len(model.calls), "| cache:", cache.stats)
    semantic_cache.uninstall()


if __name__ == "__main__":
    main()

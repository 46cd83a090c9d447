"""The semantic_cache extension: robot runs served from litellm's cache backends (in memory, and the
real Redis server the suite starts), exact and embedding-based hits, budgets, hooks, bad input."""

from __future__ import annotations

import logging
import math
import re
import uuid

import pytest

import robotlab
from robotlab import ConfigurationError, semantic_cache
from robotlab.hooks import Hook
from robotlab.llm import ScriptedModel, call
from robotlab.semantic_cache import CacheHit, SemanticCache
from tests.doc_blocks import python_blocks, run_block
from tests.openai_server import Script, serve
from tests.redis_server import redis_server  # noqa: F401  (fixture)

VOCABULARY = ("capital", "france", "paris", "weather", "rain", "city", "germany")


def bag_of_words(text: str) -> list[float]:
    """A tiny deterministic embedding: word counts over a fixed vocabulary."""
    words = re.findall(r"[a-z]+", text.lower())
    return [float(words.count(w)) for w in VOCABULARY]


@pytest.fixture(autouse=True)
def _uninstalled():
    yield
    semantic_cache.uninstall()


def ask(robot: robotlab.Robot, question: str, **options) -> robotlab.RobotResult:
    robot.clear_messages()  # each run starts a fresh conversation, so equal questions make equal requests
    return robot.run(question, **options)


def test_an_exact_hit_skips_the_model_costs_nothing_and_hooks_see_it():
    semantic_cache.install()
    seen = []

    class Watch(Hook):
        @classmethod
        def after_llm_generation(cls, ctx):
            seen.append((ctx.iteration, ctx.cache_hit, ctx.generation_response.text))

    model = ScriptedModel(["Paris.", "a second, different answer"])
    robot = robotlab.build(name="geo", model=model, system_prompt="You answer briefly.")
    first = ask(robot, "What is the capital of France?", hooks=Watch)
    again = ask(robot, "  What is the capital   of France? ", hooks=Watch)  # whitespace is normalised
    assert (first.llm_calls, first.cache_hits) == (1, 0) and first.total_tokens > 0
    assert again.last_text_content == "Paris."
    assert (again.llm_calls, again.cache_hits, again.total_tokens, again.cost) == (0, 1, 0, 0.0)
    assert len(model.calls) == 1
    assert seen == [(0, False, "Paris."), (0, True, "Paris.")]
    assert robot.memory.cache.stats == {"hits": 1, "misses": 1, "stores": 1}
    other = ask(robot, "What is the capital of Germany?")  # another question: a miss
    assert (other.llm_calls, other.last_text_content) == (1, "a second, different answer")


def test_a_hit_counts_no_tokens_against_the_budget():
    probe = ask(robotlab.build(name="probe", model=ScriptedModel(["Paris."])), "Capital of France?")
    semantic_cache.install()  # after the probe, whose answer would be a hit for the robot below
    robot = robotlab.build(name="geo", model=ScriptedModel(["Paris.", "Berlin."]), token_budget=probe.total_tokens * 3)
    ask(robot, "Capital of France?")
    ledger = robot._ledger
    spent = ledger.committed("tokens")
    for _ in range(5):  # five more real calls would need more than the budget has left
        assert ask(robot, "Capital of France?").cache_hits == 1
    assert ledger.committed("tokens") == spent == probe.total_tokens
    ask(robot, "Capital of Germany?")  # a miss spends again
    assert ledger.committed("tokens") > spent


def test_cached_tool_calls_are_replayed_and_the_tools_run_again():
    semantic_cache.install()
    ran = []

    @robotlab.tool
    def lookup(city: str) -> str:
        """Look a city up."""
        ran.append(city)
        return f"{city}: sunny"

    model = ScriptedModel([call("lookup", city="Paris"), "Sunny in Paris."])
    robot = robotlab.build(name="weather", model=model, local_tools=[lookup])
    first = ask(robot, "Weather in Paris?", tools="inherit")
    again = ask(robot, "Weather in Paris?", tools="inherit")
    assert (again.cache_hits, again.llm_calls, again.last_text_content) == (2, 0, "Sunny in Paris.")
    assert ran == ["Paris", "Paris"] and len(model.calls) == 2
    assert again.tool_calls[0].id != first.tool_calls[0].id  # a replayed call gets a fresh id


def test_the_semantic_mode_hits_similar_questions_in_the_same_context():
    semantic_cache.install(embedding=bag_of_words, similarity_threshold=0.8)
    model = ScriptedModel(["Paris.", "Rain.", "Paris, from the other robot."])
    robot = robotlab.build(name="geo", model=model, system_prompt="Be brief.")
    ask(robot, "What is the capital of France?")
    similar = ask(robot, "Tell me the capital city of France")
    assert (similar.cache_hits, similar.last_text_content) == (1, "Paris.")
    different = ask(robot, "What is the weather? Rain?")
    assert (different.cache_hits, different.last_text_content) == (0, "Rain.")
    other_prompt = robotlab.build(name="other", model=model, system_prompt="Answer at length.")
    assert ask(other_prompt, "What is the capital of France?").cache_hits == 0  # another context: no hit


def test_the_reply_of_a_hit_says_where_it_came_from():
    cache = semantic_cache.install(embedding=bag_of_words, similarity_threshold=0.5)
    robot = robotlab.build(name="geo", model=ScriptedModel(["Paris."]))
    ask(robot, "capital of France")
    replies = []

    class Keep(Hook):
        @classmethod
        def after_llm_generation(cls, ctx):
            replies.append(ctx.generation_response)

    ask(robot, "France capital city", hooks=Keep)
    [reply] = replies
    assert isinstance(reply.raw, CacheHit) and 0.5 <= reply.raw.similarity < 1
    assert reply.raw.original_usage.total_tokens > 0 and reply.usage.total_tokens == 0
    assert cache.stats["hits"] == 1


def test_memories_made_before_install_or_with_enable_cache_false_do_not_cache():
    before = robotlab.build(name="before", model=ScriptedModel(["a", "b"]))
    cache = semantic_cache.install()
    assert before.memory.cache is None and robotlab.Memory().cache is cache
    off = robotlab.build(name="off", model=ScriptedModel(["a", "b"]), memory=robotlab.Memory(enable_cache=False))
    for robot in (before, off):
        assert [ask(robot, "same").last_text_content for _ in range(2)] == ["a", "b"]
    assert semantic_cache.installed() is cache
    semantic_cache.uninstall()
    assert semantic_cache.installed() is None and robotlab.Memory().cache is None


def test_a_network_shares_one_cache_between_its_robots():
    semantic_cache.install()
    robots = [robotlab.build(name=f"r{i}", model=ScriptedModel(["same answer", "unused"])) for i in range(2)]
    network = robotlab.create_network(name="n")
    network.task("first", robots[0])
    network.task("second", robots[1], depends_on=["first"])
    outcome = network.run("hello")
    # the second robot's request holds the first one's answer: another request, so both called the model
    assert [outcome.tasks[n].result.llm_calls for n in ("first", "second")] == [1, 1]
    for robot in robots:  # robots keep their conversation between runs: start both afresh
        robot.clear_messages()
    again = network.run("hello")
    assert [again.tasks[n].result.cache_hits for n in ("first", "second")] == [1, 1]


def test_redis_backend_is_shared_between_caches_and_clear_keeps_other_keys(redis_server):  # noqa: F811
    import redis

    namespace = f"test-cache-{uuid.uuid4().hex[:8]}"
    options = {"backend": "redis", "redis_url": redis_server.url, "namespace": namespace,
               "embedding": bag_of_words, "similarity_threshold": 0.8}
    writer = SemanticCache(**options)
    semantic_cache.install(writer)
    ask(robotlab.build(name="a", model=ScriptedModel(["Paris."])), "What is the capital of France?")
    reader = SemanticCache(**options)  # another process would do the same: same URL, same namespace
    semantic_cache.install(reader)
    model = ScriptedModel(["never"])
    robot = robotlab.build(name="b", model=model)
    assert ask(robot, "What is the capital of France?").last_text_content == "Paris."      # exact
    assert ask(robot, "Tell me the capital city of France").last_text_content == "Paris."  # semantic
    assert model.calls == [] and reader.stats["hits"] == 2
    raw = redis.Redis.from_url(redis_server.url)
    raw.set(f"other-{namespace}", "kept")
    assert raw.keys(f"{namespace}:*")
    reader.clear()
    assert raw.keys(f"{namespace}:*") == [] and raw.get(f"other-{namespace}") == b"kept"
    raw.delete(f"other-{namespace}")


def test_an_unreachable_redis_is_a_miss_not_a_failed_run(caplog):
    semantic_cache.install(backend="redis", redis_url="redis://127.0.0.1:1/0", embedding=bag_of_words)
    model = ScriptedModel(["answer", "answer again"])
    robot = robotlab.build(name="r", model=model)
    with caplog.at_level(logging.WARNING, logger="robotlab.semantic_cache"):
        assert [ask(robot, "same").last_text_content for _ in range(2)] == ["answer", "answer again"]
    assert "semantic cache lookup failed" in caplog.text


def test_a_litellm_embedding_model_served_offline():
    def embedding(vector):
        return (200, {"object": "list", "model": "text-embedding-3-small",
                      "data": [{"object": "embedding", "index": 0, "embedding": vector}],
                      "usage": {"prompt_tokens": 3, "total_tokens": 3}})

    script = Script([embedding([1.0, 0.0, 0.2]), embedding([0.9, 0.1, 0.2])])
    with serve(script) as url:
        semantic_cache.install(embedding="openai/text-embedding-3-small", similarity_threshold=0.95,
                               embedding_options={"api_base": url, "api_key": "test-key"})
        model = ScriptedModel(["first", "never"])
        robot = robotlab.build(name="r", model=model)
        ask(robot, "one question")
        assert ask(robot, "the same question, worded otherwise").last_text_content == "first"
    assert [r["input"] for r in script.requests] == [["one question"], ["the same question, worded otherwise"]]
    assert math.isclose(len(model.calls), 1)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backend": "disk"}, "backend must be one of memory, redis, got 'disk'"),
        ({"backend": "redis"}, "needs redis_url='redis://host:port/db', got None"),
        ({"ttl": 0}, "ttl must be a positive number of seconds"),
        ({"max_entries": 0}, "max_entries must be a positive integer"),
        ({"embedding": 42}, "embedding must be a litellm embedding model name or a callable"),
        ({"embedding": bag_of_words, "similarity_threshold": 1.5}, "similarity_threshold must be in (0, 1]"),
    ],
)
def test_bad_options_raise_configuration_error(options, message):
    with pytest.raises(ConfigurationError) as caught:
        semantic_cache.install(**options)
    assert message in str(caught.value)
    assert semantic_cache.installed() is None  # nothing was registered


def test_an_embedding_that_returns_no_vector_fails_the_run_clearly():
    semantic_cache.install(embedding=lambda text: "not a vector")
    robot = robotlab.build(name="r", model=ScriptedModel(["unused"]))
    with pytest.raises(ConfigurationError, match="embedding must return a non-empty list of numbers"):
        ask(robot, "hello")


def test_an_embedding_provider_that_fails_is_a_miss(caplog):
    def broken(text):
        raise ConnectionError("embedding service down")

    semantic_cache.install(embedding=broken)
    robot = robotlab.build(name="r", model=ScriptedModel(["fine"]))
    with caplog.at_level(logging.WARNING, logger="robotlab.semantic_cache"):
        assert ask(robot, "hello").last_text_content == "fine"
    assert "embedding service down" in caplog.text


def test_a_streamed_hit_delivers_its_text_as_one_delta():
    semantic_cache.install()
    robot = robotlab.build(name="r", model=ScriptedModel(["one two three"]))
    ask(robot, "count")
    robot.clear_messages()
    events = list(robot.stream("count"))
    deltas = [e.data["text"] for e in events if e.type == "text.delta"]
    assert deltas == ["one two three"]
    assert events[-1].type == "stream.ended"


@pytest.mark.parametrize("index", range(len(python_blocks("docs/semantic-cache.md"))))
def test_docs_semantic_cache_examples_run(index):
    run_block("docs/semantic-cache.md", index, __name__="docs_semantic_cache")


def test_a_robot_served_from_the_cache_is_freed_without_the_cyclic_gc():
    from tests.test_reference_cycles import freed_without_gc

    semantic_cache.install()

    def make():
        robot = robotlab.build(name="r", model=ScriptedModel(["once"]))
        ask(robot, "hello")
        assert ask(robot, "hello").cache_hits == 1
        return robot

    assert freed_without_gc(make)

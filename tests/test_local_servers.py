"""docs/configuration.md's local-server example, against a real OpenAI-compatible HTTP server (tests/openai_server)."""

from tests.doc_blocks import python_blocks, run_block
from tests.openai_server import Script, completion, serve


def test_the_local_server_example_runs_against_an_openai_compatible_server(caplog):
    index = next(i for i, code in enumerate(python_blocks("docs/configuration.md")) if "llm_options=" in code)
    script = Script([(200, completion("hello from vllm")), (200, completion("hello from ollama"))])
    with serve(script) as base:
        code = python_blocks("docs/configuration.md")[index].replace("http://localhost:8000/v1", base)
        run_block("docs/configuration.md", index, code)
    assert [r["model"] for r in script.requests] == ["Qwen/Qwen2.5-7B-Instruct", "llama3.1"]
    # prices=(0.0, 0.0) on both: a known price of zero, so the cost budget had nothing to warn about
    assert not [r for r in caplog.records if r.name == "robotlab.budget"]

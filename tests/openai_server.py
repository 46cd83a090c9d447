"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, for litellm's real HTTP client."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Script:
    """Responses to give, in order: ``(status, body_dict)``; records every request body.

    A request with ``"stream": true`` gets its completion as server-sent events
    (see :func:`sse_chunks`), *chunk_delay* seconds apart; ``chunk_times`` records
    when each chunk was written (``time.perf_counter()``).
    """

    def __init__(self, responses: list[tuple[int, dict[str, Any]]], chunk_delay: float = 0.0) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.chunk_delay = chunk_delay
        self.chunk_times: list[float] = []


def sse_chunks(payload: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A chat completion as the ``chat.completion.chunk`` objects an OpenAI server streams.

    Text arrives word by word; each tool call's id and name come first, then its
    arguments in 6-character pieces; usage, when asked for, in a last chunk with no choices.
    """
    message = payload["choices"][0]["message"]
    base = {"id": payload["id"], "object": "chat.completion.chunk", "created": 1, "model": payload["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": word}) for word in re.findall(r"\S+\s*|\s+", message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or ()):
        chunks.append(chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                             "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        arguments = call["function"]["arguments"]
        chunks += [chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i:i + 6]}}]})
                   for i in range(0, len(arguments), 6)]
    chunks.append(chunk({}, payload["choices"][0]["finish_reason"]))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": payload["usage"]})
    return chunks


def completion(text: str | None = None, tool_calls: list[dict[str, Any]] | None = None,
               prompt_tokens: int = 12, completion_tokens: int = 5) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


@contextmanager
def serve(script: Script) -> Iterator[str]:
    """Serve *script* and yield the base URL (``http://127.0.0.1:<port>/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            script.requests.append(body)
            status, payload = script.responses.pop(0) if script.responses else (500, {"error": "script empty"})
            if "choices" in payload:  # answer as the model that was asked for, like a real server
                payload = {**payload, "model": body.get("model", payload["model"])}
                if body.get("stream"):
                    self._stream(payload, bool((body.get("stream_options") or {}).get("include_usage")))
                    return
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, payload: dict[str, Any], include_usage: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for i, chunk in enumerate(sse_chunks(payload, include_usage)):
                if i and script.chunk_delay:
                    time.sleep(script.chunk_delay)
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                script.chunk_times.append(time.perf_counter())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()

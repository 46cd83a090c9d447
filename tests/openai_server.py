"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, for litellm's real HTTP client."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Script:
    """Responses to give, in order: ``(status, body_dict)``; records every request body."""

    def __init__(self, responses: list[tuple[int, dict[str, Any]]]) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []


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
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

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

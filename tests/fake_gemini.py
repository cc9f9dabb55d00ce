"""A local stand-in for the Gemini API and an OpenAI-compatible server, for tests without network.

It speaks the two REST shapes the providers send:
  POST /{v1|v1beta}/models/{model}:generateContent   (google-genai; key in the x-goog-api-key header)
  POST /v1/chat/completions                           (vLLM and friends)
and answers "echo: <last user text>", or what `respond(body)` returns for a generateContent body (recorded
answers). Tests script failures with `fail_next` (an HTTP error, a hang, or a raw malformed body), slow it
down with `delay_s`, and read back what it saw: `requests`, `max_in_flight`.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_GEMINI_PATH = re.compile(r"^/v1(beta)?/models/(?P<model>[^/:]+):generateContent$")


@dataclass
class Failure:
    status: int
    message: str
    retry_after: str | None = None
    hang_s: float = 0.0  # sleep before answering: longer than the client's timeout makes a timeout
    details: list[dict[str, Any]] | None = None  # google.rpc details, e.g. RetryInfo on a 429
    body: str | None = None  # sent as is with `status` instead of an error object (e.g. 200 with broken JSON)


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeLLMServer:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.failures: deque[Failure] = deque()
        self.delay_s = 0.0
        self.respond: Callable[[dict[str, Any]], str] | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FakeLLMServer:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail_next(self, status: int, count: int = 1, message: str = "scripted failure", **kw: Any) -> None:
        self.failures.extend(Failure(status, message, **kw) for _ in range(count))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                self._send_raw(status, json.dumps(payload).encode(), headers)

            def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake.lock:
                    fake.requests.append(
                        Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    failure = fake.failures.popleft() if fake.failures else None
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    time.sleep(fake.delay_s + (failure.hang_s if failure else 0.0))
                    self._answer(body, failure)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up
                finally:
                    with fake.lock:
                        fake.in_flight -= 1

            def _answer(self, body: dict[str, Any], failure: Failure | None) -> None:
                gemini = _GEMINI_PATH.match(self.path)
                if not gemini and self.path != "/v1/chat/completions":
                    self._send(404, {"error": {"code": 404, "message": f"no route {self.path}"}}, {})
                    return
                if failure is not None and failure.body is not None:
                    self._send_raw(failure.status, failure.body.encode())
                    return
                if failure is not None:
                    headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
                    error = {"code": failure.status, "message": failure.message, "status": "SCRIPTED"}
                    if failure.details:
                        error["details"] = failure.details
                    self._send(failure.status, {"error": error}, headers)
                    return
                if gemini and fake.respond is not None:
                    self._send(200, _gemini_reply(body, gemini["model"], [fake.respond(body)]), {})
                elif gemini:
                    self._send(200, _gemini_answer(body, gemini["model"]), {})
                else:
                    self._send(200, _openai_answer(body), {})

        return Handler


def _words(text: str) -> int:
    return len(text.split())


def _gemini_answer(body: dict[str, Any], model: str) -> dict[str, Any]:
    last = body["contents"][-1]["parts"][0]["text"]
    n = body.get("generationConfig", {}).get("candidateCount", 1)
    return _gemini_reply(body, model, [f"echo: {last}" + (f" #{i}" if i else "") for i in range(n)])


def _gemini_reply(body: dict[str, Any], model: str, texts: list[str]) -> dict[str, Any]:
    """A generateContent answer with these candidate texts; tokens counted as words."""
    turns = [*body["contents"], *([body["systemInstruction"]] if "systemInstruction" in body else [])]
    prompt = sum(_words(p["text"]) for c in turns for p in c["parts"])
    return {
        "candidates": [
            {"index": i, "content": {"role": "model", "parts": [{"text": t}]}, "finishReason": "STOP"}
            for i, t in enumerate(texts)
        ],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": sum(_words(t) for t in texts),
            "thoughtsTokenCount": 7,
            "totalTokenCount": prompt + sum(_words(t) for t in texts) + 7,
        },
        "modelVersion": model,
    }


def _openai_answer(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]["content"]
    texts = [f"echo: {last}" + (f" #{i}" if i else "") for i in range(body.get("n", 1))]
    prompt = sum(_words(m["content"]) for m in body["messages"])
    return {
        "id": "cmpl-fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
            for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": sum(_words(t) for t in texts)},
    }

"""One summarizer model behind an OpenAI-compatible `/chat/completions` or an Anthropic
`/v1/messages` endpoint, on httpx (core.ports' `ModelWriter` seam).

Each `write` is one POST on a client of its own, on the event loop: nothing waits in a thread.
Cancelled (a compaction cancelled), the request's connection is closed at once, so the provider
sees it go and stops generating. `timeout_s` bounds the whole call and each connect, send and
read within it. Proxies come from the environment (HTTP(S)_PROXY, NO_PROXY) and TLS trusts the
system's certificates, as before.

Every failure is a SummaryFailed with a reason the chain reports: `no answer within N s`,
`HTTP CODE (first 200 characters of the body, or its reason phrase[; KEY_ENV is not set])`,
`cannot reach BASE_URL (why)`, `the answer is not JSON`, `no choices[0].message.content in the
answer` / `no content in the answer`, `the answer's content is not text`, `the answer was cut at
maxTokens`.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import ssl
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tokend.core.errors import SummaryFailed

if TYPE_CHECKING:
    import httpx

ANTHROPIC_VERSION = "2023-06-01"
MAX_ERROR_BODY_CHARS = 200


class HttpWriter:
    """One model of a `[summarizer]` chain step: `openai` or `anthropic`."""

    def __init__(
        self, provider: str, base_url: str, model: str, key_env: str, timeout_s: float
    ) -> None:
        self.provider = provider
        self.model: str | None = model  # the catalog's name: its window bounds a request
        self.name = f"{provider}:{model}"
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._key_env = key_env
        self._timeout_s = timeout_s
        self._tls: ssl.SSLContext | None = None

    async def write(self, prompt: str, max_tokens: int) -> str:
        """The answer's text, or SummaryFailed saying why there is none."""
        key = os.environ.get(self._key_env, "")
        url, headers, body = self._request(prompt, max_tokens, key)
        if self._tls is None:  # reading the system's certificates: not on the event loop
            self._tls = await asyncio.to_thread(ssl.create_default_context)
        http = await asyncio.to_thread(_httpx)
        try:
            async with asyncio.timeout(self._timeout_s):
                response = await self._post(url, headers, json.dumps(body).encode(), self._tls)
        except (TimeoutError, http.TimeoutException):
            raise SummaryFailed(f"no answer within {self._timeout_s:g} s") from None
        except (http.HTTPError, http.InvalidURL) as error:
            raise SummaryFailed(f"cannot reach {self._base_url} ({_why(error)})") from None
        if not response.is_success:
            said = response.content[:MAX_ERROR_BODY_CHARS].decode("utf-8", "replace").strip()
            unset = (
                f"; {self._key_env} is not set"
                if not key and response.status_code in (401, 403)
                else ""
            )
            reason = said or response.reason_phrase
            raise SummaryFailed(f"HTTP {response.status_code} ({reason}{unset})")
        try:
            answer = json.loads(response.content)
        except ValueError:
            raise SummaryFailed("the answer is not JSON") from None
        return self._text(answer)

    async def _post(
        self, url: str, headers: dict[str, str], body: bytes, tls: ssl.SSLContext
    ) -> httpx.Response:
        """The response, read whole; the client (and its connection) closed on the way out,
        cancelled or not."""
        async with _httpx().AsyncClient(
            timeout=self._timeout_s, verify=tls, follow_redirects=True
        ) as client:
            response: httpx.Response = await client.post(url, content=body, headers=headers)
            return response

    def _request(self, prompt: str, max_tokens: int, key: str) -> tuple[str, dict[str, str], Any]:
        headers = {"Content-Type": "application/json"}
        messages = [{"role": "user", "content": prompt}]
        if self.provider == "anthropic":
            if key:
                headers["x-api-key"] = key
            headers["anthropic-version"] = ANTHROPIC_VERSION
            path = "/messages" if self._base_url.endswith("/v1") else "/v1/messages"
            body = {"model": self._model, "max_tokens": max_tokens, "messages": messages}
            return self._base_url + path, headers, body
        if key:
            headers["Authorization"] = f"Bearer {key}"
        body = {
            "model": self._model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0,
        }
        return self._base_url + "/chat/completions", headers, body

    def _text(self, answer: Any) -> str:
        """The answer's text; SummaryFailed when it has none or was cut at max_tokens."""
        try:
            if self.provider == "anthropic":
                cut = answer.get("stop_reason") == "max_tokens"
                blocks = answer["content"]
                text = "".join(b["text"] for b in blocks if b.get("type") == "text")
            else:
                choice = answer["choices"][0]
                cut = choice.get("finish_reason") == "length"
                text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError, AttributeError):
            where = "content" if self.provider == "anthropic" else "choices[0].message.content"
            raise SummaryFailed(f"no {where} in the answer") from None
        if not isinstance(text, str):
            raise SummaryFailed("the answer's content is not text")
        if cut:
            raise SummaryFailed("the answer was cut at maxTokens")
        return text


def _httpx() -> ModuleType:
    """httpx, imported at the first summary a model writes, not when the daemon starts: its
    import also loads its command line's rich and click (about 80 modules, 150-280 ms), which
    made `tokend serve` 1.2x slower to be ready than before the summarizer moved to httpx
    (bench/reshape.py)."""
    return importlib.import_module("httpx")


def _why(error: Exception) -> str:
    """What the system said, as `[Errno N] text`, from the OSError under httpx's error (anyio
    wraps a refused connection in "All connection attempts failed"); else httpx's words."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno is not None:
            text = os.strerror(seen.errno) if seen.errno > 0 else seen.strerror
            return f"[Errno {seen.errno}] {text}"
        seen = seen.__cause__ or seen.__context__
    return str(error) or type(error).__name__

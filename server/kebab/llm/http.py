"""Chat servers over HTTP: OpenAI-compatible `/v1/chat/completions` (SSE) and Ollama `/api/chat`
(NDJSON), streamed with httpx.

One retry policy for both: connection errors, 429 and 5xx are retried with backoff (honouring
Retry-After) only before the first token; after it, a fault ends the answer with the partial text
kept. The API key is read from the environment variable the config names and is never logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from kebab.config import LLMConfig, api_key
from kebab.errors import LLMError
from kebab.llm import GenerateRequest

log = logging.getLogger(__name__)

_DEFAULT_ENDPOINT = {"openai": "http://127.0.0.1:8080", "ollama": "http://127.0.0.1:11434"}
_DEFAULT_MODEL = {"openai": "gpt-4o-mini", "ollama": "llama3.2"}
_MAX_RETRY_WAIT_S = 30.0


class HttpChat:
    def __init__(self, cfg: LLMConfig) -> None:
        self.cfg = cfg
        self.backend = cfg.backend
        self.id = cfg.model or _DEFAULT_MODEL[cfg.backend]
        self.context_tokens = cfg.context_tokens
        self.endpoint = (cfg.endpoint or _DEFAULT_ENDPOINT[cfg.backend]).rstrip("/")
        headers = {}
        key = api_key(cfg.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(
                connect=cfg.connect_timeout_s, read=cfg.idle_timeout_s, write=30.0, pool=30.0
            ),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def stream(self, request: GenerateRequest) -> AsyncIterator[str]:
        url, body = self._request(request)
        deadline = time.monotonic() + self.cfg.max_seconds
        for attempt in range(self.cfg.max_retries + 1):
            got_text = False
            wait: float | None = None
            try:
                async with asyncio.timeout(self.cfg.first_token_timeout_s) as first_token:
                    async with self._client.stream("POST", url, json=body) as response:
                        if response.status_code != 200:
                            await response.aread()
                            wait = self._retry_wait(response, attempt)
                            if wait is None:
                                raise LLMError(self._status_message(response))
                            log.info(
                                "model server answered %s; retrying in %.1fs",
                                response.status_code,
                                wait,
                            )
                        else:
                            async for piece in self._pieces(response):
                                if not got_text:
                                    got_text = True
                                    first_token.reschedule(None)
                                if time.monotonic() > deadline:
                                    raise LLMError(
                                        f"the model kept writing past "
                                        f"{self.cfg.max_seconds:.0f} s; the answer was "
                                        "cut (llm.max_seconds)"
                                    )
                                yield piece
                            return
            except TimeoutError:
                raise LLMError(
                    f"no first token from {self.endpoint} within "
                    f"{self.cfg.first_token_timeout_s:.0f} s (llm.first_token_timeout_s)"
                ) from None
            except httpx.ConnectError:
                if attempt < self.cfg.max_retries:
                    await asyncio.sleep(min(0.25 * 2**attempt, 2.0))
                    continue
                raise LLMError(
                    f"no LLM at {self.endpoint}: start "
                    f"{'Ollama' if self.backend == 'ollama' else 'the model server'} "
                    "or set llm.endpoint"
                ) from None
            except httpx.ReadTimeout:
                raise LLMError(
                    f"the model server at {self.endpoint} went silent for "
                    f"{self.cfg.idle_timeout_s:.0f} s mid-answer"
                ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError) as e:
                raise LLMError(
                    f"the model server at {self.endpoint} cut the stream ({type(e).__name__})"
                ) from None
            except httpx.HTTPError as e:
                raise LLMError(f"talking to {self.endpoint} failed: {type(e).__name__}") from None
            # The backoff is not first-token time: each attempt gets the whole first_token_timeout_s.
            await asyncio.sleep(wait or 0.0)
        raise LLMError(
            f"the model server at {self.endpoint} kept refusing (429/5xx) after "
            f"{self.cfg.max_retries + 1} tries; try again later"
        )

    def _request(self, request: GenerateRequest) -> tuple[str, dict[str, Any]]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        if self.backend == "ollama":
            return f"{self.endpoint}/api/chat", {
                "model": self.id,
                "messages": messages,
                "stream": True,
                "options": {
                    "temperature": request.temperature,
                    "seed": request.seed,
                    "num_predict": request.max_tokens,
                },
            }
        return f"{self.endpoint}/v1/chat/completions", {
            "model": self.id,
            "messages": messages,
            "stream": True,
            "temperature": request.temperature,
            "seed": request.seed,
            "max_tokens": request.max_tokens,
        }

    async def _pieces(self, response: httpx.Response) -> AsyncIterator[str]:
        """Text pieces from an SSE (OpenAI) or NDJSON (Ollama) body; bad lines are skipped.

        A body that ends before its end marker (a `finish_reason`, then `data: [DONE]`; Ollama's
        `"done": true`) was cut, even when the connection closed cleanly.
        """
        finished = False
        async for line in response.aiter_lines():
            line = line.strip()
            if not line or line.startswith(":"):
                continue
            if self.backend != "ollama":
                if not line.startswith("data:"):
                    continue
                line = line[5:].strip()
                if line == "[DONE]":
                    if finished:
                        return
                    # llama.cpp's Python server ends an answer this way when a newer request
                    # interrupts it: what arrived is a fragment, not the answer
                    raise LLMError(
                        f"the model server at {self.endpoint} ended the answer before the model "
                        "finished it (no finish_reason before [DONE]; another request may have "
                        "interrupted it); the answer was cut"
                    )
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("skipped a malformed line from the model server")
                continue
            if not isinstance(event, dict):
                continue
            if event.get("error"):
                err = event["error"]
                msg = err.get("message") if isinstance(err, dict) else str(err)
                raise LLMError(f"the model server reported an error: {str(msg)[:200]}")
            piece = _piece(event, self.backend)
            if piece:
                yield piece
            if self.backend == "ollama" and event.get("done"):
                return
            finished = finished or _finish_reason(event) is not None
        if not finished:
            raise LLMError(
                f"the model server at {self.endpoint} ended the stream before its end "
                "marker; the answer was cut"
            )

    def _retry_wait(self, response: httpx.Response, attempt: int) -> float | None:
        if response.status_code != 429 and response.status_code < 500:
            return None
        if attempt >= self.cfg.max_retries:
            return None
        header = response.headers.get("retry-after", "")
        try:
            wait = float(header)
        except ValueError:
            wait = 0.5 * 2**attempt
        return min(max(wait, 0.0), _MAX_RETRY_WAIT_S)

    def _status_message(self, response: httpx.Response) -> str:
        code = response.status_code
        if code in (401, 403):
            return (
                f"the model server at {self.endpoint} refused the credentials ({code}); "
                f"check the key in ${self.cfg.api_key_env or 'llm.api_key_env'}"
            )
        if code == 404:
            return f"model {self.id!r} not found at {self.endpoint} (404); check llm.model"
        if code == 429 or code >= 500:
            return f"the model server at {self.endpoint} answered {code} after retries; try later"
        return f"the model server at {self.endpoint} answered {code}: {response.text[:200]}"


def _piece(event: dict[str, Any], backend: str) -> str:
    try:
        if backend == "ollama":
            return str(event.get("message", {}).get("content") or "")
        choices = event.get("choices") or []
        return str((choices[0].get("delta") or {}).get("content") or "") if choices else ""
    except (AttributeError, IndexError, TypeError):
        return ""


def _finish_reason(event: dict[str, Any]) -> object:
    """An OpenAI chunk's `finish_reason` (None while the answer goes on)."""
    choices = event.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0].get("finish_reason")
    return None

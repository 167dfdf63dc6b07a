"""A chat model behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

The API key is read once, when the player is built from its `ModelSpec`, and lives only inside
the `ChatOpenAI` client as a `SecretStr`: it never enters state, records or logs.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import zlib
from collections.abc import Mapping
from datetime import datetime

import openai
from langchain_core.messages import AIMessage, BaseMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from privateshared.agents.base import PlayerFailure, PlayerReply, PlayerRequest, ToolCall

LOCAL_SERVER_KEY = "not-needed"
"""Sent to a custom base URL when no key is set: local servers ignore it, the client needs one."""


class PlayerConfigError(ValueError):
    """A player that cannot be built; the message is one line with the fix."""


class ModelSpec(BaseModel):
    """Which model to call, where, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    """Model name as the endpoint knows it, e.g. gpt-4o-2024-08-06."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://localhost:8000/v1; None for OpenAI."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key."""
    temperature: float = Field(default=0.0, ge=0.0)
    timeout: float = Field(default=60.0, gt=0)
    """Seconds before one call gives up; always finite."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries of a failed call (connection errors, timeouts, 429, 5xx, malformed replies)
    before the episode ends as errored."""
    retry_backoff: float = Field(default=1.0, ge=0)
    """Seconds before the first retry, doubled for each further one, unless the server says
    how long to wait (Retry-After)."""


def api_key(spec: ModelSpec, environ: Mapping[str, str]) -> SecretStr:
    """The key for `spec` from the environment, or a placeholder for a local server."""
    value = environ.get(spec.api_key_env)
    if value:
        return SecretStr(value)
    if spec.base_url:
        return SecretStr(LOCAL_SERVER_KEY)
    raise PlayerConfigError(
        f"model {spec.model!r}: {spec.api_key_env} is not set; export it, name another variable "
        "with --api-key-env, or point --base-url at a local server"
    )


MAX_RETRY_WAIT = 120.0
"""Longest wait a server's Retry-After is honoured with; a longer one fails at once."""


def is_transient(error: Exception) -> bool:
    """Whether retrying may help: connection errors, timeouts, rate limits, server errors and
    replies that are not a chat completion. Refused keys and bad requests do not get better."""
    if isinstance(error, openai.APIStatusError):
        if _server_wait(error) > MAX_RETRY_WAIT:
            return False
        return error.status_code in (408, 409, 429) or error.status_code >= 500
    return isinstance(
        error,
        (openai.APIConnectionError, openai.APIResponseValidationError, ValueError, KeyError,
         TypeError),
    )  # fmt: skip


def _server_wait(error: Exception) -> float:
    """Seconds the server asked to wait (Retry-After or retry-after-ms), 0 if it did not say."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return 0.0
    try:
        if (milliseconds := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(milliseconds) / 1000)
        if (seconds := headers.get("retry-after")) is not None:
            try:
                return max(0.0, float(seconds))
            except ValueError:  # an HTTP date
                when = email.utils.parsedate_to_datetime(seconds)
                return max(0.0, (when - datetime.now(when.tzinfo)).total_seconds())
    except (TypeError, ValueError):
        return 0.0
    return 0.0


def error_kind(error: Exception) -> str:
    """The error's name as the openai client knows it (langchain-openai wraps its errors in
    subclasses of its own), e.g. APITimeoutError, RateLimitError."""
    for kind in type(error).__mro__:
        if kind.__module__.split(".")[0] == "openai":
            return kind.__name__
    return type(error).__name__


def retry_delay(error: Exception, tries: int, backoff: float) -> float:
    """How long to wait before try `tries + 1`: what the server asked for, else exponential."""
    return _server_wait(error) or backoff * 2 ** (tries - 1)


def tool_calls(message: BaseMessage) -> tuple[ToolCall, ...]:
    """The calls a reply made: readable ones first, then those whose arguments were not JSON."""
    if not isinstance(message, AIMessage):
        return ()
    readable = [
        ToolCall(id=call.get("id") or f"call_{i}", name=call["name"], arguments=call["args"])
        for i, call in enumerate(message.tool_calls)
    ]
    unreadable = [
        ToolCall(
            id=call.get("id") or f"invalid_{i}",
            name=call.get("name") or "",
            arguments=None,
            error=call.get("error") or f"arguments are not a JSON object: {call.get('args')!r}",
        )
        for i, call in enumerate(message.invalid_tool_calls)
    ]
    return (*readable, *unreadable)


def message_text(message: BaseMessage) -> str:
    """The reply's text, also when a server returns content as a list of parts."""
    if isinstance(message.content, str):
        return message.content
    parts = []
    for part in message.content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
    return "".join(parts)


CONNECTION_POOLS = 4
"""HTTP connection pools per model. httpcore checks every pooled connection each time a request
starts or ends, so one pool serving a hundred concurrent calls spends milliseconds of CPU per
call; episodes spread over a few pools keep each pool small."""


class ChatModelPlayer:
    """Sends the request's messages to a chat model and returns its reply as it came."""

    def __init__(self, spec: ModelSpec, key: SecretStr) -> None:
        self.spec = spec
        self._chats = tuple(
            ChatOpenAI(
                model=spec.model,
                base_url=spec.base_url,
                api_key=key,
                temperature=spec.temperature,
                timeout=spec.timeout,
                max_retries=0,  # retried below, where the tries are counted for error.json
                # Watching a graph in messages mode (Studio does) would switch ChatOpenAI to
                # streaming, whose replies lose the completion id and usage: records of one
                # episode would then depend on who watched it. Whole replies keep them identical.
                disable_streaming=True,
                http_async_client=openai.DefaultAsyncHttpxClient(),
            )
            for _ in range(CONNECTION_POOLS)
        )
        self._chat = self._chats[0]

    @property
    def name(self) -> str:
        return self.spec.model

    @property
    def temperature(self) -> float:
        return self.spec.temperature

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        messages = [message.to_openai() for message in request.messages]
        # An episode's calls share one pool, so its connections stay warm between turns.
        episode = f"{request.instance.experiment}/{request.instance.game_id}"
        chat = self._chats[zlib.crc32(episode.encode()) % len(self._chats)]
        model = chat.bind_tools(list(request.tools)) if request.tools else chat
        for tries in itertools.count(1):
            try:
                reply = await model.ainvoke(messages)
            except Exception as error:
                if not is_transient(error) or tries > self.spec.max_retries:
                    raise self._failure(error, tries) from error
                await asyncio.sleep(retry_delay(error, tries, self.spec.retry_backoff))
                continue
            return PlayerReply(
                text=message_text(reply),
                prompt=messages,
                raw=reply.model_dump(mode="json"),
                tool_calls=tool_calls(reply),
            )
        raise AssertionError("unreachable")

    def _failure(self, error: Exception, tries: int) -> PlayerFailure:
        """The error as error.json will show it, with the key blanked should a server echo it."""
        message = str(error) or type(error).__name__
        secret = self._chat.openai_api_key
        if isinstance(secret, SecretStr) and len(secret.get_secret_value()) >= 8:
            message = message.replace(secret.get_secret_value(), "[key]")
        return PlayerFailure(error_kind(error), message, tries)

    def check(self) -> None:
        """Fail early, in one line, if the endpoint is unreachable or does not serve the model.

        Endpoints that cannot list their models are given the benefit of the doubt.
        """
        where = self.spec.base_url or "the OpenAI API"
        client = self._chat.root_client.with_options(
            timeout=min(self.spec.timeout, 15.0), max_retries=0
        )
        try:
            served = [model.id for model in client.models.list()]
        except openai.APIConnectionError:
            raise PlayerConfigError(
                f"cannot reach {where}; start the server or fix --base-url"
            ) from None
        except openai.AuthenticationError:
            raise PlayerConfigError(
                f"{where} rejected the key in {self.spec.api_key_env}; export a valid key"
            ) from None
        except openai.APIError:
            return
        if served and self.spec.model not in served:
            shown = ", ".join(served[:10]) + (" ..." if len(served) > 10 else "")
            raise PlayerConfigError(
                f"unknown model {self.spec.model!r} at {where}; it serves: {shown}"
            )

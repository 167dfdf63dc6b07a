"""A chat model behind any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

The API key is read once, when the player is built from its `ModelSpec`, and lives only inside
the player (a `SecretStr`) and its openai clients: it never enters state, records or logs.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime

import openai
from pydantic import (
    ConfigDict,
    Field,
    JsonValue,
    SecretStr,
    field_validator,
    model_validator,
)

from privateshared.agents.base import (
    PlayerFailure,
    PlayerReply,
    PlayerRequest,
    RequestKind,
    ToolCall,
)
from privateshared.agents.guided import (
    CONSTRAINT_FIELDS,
    GUIDED_SUFFIX,
    Guidance,
    constraint,
    form_of_server,
)
from privateshared.agents.refusals import (
    CHECK_MESSAGE,
    endpoint_message,
    error_parameter,
    is_refusal,
    refusal_fix,
)
from privateshared.agents.usage import Priced

LOCAL_SERVER_KEY = "not-needed"
"""Sent to a custom base URL when no key is set: local servers ignore it, the client needs one."""


class PlayerConfigError(ValueError):
    """A player that cannot be built; the message is one line with the fix."""


class ModelSpec(Priced):
    """Which model to call, where, and how."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    """Model name as the endpoint knows it, e.g. gpt-4o-2024-08-06."""
    base_url: str | None = None
    """OpenAI-compatible endpoint, e.g. http://localhost:8000/v1; None for OpenAI."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the key."""
    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature of every call; None sends none, for models that take only their
    provider's default (OpenAI's reasoning models, o-series and GPT-5, refuse any other)."""
    timeout: float = Field(default=60.0, gt=0)
    """Seconds before one call gives up; always finite."""
    max_retries: int = Field(default=3, ge=0, le=10)
    """Retries of a failed call (connection errors, timeouts, 429, 5xx, malformed replies)
    before the episode ends as errored."""
    retry_backoff: float = Field(default=1.0, ge=0)
    """Seconds before the first retry, doubled for each further one, unless the server says
    how long to wait (Retry-After)."""
    name: str | None = Field(default=None, min_length=1)
    """The name played under, in records and tables; the model id when None."""
    max_concurrent_calls: int | None = Field(default=None, ge=1)
    """At most this many calls under way at once, across the whole run; None: no cap."""
    extra_body: dict[str, JsonValue] = Field(default_factory=dict)
    """Further request parameters, passed to the endpoint as its provider documents them (e.g.
    max_tokens, reasoning_effort, top_p, chat_template_kwargs)."""
    guided: Guidance | None = None
    """Hold the answerer's replies to the game's format, in the request fields of this kind of
    server (agents/guided.py), or `auto`: the form the server names in /v1/models, settled
    before the run (`settle_guidance`); None plays unguided."""

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                "must name an environment variable holding the key (e.g. OPENAI_API_KEY), "
                "never hold the key itself"
            )
        return value

    @field_validator("extra_body")
    @classmethod
    def _adds_only(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        taken = sorted(set(value) & RESERVED_BODY_KEYS)
        if taken:
            raise ValueError(
                f"{taken[0]!r} is set by the game; use the entry's own fields (model, "
                "temperature) instead"
            )
        return value

    @model_validator(mode="after")
    def _one_constraint(self) -> ModelSpec:
        taken = sorted(set(self.extra_body) & CONSTRAINT_FIELDS) if self.guided else []
        if taken:
            raise ValueError(
                f"extra_body sets {taken[0]!r}, which guided decoding sets itself; remove it"
            )
        return self

    @property
    def played_as(self) -> str:
        """The name in records and tables; a guided model's is its own condition's."""
        name = self.name or self.model
        if self.guided and not name.endswith(GUIDED_SUFFIX):
            return name + GUIDED_SUFFIX
        return name

    def settings(self) -> dict[str, JsonValue]:
        """What experiment.json records of the model: everything but the key, which the spec
        never holds (only the name of its variable)."""
        settings = self.model_dump(mode="json", exclude_none=True)
        if self.temperature is None:  # said, not left out: none is sent, which is not 0
            settings["temperature"] = None
        if self.guided is not None and self.guided != "auto":  # the request fields, as sent
            settings["constraint"] = {
                kind: constraint(self.guided, kind) for kind in ("probe", "question")
            }
        return settings


RESERVED_BODY_KEYS = frozenset({"model", "messages", "temperature", "stream", "tools"})
"""Request fields the game sets itself; extra_body may not override them."""


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
    """The error's class, as the openai SDK raises it: e.g. APITimeoutError, RateLimitError."""
    return type(error).__name__


def retry_delay(error: Exception, tries: int, backoff: float) -> float:
    """How long to wait before try `tries + 1`: what the server asked for, else exponential."""
    return _server_wait(error) or backoff * 2 ** (tries - 1)


class ChatCompletionError(ValueError):
    """A reply that is not a chat completion (a malformed body): retried like a server error."""


def _text(content: JsonValue) -> str:
    """A message's text, also when a server returns content as a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and "text" in part)
        )
    return ""


def _tool_calls(message: dict[str, JsonValue]) -> tuple[ToolCall, ...]:
    """The calls a reply made: readable ones first, then those whose arguments were not a JSON
    object (their error says why)."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ChatCompletionError("tool_calls is not a list")
    readable, unreadable = [], []
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(function, dict):
            raise ChatCompletionError(f"tool call {index} has no function")
        name = str(function.get("name") or "")
        arguments = function.get("arguments")
        try:
            parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
        except json.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            readable.append(ToolCall(id=str(call.get("id") or f"call_{index}"), name=name,
                                     arguments=parsed))  # fmt: skip
        else:
            unreadable.append(ToolCall(
                id=str(call.get("id") or f"invalid_{index}"), name=name, arguments=None,
                error=f"arguments are not a JSON object: {arguments!r}",
            ))  # fmt: skip
    return (*readable, *unreadable)


def read_completion(body: bytes) -> tuple[dict[str, JsonValue], str, tuple[ToolCall, ...]]:
    """A chat completion's JSON, its text and its tool calls; `ChatCompletionError` for a body
    that is not one."""
    try:
        completion = json.loads(body)
        message = completion["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise ChatCompletionError(
            f"not a chat completion ({type(error).__name__}: {error}): {body[:200]!r}"
        ) from None
    if not isinstance(message, dict):
        raise ChatCompletionError(f"not a chat completion message: {message!r}")
    return completion, _text(message.get("content")), _tool_calls(message)


def _without_telemetry(client: openai.AsyncOpenAI) -> dict[str, str | openai.Omit]:
    """Request headers that leave out the SDK's telemetry (X-Stainless-OS and the like), as
    the SDK lets a request do: building them for every request costs a sixth of the client's
    CPU per call, and no endpoint needs them."""
    return {name: openai.Omit() for name in client.default_headers
            if name.lower().startswith("x-stainless-")}  # fmt: skip


class ChatModelPlayer:
    """Sends the request's messages to a chat model and returns its reply as it came.

    Calls go through the openai SDK's low-level request method (`AsyncOpenAI.post`, which the
    SDK documents for requests it has no typed method for), with the messages already in the
    chat format: the typed `chat.completions.create`, and langchain-openai's `ChatOpenAI` on top
    of it, would check and convert every message of the growing dialogue against the SDK's
    message types on every call, the largest cost of a run (see docs/performance.md). The
    SDK still sends, authenticates, times out and raises its errors; records keep the chat
    completion exactly as the endpoint returned it.
    """

    def __init__(self, spec: ModelSpec, key: SecretStr) -> None:
        self.spec = spec
        self._key = key
        self._clients: dict[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = {}
        self._headers: dict[str, str | openai.Omit] = {}

    def _client(self) -> openai.AsyncOpenAI:
        """The client of the running event loop, made on its first call.

        Its HTTP transport is aiohttp's, which the SDK offers for concurrency: with a hundred
        calls under way, httpx's pool checks every connection on every request, several times
        the CPU of the call itself. aiohttp's connections belong to one event loop, and a player
        may serve several (a test each, a worker process each), hence one client per loop."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = openai.AsyncOpenAI(
                api_key=self._key.get_secret_value(),
                base_url=self.spec.base_url,
                timeout=self.spec.timeout,
                max_retries=0,  # retried below, where the tries are counted for error.json
                http_client=openai.DefaultAioHttpClient(),
            )
            self._headers = _without_telemetry(client)
        return client

    async def aclose(self) -> None:
        """Close the running event loop's connections; a run ends with this."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    @property
    def name(self) -> str:
        return self.spec.played_as

    @property
    def temperature(self) -> float | None:
        return self.spec.temperature

    def request_body(
        self, messages: list[JsonValue], tools: Sequence[JsonValue], kind: RequestKind
    ) -> dict[str, object]:
        """The body of a call: the entry's extra_body, then what the game sets (no temperature
        when the spec has none). The check call before a run sends one like it."""
        body: dict[str, object] = {
            **self.spec.extra_body, "model": self.spec.model, "messages": messages,
        }  # fmt: skip
        if self.spec.temperature is not None:
            body["temperature"] = self.spec.temperature
        body["stream"] = False
        if tools:
            body["tools"] = list(tools)
        if self.spec.guided == "auto":  # settled before every run; never played unguided
            raise PlayerConfigError(f"{self.name}: guided decoding's form is not settled yet")
        if self.spec.guided is not None:
            body.update(constraint(self.spec.guided, kind))
        return body

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        messages: list[JsonValue] = [message.to_openai() for message in request.messages]
        body = self.request_body(messages, request.tools, request.kind)
        client = self._client()
        for tries in itertools.count(1):
            try:
                # cast_to=bytes: the body as it came, for the record and our own parsing
                content = await client.post(
                    "/chat/completions", body=body, cast_to=bytes,
                    options={"headers": self._headers},
                )  # fmt: skip
                completion, text, calls = read_completion(content)
            except Exception as error:
                if not is_transient(error) or tries > self.spec.max_retries:
                    # from None: the original error may carry the key a server echoed.
                    raise self._failure(error, tries, bool(request.tools)) from None
                await asyncio.sleep(retry_delay(error, tries, self.spec.retry_backoff))
                continue
            return PlayerReply(text=text, prompt=messages, raw=completion, tool_calls=calls)
        raise AssertionError("unreachable")

    def _failure(self, error: Exception, tries: int, tools: bool = False) -> PlayerFailure:
        """The error as error.json will show it, with the key blanked should a server echo it;
        for a refused request, with the setting to change (agents/refusals.py)."""
        message = self._blank(str(error) or type(error).__name__)
        fix = None
        if isinstance(error, openai.APIStatusError) and is_refusal(error.status_code):
            fix = refusal_fix(
                error.status_code, endpoint_message(error.body, message),
                parameter=error_parameter(error.body), key_variable=self.spec.api_key_env,
                extra_fields=list(self.spec.extra_body), tools=tools,
            )  # fmt: skip
        return PlayerFailure(error_kind(error), message, tries, fix)

    def _blank(self, text: str) -> str:
        """`text` without the key, should a server echo it."""
        secret = self._key.get_secret_value()
        return text.replace(secret, "[key]") if len(secret) >= 8 else text

    def guided_as(self, form: Guidance) -> ChatModelPlayer:
        """This model held to the game's format in `form` (its own condition, its own name)."""
        spec = ModelSpec.model_validate({**self.spec.model_dump(), "guided": form})
        return ChatModelPlayer(spec, self._key)

    def settle_guidance(self) -> ChatModelPlayer:
        """This player with `guided: auto` settled into the form its server takes, read from
        /v1/models (`owned_by`), or one line saying that the server cannot be guided."""
        if self.spec.guided != "auto":
            return self
        where = self.spec.base_url or "OpenAI's API"
        if self.spec.base_url is None:
            raise PlayerConfigError(
                f"{self.name}: {where} takes no grammar or regular expression, so it cannot "
                "hold replies to the game's format; play this model without --guided"
            )
        client = openai.OpenAI(
            api_key=self._key.get_secret_value(), base_url=self.spec.base_url,
            timeout=min(self.spec.timeout, 15.0), max_retries=0,
        )  # fmt: skip
        try:
            owners = {model.id: getattr(model, "owned_by", "") for model in client.models.list()}
        except openai.APIError as error:
            raise PlayerConfigError(
                f"{self.name}: cannot ask {where} what server it is ({type(error).__name__}); "
                "start it, or name its kind in a registry entry (guided: llama.cpp, vllm, "
                "vllm-legacy or sglang)"
            ) from None
        owner = owners.get(self.spec.model) or next(iter(owners.values()), "")
        form = form_of_server(str(owner or ""))
        if form is None:
            raise PlayerConfigError(
                f"{self.name}: {where} does not say it is llama.cpp, vLLM or SGLang (its models "
                f"are owned_by {owner!r}), so it cannot be guided as one; if it takes one of "
                "their constraints, say which in a registry entry (guided: llama.cpp, vllm, "
                "vllm-legacy or sglang), else play it without --guided"
            )
        return self.guided_as(form)

    def check(self, tools: Sequence[JsonValue] = ()) -> None:
        """Fail before the first episode, in one line, when the run's calls cannot work: the
        endpoint is unreachable or does not serve the model (its /v1/models), or it refuses one
        short chat call sent with the run's own settings (with `tools`: the questioner's call).

        The chat call is billed like any other (a few dozen tokens) and retried as the run's
        calls are; an endpoint that cannot list its models is given the benefit of the doubt
        for the listing, never for the call."""
        where = self.spec.base_url or "the OpenAI API"
        with openai.OpenAI(
            api_key=self._key.get_secret_value(), base_url=self.spec.base_url,
            timeout=self.spec.timeout, max_retries=0,
        ) as client:  # fmt: skip
            self._check_served(client.with_options(timeout=min(self.spec.timeout, 15.0)), where)
            check: list[JsonValue] = [{"role": "user", "content": CHECK_MESSAGE}]
            body = self.request_body(check, tools, "request" if tools else "question")
            for tries in itertools.count(1):
                try:
                    read_completion(client.post("/chat/completions", body=body, cast_to=bytes))
                    return
                except Exception as error:
                    if not is_transient(error) or tries > self.spec.max_retries:
                        raise PlayerConfigError(
                            self._check_failure(error, tries, where, bool(tools))
                        ) from None
                    time.sleep(retry_delay(error, tries, self.spec.retry_backoff))

    def _check_served(self, client: openai.OpenAI, where: str) -> None:
        """Stop when the endpoint cannot be reached, refuses the key or does not list the model."""
        try:
            served = [model.id for model in client.models.list()]
        except openai.APIConnectionError:
            raise PlayerConfigError(
                f"cannot reach {where}; start the server or fix the base URL (--base-url, or the "
                "registry entry's base_url)"
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

    def _check_failure(self, error: Exception, tries: int, where: str, tools: bool) -> str:
        """The line that stops a run whose check call failed: the endpoint's own words, and the
        setting to change (a refusal) or what to wait for (a failure a later run may get past)."""
        failure = self._failure(error, tries, tools)
        seat = " (the questioner's call, with its tools)" if tools else ""
        if isinstance(error, openai.APIStatusError) and failure.fix is not None:
            said = endpoint_message(error.body, failure.message)
            return (
                f"{self.name}: {where} refused the check call before the run{seat} (HTTP "
                f"{error.status_code}: {self._blank(said)}); {failure.fix}"
            )
        if isinstance(error, openai.APIConnectionError):
            return (
                f"{self.name}: the check call to {where} got no answer after {tries} tries "
                f"({failure.kind}); start the server or fix the base URL (--base-url, or the "
                "registry entry's base_url), or raise --timeout"
            )
        if isinstance(error, openai.APIStatusError):
            return (
                f"{self.name}: the check call to {where} failed after {tries} tries (HTTP "
                f"{error.status_code}: {self._blank(endpoint_message(error.body, failure.message))}"
                "); the endpoint cannot take calls now: run again once it can"
            )
        return (
            f"{self.name}: {where} did not answer the check call with a chat completion "
            f"({failure.kind}: {' '.join(failure.message.split())[:200]}); point the run at an "
            "OpenAI-compatible endpoint"
        )

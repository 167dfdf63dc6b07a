"""Any LangChain chat model as a player: `ChatOpenAI`, `ChatAnthropic`, `ChatOllama`, one's own.

The second kind of model player, beside the fast path (agents/llm.py): a `BaseChatModel`, made
by LangChain's `init_chat_model` from a registry entry with `provider:` (`LangChainSpec`) or
the command line's `langchain:PROVIDER:MODEL`, or passed in from Python. It is sent the
request's messages, with the questioner's tools bound by `bind_tools`, and its `AIMessage` is
read for the text and `tool_calls`. Records keep the messages in the chat format the fast path
records (`ChatMessage.to_openai`) and, as the raw response, the `AIMessage` as JSON (its
`response_metadata` and `usage_metadata` hold what the integration keeps of the provider's).

The call is `await model.ainvoke(messages)` inside a graph node, with no config of its own:
LangChain reads the node's config from its context variable (`ensure_config`), so LangGraph's
callbacks see each call as a child run of the node that made it, and Studio and LangSmith show
what the model was sent and said (tests/test_langchain_player.py counts them).

The model retries on its own (`max_retries`); what it raises after that ends the episode as
errored, like the fast path's failures. A key read from the entry's `api_key_env` goes to the
model and nowhere else; every key the model holds (its `SecretStr` fields) is blanked from
error messages and records.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from pydantic import (
    ConfigDict,
    Field,
    JsonValue,
    SecretStr,
    field_validator,
)
from pydantic_core import to_jsonable_python

from privateshared.agents.base import (
    ChatMessage,
    PlayerFailure,
    PlayerReply,
    PlayerRequest,
    ToolCall,
)
from privateshared.agents.llm import PlayerConfigError
from privateshared.agents.refusals import (
    CHECK_MESSAGE,
    endpoint_message,
    error_parameter,
    is_refusal,
    refusal_fix,
)
from privateshared.agents.usage import Priced

if TYPE_CHECKING:  # loaded once a chat model exists; the messages are loaded by LangGraph
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

LANGCHAIN_PREFIX = "langchain:"
"""The command line's form for a LangChain model: `langchain:PROVIDER:MODEL`, split at its
first two colons, so that model ids keep theirs (`langchain:ollama:llama3.1:8b`)."""
RESERVED_PARAMETERS = frozenset(
    {"model", "model_provider", "temperature", "timeout", "max_retries", "base_url", "api_key"}
)
"""Keyword arguments the entry's own fields set; `parameters` may not set them again."""


class LangChainSpec(Priced):
    """A model LangChain's `init_chat_model` builds: a registry entry with `provider:`.

    The fields below the model go to the integration's class as LangChain's standard parameters
    (`temperature`, `timeout`, `max_retries`, `base_url`, `api_key`); `parameters` adds the
    class's own keyword arguments, as its provider documents them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1)
    """Any provider `init_chat_model` knows: openai, anthropic, google_genai, ollama, bedrock,
    azure_openai, ... (each needs its integration package, e.g. langchain-anthropic)."""
    model: str = Field(min_length=1)
    """The model id as the provider knows it, colons and all (llama3.1:8b)."""
    name: str | None = Field(default=None, min_length=1)
    """The name played under, in records and tables; `provider:model` when None."""
    base_url: str | None = None
    """Where the provider's API is, for integrations that take `base_url`; None: its own."""
    api_key_env: str | None = None
    """The environment variable holding the key, passed as `api_key`; None: the integration
    reads its own variable (OPENAI_API_KEY, ANTHROPIC_API_KEY, GOOGLE_API_KEY, ...)."""
    temperature: float | None = Field(default=0.0, ge=0.0)
    """Sampling temperature; None passes none, for models that take only their provider's
    default (OpenAI's reasoning models)."""
    timeout: float | None = Field(default=60.0, gt=0)
    """Seconds before one call gives up; None leaves the integration's default (for an
    integration that names it otherwise: give its own name in `parameters`)."""
    max_retries: int | None = Field(default=3, ge=0, le=10)
    """Retries the model's own client makes before the episode ends as errored; None leaves
    the integration's default."""
    max_concurrent_calls: int | None = Field(default=None, ge=1)
    """At most this many calls under way at once, across the whole run; None: no cap."""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)
    """Further keyword arguments of the integration's class (e.g. max_tokens, top_p,
    reasoning_effort; Ollama's num_ctx)."""

    @field_validator("provider")
    @classmethod
    def _is_a_provider_name(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9_]*", value):
            raise ValueError(
                "must name a provider as init_chat_model does (openai, anthropic, google_genai, "
                "ollama, ...)"
            )
        return value

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                "must name an environment variable holding the key (e.g. ANTHROPIC_API_KEY), "
                "never hold the key itself"
            )
        return value

    @field_validator("parameters")
    @classmethod
    def _adds_only(cls, value: dict[str, JsonValue]) -> dict[str, JsonValue]:
        taken = sorted(set(value) & RESERVED_PARAMETERS)
        if taken:
            raise ValueError(f"{taken[0]!r} is the entry's own field; set it there instead")
        return value

    @property
    def played_as(self) -> str:
        """The name in records and tables."""
        return self.name or f"{self.provider}:{self.model}"

    def settings(self) -> dict[str, JsonValue]:
        """What experiment.json records of the model: everything but the key, which the spec
        never holds (at most the name of its variable)."""
        settings = self.model_dump(mode="json", exclude_none=True)
        if self.temperature is None:  # said, not left out: none is passed, which is not 0
            settings["temperature"] = None
        return settings


def is_langchain_name(name: object) -> TypeGuard[str]:
    """Whether `name` is the command line's `langchain:PROVIDER:MODEL`."""
    return isinstance(name, str) and name.startswith(LANGCHAIN_PREFIX)


def langchain_spec(name: str, **settings: Any) -> LangChainSpec:
    """The spec `langchain:PROVIDER:MODEL` names, played under that name, with `settings`
    (the command line's temperature, timeout, ...)."""
    _, provider, model = [*name.split(":", 2), "", ""][:3]
    if not provider or not model:
        raise PlayerConfigError(
            f"{name!r}: write langchain:PROVIDER:MODEL, e.g. langchain:anthropic:claude-sonnet-4-5 "
            "or langchain:ollama:llama3.1:8b"
        )
    return LangChainSpec(provider=provider, model=model, name=name, **settings)


def is_chat_model(value: object) -> TypeGuard[BaseChatModel]:
    """Whether `value` is a LangChain chat model. Nothing is imported to tell: while LangChain's
    chat models are not loaded, nothing can be one (start-up stays as fast)."""
    module = sys.modules.get("langchain_core.language_models.chat_models")
    return module is not None and isinstance(value, module.BaseChatModel)


def chat_model_name(model: BaseChatModel) -> str:
    """The model id a chat model calls (`model_name`, `model` or `model_id`, as integrations
    name it), else its class's name."""
    for field in ("model_name", "model", "model_id"):
        value = getattr(model, field, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _one_line(text: str, secrets: Sequence[str] = ()) -> str:
    line = " ".join(text.split())
    for secret in secrets:
        line = line.replace(secret, "[key]")
    return line if len(line) <= 300 else line[:297] + "..."


def build_chat_model(spec: LangChainSpec, environ: Mapping[str, str]) -> tuple[BaseChatModel, str]:
    """The chat model `spec` names, made by `init_chat_model`, and the key it was given ("" when
    the integration reads its own). Raises PlayerConfigError, one line naming the fix."""
    where = f"model {spec.played_as!r} (provider {spec.provider})"
    arguments: dict[str, Any] = dict(spec.parameters)
    for field in ("temperature", "timeout", "max_retries", "base_url"):
        if (value := getattr(spec, field)) is not None:
            arguments[field] = value
    key = ""
    if spec.api_key_env is not None:
        key = environ.get(spec.api_key_env, "")
        if not key:
            raise PlayerConfigError(
                f"{where}: {spec.api_key_env} is not set; export it, or leave api_key_env out "
                "for the variable the integration reads itself"
            )
        arguments["api_key"] = key
    # Imported here: only runs that name a LangChain model pay for it.
    from langchain.chat_models import init_chat_model

    try:
        model = init_chat_model(spec.model, model_provider=spec.provider, **arguments)
    except ImportError as error:
        package = re.search(r"requires the (\S+) package", str(error))
        needed = package.group(1) if package else f"langchain-{spec.provider.replace('_', '-')}"
        raise PlayerConfigError(
            f"{where}: LangChain's {spec.provider} integration is not installed; "
            f"pip install {needed}"
        ) from None
    except Exception as error:  # whatever the integration's class refuses
        secrets = [key] if len(key) >= 8 else []
        raise PlayerConfigError(
            f"{where}: LangChain cannot make it ({type(error).__name__}: "
            f"{_one_line(str(error), secrets)}); fix the entry"
        ) from None
    return model, key


def _secrets(model: BaseChatModel, given: str) -> tuple[str, ...]:
    """Every key the model holds (its `SecretStr` fields) and the one it was given: blanked
    wherever a message or a record might repeat it. Short ones are placeholders, not keys."""
    found = {given}
    for _, value in model:
        if isinstance(value, SecretStr):
            found.add(value.get_secret_value())
    return tuple(sorted(secret for secret in found if len(secret) >= 8))


def _to_langchain(message: ChatMessage) -> BaseMessage:
    """One of our messages as LangChain's message of its role."""
    if message.role == "system":
        return SystemMessage(content=message.content)
    if message.role == "user":
        return HumanMessage(content=message.content)
    if message.role == "tool":
        return ToolMessage(content=message.content, tool_call_id=message.tool_call_id or "")
    calls = [
        {"name": call.name, "args": call.arguments or {}, "id": call.id, "type": "tool_call"}
        for call in message.tool_calls
    ]
    return AIMessage(content=message.content, tool_calls=calls)


def read_tool_calls(message: AIMessage) -> tuple[ToolCall, ...]:
    """The calls a reply made, as the fast path reads them: readable ones first, then those
    whose arguments were not a JSON object (their error says why)."""
    readable: list[ToolCall] = []
    unreadable: list[ToolCall] = []
    for index, call in enumerate(message.tool_calls):
        arguments = call.get("args")
        identifier = call.get("id") or f"call_{index}"
        if isinstance(arguments, dict):
            readable.append(ToolCall(id=identifier, name=call["name"], arguments=arguments))
        else:
            unreadable.append(ToolCall(
                id=identifier, name=call["name"], arguments=None,
                error=f"arguments are not a JSON object: {arguments!r}",
            ))  # fmt: skip
    for index, invalid in enumerate(message.invalid_tool_calls):
        unreadable.append(ToolCall(
            id=invalid.get("id") or f"invalid_{index}", name=invalid.get("name") or "",
            arguments=None, error=f"arguments are not a JSON object: {invalid.get('args')!r}",
        ))  # fmt: skip
    return (*readable, *unreadable)


def _status(error: BaseException) -> int | None:
    """The HTTP status an error carries, as the usual clients spell it (openai and anthropic:
    status_code; httpx: response.status_code; aiohttp: status; google: code)."""
    for holder in (error, getattr(error, "response", None)):
        for field in ("status_code", "status", "code"):
            value = getattr(holder, field, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
                return value
    return None


def is_transient_failure(error: BaseException) -> bool:
    """Whether a provider's error is of the kind its client retries: a timeout, a lost
    connection, a rate limit or a server error. A refused request (a bad key, an unknown model,
    a bad request) is not: retrying it gets the same answer.

    LangChain's own classification comes first (its `ModelError`s say `is_retryable`; an
    integration raises them beside the SDK's class); then the HTTP status, then the class."""
    retryable = getattr(error, "is_retryable", None)
    if isinstance(retryable, bool):
        return retryable
    status = _status(error)
    if status is not None:
        return status in (408, 409, 429) or status >= 500
    if isinstance(error, (TimeoutError, ConnectionError)):
        return True
    names = [kind.__name__ for kind in type(error).__mro__]
    return any("Timeout" in name or "Connection" in name for name in names)


def failure_kind(error: BaseException) -> str:
    """The error's class as error.json names it: the provider SDK's where LangChain's integration
    wraps it (langchain-openai's OpenAITimeoutError is openai's APITimeoutError, as the fast
    path names it), else its own."""
    kind = type(error)
    if kind.__module__.startswith("langchain"):
        for base in kind.__mro__[1:]:
            if not base.__module__.startswith(("langchain", "builtins")):
                return base.__name__
    return kind.__name__


class LangChainPlayer:
    """A LangChain chat model playing through the `Player` protocol.

    Args:
        model: Any `BaseChatModel`; the questioner's needs `bind_tools`.
        name: The name played under; default: the spec's, else the model's id.
        temperature: For records and folder names; default: the spec's (None where it passes
            none), else the model's own `temperature` (a model without one needs it said here).
        spec: The registry entry the model was built from, so that a Ray worker can build it
            again; None for a model passed in from Python, which plays in this process only.
        key: The key the model was given, blanked in messages and records like its own.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        name: str | None = None,
        temperature: float | None = None,
        spec: LangChainSpec | None = None,
        key: str = "",
    ) -> None:
        self.model = model
        self.spec = spec
        self._name = name or (spec.played_as if spec else chat_model_name(model))
        own = spec.temperature if spec else getattr(model, "temperature", None)
        chosen = temperature if temperature is not None else own
        if chosen is None and spec is not None:  # the entry passes none: the provider's default
            self._temperature: float | None = None
        elif isinstance(chosen, bool) or not isinstance(chosen, int | float):
            raise PlayerConfigError(
                f"{self._name}: {type(model).__name__} has no temperature set, which records "
                "and folder names show; set it on the model (temperature=0, as the benchmark "
                "plays), or give it: LangChainPlayer(model, temperature=...)"
            )
        else:
            self._temperature = float(chosen)
        self._secrets = _secrets(model, key)
        self._with_tools: dict[str, Runnable[Any, Any]] = {}

    @classmethod
    def from_spec(cls, spec: LangChainSpec, environ: Mapping[str, str]) -> LangChainPlayer:
        """The player of a registry entry, its key (if it names one) read from `environ`."""
        model, key = build_chat_model(spec, environ)
        return cls(model, spec=spec, key=key)

    @property
    def name(self) -> str:
        return self._name

    @property
    def temperature(self) -> float | None:
        return self._temperature

    @property
    def can_call_functions(self) -> bool:
        """Whether the model implements `bind_tools`, which the questioner's seat needs."""
        from langchain_core.language_models import BaseChatModel

        return type(self.model).bind_tools is not BaseChatModel.bind_tools

    def _bound(self, tools: Sequence[dict[str, JsonValue]]) -> Runnable[Any, Any]:
        """The model with `tools` bound, made once per set of tools (one per instance)."""
        known = json.dumps(tools, sort_keys=True)
        bound = self._with_tools.get(known)
        if bound is None:
            if len(self._with_tools) >= 1024:  # a long run's many instances: start again
                self._with_tools.clear()
            bound = self._with_tools[known] = self.model.bind_tools(list(tools))
        return bound

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        prompt: list[JsonValue] = [message.to_openai() for message in request.messages]
        messages = [_to_langchain(message) for message in request.messages]
        runnable = self._bound(request.tools) if request.tools else self.model
        try:
            # No config passed: the node's, from LangChain's context variable, makes this call
            # a child run of the node in LangGraph's callbacks (Studio, LangSmith).
            reply = await runnable.ainvoke(messages)
        except Exception as error:
            # from None: the original error may carry the key a server echoed.
            raise self._failure(error, bool(request.tools)) from None
        if not isinstance(reply, AIMessage):
            raise PlayerFailure(
                "NotAnAIMessage", f"the model returned {type(reply).__name__}, not an AIMessage", 1
            )
        return PlayerReply(
            text=str(reply.text), prompt=prompt, raw=self._raw(reply),
            tool_calls=read_tool_calls(reply),
        )  # fmt: skip

    def _raw(self, reply: AIMessage) -> JsonValue:
        """The reply as JSON (content, tool calls, response_metadata, usage_metadata, id),
        without any key the model holds."""
        raw = cast(JsonValue, to_jsonable_python(reply, fallback=repr))
        if self._secrets:
            text = json.dumps(raw)
            if any(secret in text for secret in self._secrets):
                for secret in self._secrets:
                    text = text.replace(secret, "[key]")
                raw = cast(JsonValue, json.loads(text))
        return raw

    def _failure(self, error: Exception, tools: bool = False) -> PlayerFailure:
        """The error as error.json will show it: its class, its message without keys, and the
        tries the model's client made (its retries, for an error of the kind it retries); for
        a refused request, the setting to change (agents/refusals.py)."""
        message = str(error) or type(error).__name__
        for secret in self._secrets:
            message = message.replace(secret, "[key]")
        retries = getattr(self.model, "max_retries", None)
        tries = 1
        if is_transient_failure(error) and isinstance(retries, int):
            tries += retries
        status = _status(error)
        fix = None
        if status is not None and is_refusal(status) and not is_transient_failure(error):
            body = getattr(error, "body", None)
            fix = refusal_fix(
                status, endpoint_message(body, message), parameter=error_parameter(body),
                key_variable=self.spec.api_key_env if self.spec else None,
                extra_fields=list(self.spec.parameters) if self.spec else (),
                extra_name="parameters", tools=tools,
            )  # fmt: skip
        return PlayerFailure(failure_kind(error), message, tries, fix)

    def check(self, tools: Sequence[dict[str, JsonValue]] = ()) -> None:
        """Fail before the first episode, in one line, when the model refuses one short call
        with the run's own settings (with `tools`, bound as the questioner's are). The call is
        billed like any other (a few dozen tokens) and retried by the model's own client; the
        integration, the key's variable and the settings were checked when the model was
        built."""
        runnable = self._bound(tools) if tools else self.model
        try:
            runnable.invoke([HumanMessage(content=CHECK_MESSAGE)])
        except Exception as error:
            failure = self._failure(error, bool(tools))
            seat = " (the questioner's call, with its tools)" if tools else ""
            said = _one_line(endpoint_message(getattr(error, "body", None), failure.message))
            if failure.fix is not None:
                raise PlayerConfigError(
                    f"{self.name}: the model refused the check call before the run{seat} "
                    f"({failure.kind}: {said}); {failure.fix}"
                ) from None
            if is_transient_failure(error):
                raise PlayerConfigError(
                    f"{self.name}: the check call failed after {failure.tries} tries "
                    f"({failure.kind}: {said}); the provider cannot take calls now: run again "
                    "once it can"
                ) from None
            raise PlayerConfigError(
                f"{self.name}: the check call before the run failed ({failure.kind}: {said}); "
                "fix the model's settings"
            ) from None

    async def aclose(self) -> None:
        """Nothing to close: the model's integration owns its clients (langchain-openai shares
        one per endpoint across models)."""

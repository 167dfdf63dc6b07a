"""The one interface every player implements, and what crosses it.

The game master sends a `PlayerRequest` and gets a `PlayerReply`. A model player sends only the
messages; programmatic players (questioner, oracle, mock, replay) read what is being asked from
the other fields. Players keep no history: the dialogue lives in the graph's state.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, JsonValue

from privateshared.domains.instances import GameInstance

RequestKind = Literal["request", "question", "probe", "judge"]
"""request: the questioner's next move, made through tool calls; question: the answerer answers
it; probe: the answerer replies privately, yes or no, whether a slot is shared yet; judge: a
judge rates one of the questioner's questions."""


class ToolCall(BaseModel):
    """A function call a player asked for."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: dict[str, JsonValue] | None
    """None when the arguments could not be read as a JSON object."""
    error: str | None = None
    """Why the arguments could not be read."""


class ChatMessage(BaseModel):
    """One chat message, as OpenAI-compatible APIs take it."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """The calls an assistant message made."""
    tool_call_id: str | None = None
    """The call a tool message answers."""

    def to_openai(self) -> dict[str, JsonValue]:
        """The message in OpenAI's chat format, exactly as it is sent and recorded.

        Built once per message: the dialogue's messages go out again with every later call."""
        return self._openai

    @cached_property
    def _openai(self) -> dict[str, JsonValue]:
        message: dict[str, JsonValue] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments or {})},
                }
                for call in self.tool_calls
            ]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message


class PlayerRequest(BaseModel):
    """What the game master asks a player for."""

    model_config = ConfigDict(frozen=True)

    kind: RequestKind
    messages: tuple[ChatMessage, ...]
    """The whole context to send, the new message last."""
    instance: GameInstance
    """The episode being played (programmatic players read their script from it)."""
    turn: int
    """Dialogue turn for requests and questions (1 = first question); probing round for probes."""
    slot: str
    """The slot asked for, or probed."""
    attempt: int = 1
    """1 for the first try, up to 5 for re-prompted probes."""
    tools: tuple[dict[str, JsonValue], ...] = ()
    """Functions the player may call, as OpenAI tool schemas (the questioner's tools)."""
    listener: str | None = None
    """With two listeners: whose knowledge a probe asks about, or who asks a question (listener
    tags); None in the classic game."""


class PlayerReply(BaseModel):
    """What a player said, with the exact call behind it for requests.json."""

    model_config = ConfigDict(frozen=True)

    text: str
    prompt: JsonValue
    """The request exactly as sent (for a model: the messages); None when nothing was called,
    which keeps the reply out of requests.json."""
    raw: JsonValue
    """The response exactly as received, never holding credentials."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The functions the player called, in order."""


class PlayerFailure(RuntimeError):
    """A call that still failed after its retries: the infrastructure failed, not the player's
    play. The episode ends as errored, neither played nor aborted, and is played again later."""

    def __init__(self, kind: str, message: str, tries: int, fix: str | None = None) -> None:
        super().__init__(f"{kind}: {message} (after {tries} tries)")
        self.kind = kind
        """The error's class, e.g. APITimeoutError."""
        self.message = message
        """What the client said, without credentials."""
        self.tries = tries
        """Calls made for this request, failed retries included."""
        self.fix = fix
        """For a request the endpoint refused (HTTP 400, 401, 403, 404, 422), which playing
        again gets refused as well: the setting to change (agents/refusals.py). None for a
        failure a later run may get past."""


@runtime_checkable
class Player(Protocol):
    """Anything that can take part in the game."""

    @property
    def name(self) -> str:
        """Model or player name, as records and result folders show it."""
        ...

    @property
    def temperature(self) -> float | None:
        """Sampling temperature (0.0 for programmatic players); part of the results folder name.
        None for a model sent no temperature, which samples at its provider's default."""
        ...

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        """Reply to one request."""
        ...

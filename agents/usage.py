"""Tokens and money: the usage a model call reports, and what it costs at a model's price.

Every OpenAI-compatible chat completion carries `usage` (prompt and completion tokens, and, where
the provider reports them, `prompt_tokens_details.cached_tokens` and
`completion_tokens_details.reasoning_tokens`); a LangChain `AIMessage` carries the same as
`usage_metadata` (`input_tokens`, `output_tokens`, `input_token_details.cache_read`,
`output_token_details.reasoning`). Both are kept in requests.json as the call's raw response, so
`usage_of` reads a call's usage back from its record: nothing counts tokens beside the records.

Counted as OpenAI counts them: cached tokens are part of the prompt tokens, reasoning tokens part
of the completion tokens (and billed as output). A price is US dollars per million tokens, as
providers list them.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

PER_TOKENS = 1_000_000
"""Prices are per million tokens."""


class Usage(BaseModel):
    """Tokens some calls used, as their endpoint reported them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cached_tokens: int | None = Field(default=None, ge=0)
    """The part of the prompt tokens read from the provider's prompt cache; None where no call
    reported it."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """The part of the completion tokens the model spent reasoning; None where no call reported
    it."""

    def __add__(self, other: Usage) -> Usage:
        def both(mine: int | None, theirs: int | None) -> int | None:
            return None if mine is None and theirs is None else (mine or 0) + (theirs or 0)

        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=both(self.cached_tokens, other.cached_tokens),
            reasoning_tokens=both(self.reasoning_tokens, other.reasoning_tokens),
        )


class Price(BaseModel):
    """What a model's tokens cost, in US dollars per million tokens (a registry entry's
    `price: {input: 2.50, cached_input: 1.25, output: 10.00}`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    """Per million prompt tokens."""
    output: float = Field(ge=0)
    """Per million completion tokens, reasoning tokens included."""
    cached_input: float | None = Field(default=None, ge=0)
    """Per million prompt tokens read from the provider's cache; None: billed as input, the most
    they can cost."""

    def cost(self, usage: Usage) -> float:
        """What `usage` costs, in US dollars."""
        cached = usage.cached_tokens or 0
        cached_rate = self.input if self.cached_input is None else self.cached_input
        return (
            (usage.prompt_tokens - cached) * self.input
            + cached * cached_rate
            + usage.completion_tokens * self.output
        ) / PER_TOKENS


class Priced(BaseModel):
    """The fields a registry entry (a fast-path model or a LangChain one) prices its model by."""

    price: Price | None = None
    """US dollars per million tokens, for the cost in the results and for budgets; None: no
    cost is shown, none is guessed."""
    max_cost: float | None = Field(default=None, gt=0)
    """US dollars this model's calls may cost over a run's episodes (those an earlier run
    played included); needs `price`. None: no cap of its own."""

    @model_validator(mode="after")
    def _priced_if_capped(self) -> Priced:
        if self.max_cost is not None and self.price is None:
            raise ValueError(
                "max_cost needs a price to count against; add price: {input: ..., output: ...} "
                "(US dollars per million tokens)"
            )
        return self


def _count(holder: JsonValue, key: str) -> int | None:
    """A token count `holder[key]`, None when it is not a whole number of at least 0."""
    value = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def usage_of(raw: JsonValue) -> Usage | None:
    """The usage a call's raw response reports: a chat completion's `usage`, or a LangChain
    `AIMessage`'s `usage_metadata`; None for a response that reports none (a program's reply,
    a server that does not count)."""
    if not isinstance(raw, dict):
        return None
    usage, metadata = raw.get("usage"), raw.get("usage_metadata")
    if isinstance(usage, dict):
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
        cached = _count(usage.get("prompt_tokens_details"), "cached_tokens")
        reasoning = _count(usage.get("completion_tokens_details"), "reasoning_tokens")
    elif isinstance(metadata, dict):
        prompt, completion = _count(metadata, "input_tokens"), _count(metadata, "output_tokens")
        cached = _count(metadata.get("input_token_details"), "cache_read")
        reasoning = _count(metadata.get("output_token_details"), "reasoning")
    else:
        return None
    if prompt is None or completion is None:
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cached_tokens=cached,
                 reasoning_tokens=reasoning)  # fmt: skip


def total_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """The sum of the usages reported; None when none was."""
    reported = [usage for usage in usages if usage is not None]
    if not reported:
        return None
    # A plain Usage, also from one entry of a subclass (graph/usage.py's SeatUsage)
    total = Usage.model_validate(reported[0].model_dump(include=set(Usage.model_fields)))
    for usage in reported[1:]:
        total = total + usage
    return total

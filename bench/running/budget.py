"""What a run may cost: an estimate of every episode before it is played, and a budget that
stops starting episodes before what was spent and what those under way may still cost would pass
it (`--budget`, and a registry entry's `max_cost`).

**The estimate** plays the instance with stand-ins that make no call (the oracle answers, the
programmatic questioner asks, a judge gives one fixed rating), as a model that keeps the format
at every first try and plays to the end would, and measures what each seat would be sent and
would say: calls, prompt tokens (about `CHARS_PER_TOKEN` characters a token, plus
`MESSAGE_TOKENS` a message and the questioner's tools) and completion tokens (the stand-ins'
replies; for a model whose entry caps them, `max_completion_tokens` or `max_tokens`, every call
at its cap, which bounds a reasoning model's thinking too). It is an estimate: a model that
re-prompts (up to five tries a probe) or writes long answers costs more, one that aborts less.

**The budget** counts what this command's episodes cost: those an earlier run played and this
one keeps (read back from their usage.json) and those it plays, each priced at its seats'
models' prices. Before starting an episode the runner asks `Budget.start`: when what was spent,
plus the estimates of the episodes under way, plus this episode's estimate would pass a limit,
it does not start, and no later episode that limit covers starts either (episodes start in the
plan's order, so the ones left are those the next run plays). Episodes under way finish and are
recorded. A seat that reported no usage is counted at its estimate, never at 0.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from privateshared.agents.base import Player, PlayerReply, PlayerRequest
from privateshared.agents.baselines import OracleAnswerer
from privateshared.agents.langchain_player import LangChainPlayer
from privateshared.agents.llm import ChatModelPlayer, ModelSpec
from privateshared.agents.scripted import ProgrammaticQuestioner
from privateshared.agents.throttle import ThrottledPlayer
from privateshared.agents.usage import Price, Usage
from privateshared.bench.running.episodes import play_episode
from privateshared.bench.running.plan import Episode
from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.usage import USAGE_FILE, EpisodeUsage, Seat

CHARS_PER_TOKEN = 3.0
"""Characters a token, on the short side: English prose averages about four with OpenAI's
tokenizers, and names, numbers and JSON take more tokens; fewer characters a token estimate
more tokens."""
MESSAGE_TOKENS = 4
"""Tokens each message adds in the chat format (its role and delimiters), as OpenAI counts."""
RUN = "the run"
"""The limit of --budget, beside the models' own (max_cost)."""
JUDGE_REPLY = '{"score": 4, "reason": "A clear and relevant question."}'
"""The stand-in judge's rating, as long as a judge's usual one."""


class SeatEstimate(BaseModel):
    """What one seat of one episode is expected to use."""

    model_config = ConfigDict(frozen=True)

    calls: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class _StandInJudge:
    """Rates every question the same, and is never called."""

    name: str = "judge"
    temperature: float = 0.0

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return PlayerReply(text=JUDGE_REPLY, prompt=None, raw=None)


@dataclass
class _Measured:
    """A stand-in whose requests and replies are measured, as a model's would be."""

    inner: Player
    sizes: list[tuple[int, int]] = field(default_factory=list)
    """Per call: estimated prompt tokens, completion tokens."""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def temperature(self) -> float | None:
        return self.inner.temperature

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        reply = await self.inner.respond(request)
        self.sizes.append((prompt_tokens(request), completion_tokens(reply)))
        return reply


def tokens(text: str) -> int:
    """Estimated tokens of `text` (`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_tokens(request: PlayerRequest) -> int:
    """Estimated prompt tokens of a request: its messages and its tools."""
    messages = sum(tokens(message.content) + MESSAGE_TOKENS for message in request.messages)
    calls = sum(tokens(json.dumps(call.arguments)) for message in request.messages
                for call in message.tool_calls)  # fmt: skip
    return messages + calls + (tokens(json.dumps(list(request.tools))) if request.tools else 0)


def completion_tokens(reply: PlayerReply) -> int:
    """Estimated completion tokens of a reply: its text and its function calls."""
    calls = sum(tokens(call.name + json.dumps(call.arguments)) for call in reply.tool_calls)
    return tokens(reply.text) + calls


async def seat_estimates(instance: GameInstance, judged: bool) -> dict[Seat, SeatEstimate]:
    """What each seat of an episode of `instance` is expected to use, from the stand-ins' play
    (the judge's only when `judged`)."""
    seats: dict[Seat, _Measured] = {
        "answerer": _Measured(OracleAnswerer()), "questioner": _Measured(ProgrammaticQuestioner()),
    }  # fmt: skip
    if judged:
        seats["judge"] = _Measured(_StandInJudge())
    context = GameContext(answerer=seats["answerer"], questioner=seats["questioner"],
                          judge=seats.get("judge"))  # fmt: skip
    await play_episode(instance, context)
    return {
        seat: SeatEstimate(
            calls=len(measured.sizes),
            prompt_tokens=sum(size[0] for size in measured.sizes),
            completion_tokens=sum(size[1] for size in measured.sizes),
        )
        for seat, measured in seats.items()
    }


async def instance_estimates(
    episodes: Iterable[Episode], judged: bool
) -> dict[tuple[str, int], dict[Seat, SeatEstimate]]:
    """The seat estimates of every instance `episodes` play, by (experiment, game id)."""
    instances = {(e.experiment.name, e.instance.game_id): e.instance for e in episodes}
    found = await asyncio.gather(*(seat_estimates(i, judged) for i in instances.values()))
    return dict(zip(instances, found, strict=True))


@dataclass(frozen=True)
class ModelTerms:
    """What a model's calls cost, as its spec says."""

    name: str
    price: Price | None
    cap: int | None
    """Completion tokens a call may use at most, from its settings; None when unbounded."""
    max_cost: float | None


def terms_of(player: Player | None) -> ModelTerms | None:
    """A model player's terms; None for a program, a person or a user's player (no calls
    billed)."""
    inner = player.inner if isinstance(player, ThrottledPlayer) else player
    if not isinstance(inner, ChatModelPlayer | LangChainPlayer):
        return None
    spec = inner.spec
    if spec is None:  # a LangChain model passed in from Python: no entry, no price
        return ModelTerms(inner.name, None, None, None)
    settings = spec.extra_body if isinstance(spec, ModelSpec) else spec.parameters
    cap = next((value for key in ("max_completion_tokens", "max_tokens")
                if isinstance(value := settings.get(key), int) and value > 0), None)  # fmt: skip
    return ModelTerms(inner.name, spec.price, cap, spec.max_cost)


class Estimate(BaseModel):
    """What one model is expected to use and cost over some episodes."""

    model_config = ConfigDict(frozen=True)

    episodes: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    """None without a price."""

    def __add__(self, other: Estimate) -> Estimate:
        costs = [cost for cost in (self.cost_usd, other.cost_usd) if cost is not None]
        return Estimate(
            episodes=self.episodes + other.episodes, calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=sum(costs) if costs else None,
        )  # fmt: skip


def seat_estimate(seat: SeatEstimate, terms: ModelTerms) -> Estimate:
    """One seat's estimate at its model's terms: completion tokens at the cap where there is
    one, the cost at the price where there is one."""
    completion = seat.calls * terms.cap if terms.cap is not None else seat.completion_tokens
    used = Usage(prompt_tokens=seat.prompt_tokens, completion_tokens=completion)
    return Estimate(
        episodes=1, calls=seat.calls, prompt_tokens=seat.prompt_tokens,
        completion_tokens=completion,
        cost_usd=terms.price.cost(used) if terms.price is not None else None,
    )  # fmt: skip


def episode_estimate(
    seats: Mapping[Seat, SeatEstimate], models: Mapping[Seat, ModelTerms]
) -> dict[str, Estimate]:
    """One episode's estimate per model (a model in two seats summed), for its model seats."""
    by_model: dict[str, Estimate] = {}
    for seat, terms in models.items():
        if seat in seats:
            one = seat_estimate(seats[seat], terms)
            known = by_model.get(terms.name)
            by_model[terms.name] = one if known is None else (known + one).model_copy(
                update={"episodes": 1})  # fmt: skip
    return by_model


def episode_cost(
    usage: EpisodeUsage | None,
    seats: Mapping[Seat, SeatEstimate],
    models: Mapping[Seat, ModelTerms],
) -> dict[str, float]:
    """What a played episode cost per priced model: each seat's usage at its model's price, or
    its estimate where the seat reported no usage (never 0)."""
    spent: dict[str, float] = {}
    for seat, terms in models.items():
        if terms.price is None:
            continue
        used = usage.root.get(seat) if usage is not None else None
        if used is not None:
            cost = terms.price.cost(used)
        elif seat in seats:
            cost = seat_estimate(seats[seat], terms).cost_usd or 0.0
        else:
            continue
        spent[terms.name] = spent.get(terms.name, 0.0) + cost
    return spent


def read_usage(folder: Path) -> EpisodeUsage | None:
    """An episode's usage.json; None when there is none (or it cannot be read: then its
    seats count at their estimates)."""
    try:
        return EpisodeUsage.model_validate_json((folder / USAGE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def total(costs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Costs per model, summed."""
    summed: dict[str, float] = {}
    for cost in costs:
        for model, value in cost.items():
            summed[model] = summed.get(model, 0.0) + value
    return summed


@dataclass
class Budget:
    """The accounting of a budgeted run: limits, what was spent, what is under way.

    Pure bookkeeping: the runner asks `start` before each episode and calls `finish` when it
    ends; nothing is counted twice or kept apart from the episodes it comes from."""

    limit: float | None
    """--budget, in US dollars, over all models; None: no run-wide limit."""
    model_limits: Mapping[str, float] = field(default_factory=dict)
    """Per model name, its max_cost."""
    spent_before: Mapping[str, float] = field(default_factory=dict)
    """Per model: what the episodes an earlier run played, and this one keeps, cost."""
    finished: list[Mapping[str, float]] = field(default_factory=list)
    """Per episode this run finished: what it cost, per model."""
    under_way: dict[Path, Mapping[str, float]] = field(default_factory=dict)
    """Per episode under way (its folder): its estimated cost, per model."""
    stopped: dict[str, float] = field(default_factory=dict)
    """The limits that stopped an episode (RUN or a model's name), each with that episode's
    estimate: the first that would have passed it."""

    def spent(self) -> dict[str, float]:
        """Per model: what the episodes kept and finished cost."""
        return total([self.spent_before, *self.finished])

    def start(self, key: Path, estimate: Mapping[str, float]) -> bool:
        """Whether an episode estimated at `estimate` (per model) may start; if so it is under
        way until `finish`. An episode that bills nothing always starts."""
        if not any(estimate.values()):
            self.under_way[key] = estimate
            return True
        if RUN in self.stopped or any(model in self.stopped for model in estimate):
            return False
        counted = total([self.spent(), *self.under_way.values(), estimate])
        if self.limit is not None and sum(counted.values()) > self.limit:
            self.stopped[RUN] = sum(estimate.values())
            return False
        for model, cost in estimate.items():
            cap = self.model_limits.get(model)
            if cap is not None and cost and counted.get(model, 0.0) > cap:
                self.stopped[model] = cost
                return False
        self.under_way[key] = estimate
        return True

    def finish(self, key: Path, cost: Mapping[str, float]) -> None:
        """The episode under way at `key` ended, costing `cost` per model."""
        self.under_way.pop(key, None)
        self.finished.append(cost)


def stop_lines(budget: Budget, left: Sequence[float]) -> list[str]:
    """What a run stopped by its budget says: what was spent against which limit, the episodes
    left and their estimate, and how to go on."""
    spent = budget.spent()
    lines = []
    more = sum(left)
    for limit in budget.stopped:
        if limit == RUN:
            lines.append(
                f"budget: stopped before passing --budget {budget.limit:.2f} USD, having spent "
                f"{sum(spent.values()):.4f} USD on this run's episodes (those kept from earlier "
                "runs included)"
            )
        else:
            lines.append(
                f"budget: {limit} stopped before passing its max_cost "
                f"{budget.model_limits[limit]:.2f} USD, having spent {spent.get(limit, 0):.4f} USD"
            )
    lines.append(
        f"{len(left)} episodes not started, estimated at {more:.4f} USD more; the same command "
        "with a larger --budget (or max_cost) plays only those"
    )
    return lines


def seat_terms(
    episode: Episode, questioner: Player, judge: Player | None
) -> dict[Seat, ModelTerms]:
    """The terms of each seat of `episode` that a model takes."""
    players: dict[Seat, Player | None] = {
        "answerer": episode.answerer, "questioner": questioner, "judge": judge,
    }  # fmt: skip
    return {seat: terms for seat, player in players.items()
            if (terms := terms_of(player)) is not None}  # fmt: skip


def plan_estimate(
    episodes: Sequence[Episode],
    questioner: Player,
    judge: Player | None,
    estimates: Mapping[tuple[str, int], Mapping[Seat, SeatEstimate]],
) -> dict[str, Estimate]:
    """What `episodes` are expected to use and cost, per model, in the order models first play."""
    by_model: dict[str, Estimate] = {}
    for episode in episodes:
        seats = estimates[episode.experiment.name, episode.instance.game_id]
        for model, one in episode_estimate(seats, seat_terms(episode, questioner, judge)).items():
            by_model[model] = by_model[model] + one if model in by_model else one
    return by_model


@dataclass
class BudgetedRun:
    """A budget applied to a run's episodes: what each is estimated at, what each cost."""

    budget: Budget
    questioner: Player
    judge: Player | None
    estimates: Mapping[tuple[str, int], Mapping[Seat, SeatEstimate]]

    def _seats(self, episode: Episode) -> Mapping[Seat, SeatEstimate]:
        return self.estimates[episode.experiment.name, episode.instance.game_id]

    def estimate(self, episode: Episode) -> dict[str, float]:
        """An episode's estimated cost per priced model."""
        terms = seat_terms(episode, self.questioner, self.judge)
        return {model: one.cost_usd for model, one in
                episode_estimate(self._seats(episode), terms).items()
                if one.cost_usd is not None}  # fmt: skip

    def cost(self, episode: Episode, usage: EpisodeUsage | None) -> dict[str, float]:
        """What a played episode cost per priced model (`episode_cost`)."""
        terms = seat_terms(episode, self.questioner, self.judge)
        return episode_cost(usage, self._seats(episode), terms)

    def admit(self, episode: Episode) -> bool:
        """Whether `episode` may start (`Budget.start`)."""
        return self.budget.start(episode.folder, self.estimate(episode))

    def finish(self, episode: Episode, usage: EpisodeUsage | None) -> None:
        """`episode` ended, its seats having used `usage`."""
        self.budget.finish(episode.folder, self.cost(episode, usage))


def budgeted_run(
    limit: float | None,
    planned: Sequence[Episode],
    pending: Sequence[Episode],
    questioner: Player,
    judge: Player | None,
    estimates: Mapping[tuple[str, int], Mapping[Seat, SeatEstimate]],
) -> BudgetedRun:
    """The budget of a run: --budget `limit` and every model's max_cost, counting what the
    episodes it keeps (planned, not pending) cost; ValueError, one line, for a model without
    a price."""
    models = {terms.name: terms for episode in planned
              for terms in seat_terms(episode, questioner, judge).values()}  # fmt: skip
    unpriced = [name for name, terms in models.items() if terms.price is None]
    if unpriced:
        raise ValueError(
            f"a budget needs every model's price, and {unpriced[0]!r} has none; give it one in a "
            "registry entry (price: {input: ..., output: ...}, US dollars per million tokens; "
            "0 for your own server)"
        )
    caps = {name: terms.max_cost for name, terms in models.items() if terms.max_cost is not None}
    run = BudgetedRun(Budget(limit, caps), questioner, judge, estimates)
    playing = {episode.folder for episode in pending}
    kept = [run.cost(e, read_usage(e.folder)) for e in planned if e.folder not in playing]
    run.budget.spent_before = total(kept)
    return run


def is_budgeted(limit: float | None, players: Iterable[Player | None]) -> bool:
    """Whether a run has a budget: --budget, or a model with its own max_cost."""
    return limit is not None or any(
        terms.max_cost is not None for player in players if (terms := terms_of(player))
    )

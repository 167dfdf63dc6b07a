"""The state of one episode, as the graph's nodes read and update it. No logic lives here.

The state holds what happened (every message, reply and timestamp) and the game master's
scoreboard of which slots are shared; the records and scores are derived from it at the end.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from privateshared.agents.base import ToolCall
from privateshared.domains.instances import GameInstance
from privateshared.graph.records import CallFailure, CallRecord, EpisodeScores, Interactions

ProbeAnswer = Literal["yes", "no"]


class Reply(BaseModel):
    """What a player said, when, and the call behind it."""

    model_config = ConfigDict(frozen=True)

    text: str
    sent_at: str
    """ISO time the message went to the player."""
    received_at: str
    """ISO time the reply came back; the timestamp of its event and of its requests.json entry."""
    prompt: JsonValue = None
    """The request as sent; None for a pseudo reply that no player gave."""
    raw: JsonValue = None
    """The response as received; None for a pseudo reply."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The functions the player called (the questioner acts only through them)."""


class Exchange(BaseModel):
    """One turn of the dialogue: a message to the answerer and the answer that stays in its context.

    Turn 0 holds the instructions (the initial prompt and the pseudo answer `Ok.`); turn i >= 1
    holds the questioner's i-th question and the answer to it.
    """

    model_config = ConfigDict(frozen=True)

    slot: str | None
    """The slot asked for; None for the instructions."""
    request: Reply | None
    """The questioner's words; None for the instructions."""
    message: str
    """What the answerer received: the initial prompt, or `<TAG>: <request>`."""
    answer: Reply | None = None
    """The answerer's reply; None until it has replied."""
    parsed: str | None = None
    """The answer without its tag; None until answered, or when its format is broken."""
    filled: bool | None = None
    """Whether a valid answer contains the value asked for."""
    present: tuple[str, ...] = ()
    """Who heard this turn (listener tags); the questioner alone in the classic game."""


class ProbeAttempt(BaseModel):
    """One try at a probe."""

    model_config = ConfigDict(frozen=True)

    message: str
    """The probe as sent, with re-prompt words from the second try on."""
    reply: Reply
    parsed: ProbeAnswer | None
    """yes or no; None when the reply's format is broken."""


class Probe(BaseModel):
    """A private question about one slot, asked until a reply is valid or the tries run out."""

    model_config = ConfigDict(frozen=True)

    listener: str | None = None
    """Whose knowledge is probed (a listener tag) with two listeners; None in the classic game,
    where every probe is about the questioner."""
    slot: str
    question: str
    """The probe phrasing, without the game's framing."""
    gold: ProbeAnswer
    """The truth: yes once the slot is shared."""
    attempts: tuple[ProbeAttempt, ...]
    failed: bool = False
    """A call failed for good before a valid reply came: the probe has no answer, valid or not."""

    @property
    def answer(self) -> ProbeAnswer | None:
        """The valid reply, or None when every try was malformed."""
        return self.attempts[-1].parsed if self.attempts else None


class ToolCallRecord(BaseModel):
    """One function call of the questioner, as the game master executed it."""

    model_config = ConfigDict(frozen=True)

    call: ToolCall
    valid: bool
    """Whether the game master could carry the call out."""
    result: str
    """What the questioner was told; for `ask`, the answer it got."""
    intermediate_results: dict[str, JsonValue] = {}
    """What the game master checked, never shown to the questioner (e.g. whether a recorded
    value is the true one, whether the slot had been asked)."""


class QuestionerStep(BaseModel):
    """One reply of the questioner and the calls it made; a turn takes more than one step when
    the game master has to ask again for a valid question."""

    model_config = ConfigDict(frozen=True)

    turn: int
    """The dialogue turn the step prepares (its question is question `turn`)."""
    attempt: int
    reply: Reply
    calls: tuple[ToolCallRecord, ...]
    questioner: str | None = None
    """Who asks (a listener tag) when a handover brings a second questioner; None otherwise."""
    farewell: bool = False
    """The leaving questioner's last step before a handover: it may only record."""


class Judgment(BaseModel):
    """A judge's rating of one of the questioner's questions."""

    model_config = ConfigDict(frozen=True)

    turn: int
    question: str
    score: int | None
    """1 to 5; None when the judge's reply could not be read (missing, not 0)."""
    reason: str | None
    reply: Reply


class AudienceChange(BaseModel):
    """A second listener joining after turn k, or taking over with a note (two-listener games)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["late-joiner", "handover"]
    after_turn: int
    listener: str
    """The second listener's tag."""
    at: str
    """ISO time of the change."""
    note: str | None = None
    """Handover: what the leaving questioner says to the second listener."""
    note_values: dict[str, str] = {}
    """Handover: the values the note gives, as the questioner recorded them."""
    carried: tuple[str, ...] = ()
    """Handover: slots whose true value the note gives; the second listener knows them."""


class EpisodeRecords(BaseModel):
    """An episode's records as the game master built them from its state at the end."""

    model_config = ConfigDict(frozen=True)

    interactions: Interactions
    """interactions.json."""
    calls: list[CallRecord]
    """requests.json: every model call, in order."""


class GivenPlayer(BaseModel):
    """A seat's player as the run's context gave it, before it was made a `Player`."""

    model_config = ConfigDict(frozen=True)

    given: str | dict[str, JsonValue]
    """The name (`human`, `oracle`, `mock:4`, a model, an import path) or the model spec, as
    given; for a `Player` object given from Python, its name."""
    python_object: bool = False
    """Given as a `Player` object from Python: `given` names it but cannot make it again."""


class EpisodeSetup(BaseModel):
    """The players and rules an episode started with, as its first run's context gave them.

    Kept in the state so that they stay with the thread: a later run on it (the resume of a
    person's turn) plays with them, whether its context repeats them or leaves them out."""

    model_config = ConfigDict(frozen=True)

    answerer: GivenPlayer
    questioner: GivenPlayer
    judge: GivenPlayer | None
    max_tries: int
    sequential_probes: bool


class EpisodeState(BaseModel):
    """Everything about one episode that the nodes share."""

    experiment: str = "travel-booking"
    """Experiment of the default instance to play when `instance` is not given."""
    game_id: int = 0
    """Game id of the default instance to play when `instance` is not given."""
    setup: EpisodeSetup | None = None
    """The players and rules the episode started with; None until it has started."""
    instance: GameInstance | None = None
    """The instance played; filled from the default instances when absent."""
    dialogue: list[Exchange] = []
    """The answerer's conversation so far; probes never enter it."""
    shared_since: dict[str, int] = {}
    """Slot -> dialogue turn after which the questioner knows it (with two listeners: after
    which it was said to anyone). Slots absent are private."""
    heard_since: dict[str, dict[str, int]] = {}
    """Two listeners only: listener tag -> slot -> turn after which that listener knows it."""
    audience_change: AudienceChange | None = None
    """Two listeners only: the join or handover, once it has happened."""
    probe_rounds: list[list[Probe]] = []
    """Probing round k follows dialogue turn k; probes in the order asked."""
    questioner_steps: list[QuestionerStep] = []
    """Every reply of the questioner, with its function calls."""
    belief: dict[str, str] = {}
    """The questioner's belief state: what it recorded for each slot, its latest value."""
    judgments: list[Judgment] = []
    """The judge's ratings of the questions, when a judge is set."""
    abort_reason: str | None = None
    """Why the game master aborted the episode; None while the rules are kept."""
    error: CallFailure | None = None
    """A model call that failed after its retries; the episode stops, neither played nor
    aborted, and is played again by the next run."""
    records: EpisodeRecords | None = None
    """The records the scores were computed from (and the ones written); None until scored."""
    scores: EpisodeScores | None = None
    """Turn and episode scores, computed from the records at the end."""

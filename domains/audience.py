"""Who listens: the two-listener experiments, where a second listener joins late or takes over.

The classic game has one listener, the questioner, so "shared" means "said". Here a second
listener (a colleague) either joins after dialogue turn k and hears everything from then on
(`late-joiner`), or takes over after turn k from the questioner, who leaves with a spoken note
(`handover`). The game master then probes every slot once per listener present so far, and the
truth is kept per (listener, slot): a listener knows a slot once its value was said while the
listener was present, or was in a note addressed to it.

This module holds the instance side: what an instances file stores about the audience, the texts
the answerer reads about it, and how instances are sampled. The graph side (presence, notes, the
ground truth) is in `graph/listeners.py`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from privateshared.domains.schema import Domain

PRESENT = "[Present: "
"""Starts the line of a message that says who hears it."""

FAREWELL = (
    "You hand the conversation over to a colleague now and leave: record what you have "
    "learned, since your colleague gets your records as your note. No more questions."
)
"""What a leaving questioner is told on its last turn, before the handover."""

NOTHING_NOTED = "I have noted nothing yet."
"""The note of a leaving questioner that recorded nothing."""
_NOTED = "Here is what I have noted: "
_HANDOVER_OPENING = re.compile(
    r'The .+? you take over from has left, saying to you: "(.*)" '
    r"Go on from there: ask your first question\.",
    re.DOTALL,
)

AudienceKind = Literal["late-joiner", "handover"]
AUDIENCE_KINDS: tuple[AudienceKind, ...] = ("late-joiner", "handover")

Benchmark = Literal["classic", "two-listeners"]
"""The benchmark an experiment belongs to. The two-listener experiments measure something the
classic game does not (which listener knows what), so they are a benchmark of their own: evaluated
apart, never averaged into the classic one's scores."""
BENCHMARKS: tuple[Benchmark, ...] = ("classic", "two-listeners")
"""In the order reports show them: the classic benchmark first."""


class AudienceSpec(BaseModel):
    """What an instances file stores about the audience of a two-listener instance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: AudienceKind
    after_turn: int
    """k: the second listener joins (or takes over) after dialogue turn k, 1 <= k <= n - 2."""
    listener: str
    """The second listener's tag, e.g. COLLEAGUE."""
    role: str
    """The second listener's role in plain words, e.g. colleague."""
    note_slots: tuple[str, ...] = ()
    """Handover: the slots the programmatic questioner writes down before it leaves (a seeded
    subset of the ones it asks for before the handover); its note carries those it heard."""
    probes: dict[str, dict[str, int]]
    """Rounds k + 1 to n: index of the probe phrasing for each slot, asked about the second
    listener."""
    order: dict[str, tuple[tuple[str, str], ...]]
    """Rounds k + 1 to n: the (listener tag, slot) probes in the order they are asked."""

    @model_validator(mode="after")
    def _rounds_agree(self) -> AudienceSpec:
        if self.after_turn < 1:
            raise ValueError("after_turn must be at least 1")
        if set(self.probes) != set(self.order):
            raise ValueError("probes and order must cover the same rounds")
        return self


class Audience(BaseModel):
    """The audience of a two-listener instance, with every text resolved."""

    model_config = ConfigDict(frozen=True)

    kind: AudienceKind
    after_turn: int
    listener: str
    role: str
    note_slots: tuple[str, ...] = ()
    probes: tuple[dict[str, str], ...]
    """Rounds k + 1 to n, in order: slot -> probe question about the second listener."""
    order: tuple[tuple[tuple[str, str], ...], ...]
    """Rounds k + 1 to n, in order: (listener tag, slot) in probing order."""


def presence_line(present: Sequence[str]) -> str:
    """e.g. `[Present: TRAVEL-AGENT, COLLEAGUE]`."""
    return f"{PRESENT}{', '.join(present)}]"


def note_text(values: Mapping[str, str]) -> str:
    """The note a leaving questioner speaks: what it recorded, slot by slot."""
    if not values:
        return NOTHING_NOTED
    noted = "; ".join(f"{slot.upper()}: {value}" for slot, value in values.items())
    return f"{_NOTED}{noted}."


def read_note(note: str, slots: Iterable[str]) -> dict[str, str]:
    """What a note gives, slot -> value, read back from `note_text` (a value may hold `; `, not
    `; <SLOT>: ` of one of `slots`)."""
    if not note.startswith(_NOTED) or not note.endswith("."):
        return {}
    names = {slot.upper(): slot for slot in slots}
    heads = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    parts = re.split(rf"(?:^|; )({heads}): ", note[len(_NOTED) : -1])
    return {names[head]: value for head, value in zip(parts[1::2], parts[2::2], strict=True)}


def handover_opening(questioner: str, note: str) -> str:
    """The second questioner's first message after a handover: the note, and nothing else of
    what was said before it came."""
    return (
        f'The {questioner} you take over from has left, saying to you: "{note}" '
        "Go on from there: ask your first question."
    )


def read_handover_opening(message: str) -> str | None:
    """The note a `handover_opening` message carries; None for any other message."""
    match = _HANDOVER_OPENING.fullmatch(message)
    return None if match is None else match.group(1)


def audience_paragraph(domain: Domain) -> str:
    """What the answerer's instructions add about the second listener (our own words)."""
    assert domain.second_listener is not None
    second = domain.second_listener
    return (
        f"More than one person may hear you in this conversation: the {domain.questioner}, "
        f'whose messages begin with "{domain.tag}:", and the {domain.questioner}\'s '
        f'{second.role}, whose messages begin with "{second.tag}:". They are not always both '
        f"there. Each message tells you who is present, in a line such as "
        f'"{presence_line([domain.tag])}". Whoever is absent hears nothing of what is said '
        "meanwhile, but whatever one of them says to the other in your presence, you hear "
        "too. My side questions may ask about either of them."
    )


def two_listener_prompt(domain: Domain, values: dict[str, str]) -> str:
    """The classic instructions with the audience paragraph put before their last paragraph
    (the one that opens the conversation)."""
    paragraphs = domain.render_initial_prompt(values).split("\n\n")
    return "\n\n".join([*paragraphs[:-1], audience_paragraph(domain), paragraphs[-1]])


def experiment_name(domain: str, kind: AudienceKind) -> str:
    """e.g. travel-booking-handover."""
    return f"{domain}-{kind}"


def benchmark_of_name(experiment: str) -> Benchmark:
    """The benchmark an experiment's name implies: two-listeners for the names `experiment_name`
    gives, else classic. For records whose experiment.json does not say (older records,
    clembench's)."""
    two_listeners = experiment.endswith(tuple(f"-{kind}" for kind in AUDIENCE_KINDS))
    return "two-listeners" if two_listeners else "classic"


def sample_audience(
    domain: Domain, kind: AudienceKind, request_order: Sequence[str], rng: random.Random
) -> AudienceSpec:
    """The audience of one instance: when the change comes, what the programmatic questioner
    notes, and how the second listener is probed."""
    assert domain.second_listener is not None
    second = domain.second_listener
    names = list(domain.slots)
    n = len(names)
    after_turn = rng.randint(1, n - 2)
    note_slots: tuple[str, ...] = ()
    if kind == "handover":
        asked = list(request_order[:after_turn])
        # Some of what was asked, never nothing and, with two or more asked, never everything:
        # a note that carries it all leaves no difference between the listeners to probe.
        noted = set(rng.sample(asked, rng.randint(1, max(1, len(asked) - 1))))
        note_slots = tuple(slot for slot in asked if slot in noted)
    probes: dict[str, dict[str, int]] = {}
    order: dict[str, tuple[tuple[str, str], ...]] = {}
    for k in range(after_turn + 1, n + 1):
        probes[str(k)] = {slot: rng.randrange(len(domain.slots[slot].probes)) for slot in names}
        pairs = [(tag, slot) for tag in (domain.tag, second.tag) for slot in names]
        order[str(k)] = tuple(rng.sample(pairs, len(pairs)))
    return AudienceSpec(
        kind=kind,
        after_turn=after_turn,
        listener=second.tag,
        role=second.role,
        note_slots=note_slots,
        probes=probes,
        order=order,
    )

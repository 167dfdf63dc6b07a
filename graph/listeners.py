"""Who hears what, in the two-listener experiments (domains/audience.py): presence at each turn,
the note of a handover, the messages that tell the answerer, and the ground truth per listener.

A classic instance has one listener, the questioner, present throughout: every function here
then gives what the classic game has always done, so the graph needs no second path.
"""

from __future__ import annotations

from privateshared.domains.audience import presence_line
from privateshared.domains.instances import GameInstance
from privateshared.graph.state import AudienceChange, EpisodeState


def present_at(instance: GameInstance, turn: int) -> tuple[str, ...]:
    """Who hears dialogue turn `turn`: the questioner until turn k, then both after a late
    join, or the second listener alone after a handover."""
    audience = instance.audience
    if audience is None or turn <= audience.after_turn:
        return (instance.tag,)
    if audience.kind == "late-joiner":
        return (instance.tag, audience.listener)
    return (audience.listener,)


def asker_at(instance: GameInstance, turn: int) -> str:
    """Whose question turn `turn` is: the second listener's after a handover."""
    audience = instance.audience
    if audience is not None and audience.kind == "handover" and turn > audience.after_turn:
        return audience.listener
    return instance.tag


def hands_over_at(instance: GameInstance, change: AudienceChange | None, turn: int) -> bool:
    """Whether the questioner's turn `turn` is its farewell: a handover is due and every
    question before it was answered. It may record what it learned, and then it leaves."""
    audience = instance.audience
    return (
        audience is not None
        and audience.kind == "handover"
        and change is None
        and turn == audience.after_turn + 1
    )


def round_plan(instance: GameInstance, round_index: int) -> list[tuple[str | None, str, str]]:
    """The probes of round `round_index`, in the order asked: (listener, slot, probe question).

    The listener is None in the classic game, whose probes are all about the questioner.
    Instances phrase n + 1 rounds; a dialogue that runs longer reuses the last round's plan."""
    last = len(instance.probes) - 1
    k = min(round_index, last)
    audience = instance.audience
    if audience is None:
        return [(None, slot, question) for slot, question in instance.probes[k].items()]
    if k <= audience.after_turn:
        return [(instance.tag, slot, question) for slot, question in instance.probes[k].items()]
    index = k - audience.after_turn - 1
    about = {instance.tag: instance.probes[k], audience.listener: audience.probes[index]}
    return [(tag, slot, about[tag][slot]) for tag, slot in audience.order[index]]


def announcement(instance: GameInstance, change: AudienceChange) -> list[str]:
    """What the answerer hears when the audience changes, before the next question."""
    listener = change.listener
    if change.kind == "late-joiner":
        return [f"[{listener} joins the conversation and hears everything from now on.]"]
    return [
        f"[{instance.tag} hands the conversation over to {listener} and leaves.]",
        f"{instance.tag} to {listener}: {change.note}",
    ]


def question_message(
    instance: GameInstance, turn: int, text: str, change: AudienceChange | None
) -> str:
    """What the answerer receives for question `turn`: `<TAG>: <question>` in the classic game;
    with two listeners also who is present and, right after the change, what changed."""
    asker = asker_at(instance, turn)
    if instance.audience is None:
        return f"{asker}: {text}"
    lines = []
    if change is not None and turn == change.after_turn + 1:
        lines += announcement(instance, change)
    lines.append(presence_line(present_at(instance, turn)))
    lines.append(f"{asker}: {text}")
    return "\n".join(lines)


def knows(state: EpisodeState, listener: str | None, slot: str) -> bool:
    """The ground truth of a probe: whether `listener` (None: the classic questioner) knows
    `slot` now. It never flips back."""
    if listener is None:
        return slot in state.shared_since
    return slot in state.heard_since.get(listener, {})


def heard_now(
    state: EpisodeState, instance: GameInstance, turn: int, shared: frozenset[str]
) -> dict[str, dict[str, int]]:
    """`heard_since` after turn `turn`, whose answer shared `shared`: every listener present
    learns each slot it did not know yet."""
    if instance.audience is None:
        return state.heard_since
    heard = {listener: dict(slots) for listener, slots in state.heard_since.items()}
    for listener in present_at(instance, turn):
        known = heard.setdefault(listener, {})
        for slot in sorted(shared - set(known)):
            known[slot] = turn
    return heard

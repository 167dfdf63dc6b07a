"""The audience changes after turn k: a second listener joins, or takes over with a note.

Its own node, so that LangGraph Studio draws the change as a step of the episode."""

from __future__ import annotations

from langgraph.runtime import Runtime

from privateshared.domains.audience import note_text
from privateshared.graph.context import GameContext, game_context
from privateshared.graph.dialogue import revealed_slots
from privateshared.graph.state import AudienceChange, EpisodeState


async def change_audience(state: EpisodeState, runtime: Runtime[GameContext]) -> dict[str, object]:
    """After turn k, the second listener joins, or takes over with a note that carries what the
    questioner recorded. The note's values count as heard by the second listener when they are
    the true ones (by containment, as answers are read)."""
    instance = state.instance
    assert instance is not None and instance.audience is not None
    audience = instance.audience
    now = game_context(state, runtime).clock()
    k = audience.after_turn
    if audience.kind == "late-joiner":
        change = AudienceChange(kind=audience.kind, after_turn=k, listener=audience.listener,
                                at=now)  # fmt: skip
        return {"audience_change": change}
    noted = dict(state.belief)
    carried = revealed_slots(" ".join(noted.values()), instance.slots)
    change = AudienceChange(
        kind=audience.kind, after_turn=k, listener=audience.listener, at=now,
        note=note_text(noted), note_values=noted, carried=tuple(sorted(carried)),
    )  # fmt: skip
    heard = {listener: dict(slots) for listener, slots in state.heard_since.items()}
    heard[audience.listener] = dict.fromkeys(sorted(carried), k)
    # The second listener keeps its own belief, which starts empty: the note is in its prompt.
    return {"audience_change": change, "heard_since": heard, "belief": {}}

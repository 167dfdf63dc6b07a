"""From a finished episode's state to clembench's record files, written atomically (graph/files.py).

Turn 0 of `interactions.json` holds the instructions and probing round 0; turn i holds question i,
its answer and probing round i. Besides clembench's basic event types (`send message`,
`get message`, `parse`, `metadata`, `invalid format`) the game master logs these custom types,
as clembench's privateshared does:

- `info`: a probing round begins or ends;
- `probe question` / `probe answer`: one try of a probe, sent to and answered by the answerer
  (extra keys `round`, `slot`, `try`); the answer carries the model call in requests.json;
- `check`: a probe is done; whether its reply matches the truth (extra keys `slot`, `gold`,
  `answer`). Every probe ends with exactly one `check`;
- `tool call`: one function call of the questioner, after its `get message` (extra keys `id`,
  `name`, `arguments`, `valid`, `result` (what the questioner was told; for `ask`, the answer),
  `intermediate_results` (what the game master checked), `turn`, `attempt`);
- `judgment`: the judge's rating of question `turn` (extra keys `question`, `score` (1-5, or
  null when its reply could not be read), `reason`), after the judge's `get message`;
- `end`: the episode is over.

With two listeners (domains/audience.py) every probe event and `check` also names its
`listener`, a questioner's `get message` and `tool call` events name the `questioner` (and carry
`farewell` on the leaving questioner's last turn before a handover), and the
audience's changes are logged: `arrival` and `departure` (extra key `listener`) and `note` (extra
keys `from`, `to`, `values` as recorded, `carried`: the slots whose true value it gives).

`metadata` events with the extra key `shared_early` mark slots whose value an answer gave away
before the questioner asked for it; those with `revealed` list the values an answer gave.

This module is the only code in `graph/` that writes files, all through graph/files.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import JsonValue

from privateshared.domains.instances import GameInstance
from privateshared.graph.context import GameContext
from privateshared.graph.dialogue import PSEUDO_ANSWER, revealed_slots
from privateshared.graph.files import write_json, write_text
from privateshared.graph.listeners import round_plan
from privateshared.graph.records import (
    ANSWERER,
    GAME_NAME,
    GM,
    INVALID_PROBE_VALUE,
    JUDGE,
    QUESTIONER,
    Action,
    CallFailure,
    CallRecord,
    EpisodeScores,
    Event,
    Interactions,
    ProbeEntry,
)
from privateshared.graph.state import (
    AudienceChange,
    EpisodeState,
    Exchange,
    Probe,
    QuestionerStep,
    Reply,
)
from privateshared.graph.usage import USAGE_FILE, EpisodeUsage

PROBE_VALUES = {"yes": 1, "no": 0}


def describe_players(ctx: GameContext) -> dict[str, str]:
    """The `players` entry of interactions.json."""
    players = {
        GM: f"Game master for {GAME_NAME}",
        ANSWERER: f"Answerer: {ctx.answerer.name}",
        QUESTIONER: f"Questioner: {ctx.questioner.name}",
    }
    if ctx.judge is not None:
        players[JUDGE] = f"Judge: {ctx.judge.name}"
    return players


class _Log:
    """Events grouped by turn, and the model calls that go with them."""

    def __init__(self) -> None:
        self.turns: list[list[Event]] = []
        self.calls: list[CallRecord] = []
        self.last_time = ""

    def next_turn(self) -> None:
        self.turns.append([])

    def event(
        self,
        sender: str,
        to: str,
        kind: str,
        content: JsonValue,
        *,
        at: str | None = None,
        call: Reply | None = None,
        extra: Mapping[str, JsonValue] | None = None,
    ) -> None:
        self.last_time = at or self.last_time
        action = Action(type=kind, content=content, **(extra or {}))
        self.turns[-1].append(Event(sender=sender, to=to, timestamp=self.last_time, action=action))
        if call is not None and call.prompt is not None:
            self.calls.append(
                CallRecord(
                    timestamp=self.last_time,
                    manipulated_prompt_obj=call.prompt,
                    raw_response_obj=call.raw,
                )
            )


def _log_exchange(log: _Log, state: EpisodeState, turn: int, exchange: Exchange) -> None:
    if exchange.slot is None:  # the instructions
        assert exchange.answer is not None
        log.event(GM, ANSWERER, "send message", exchange.message, at=exchange.answer.sent_at)
        log.event(
            GM,
            GM,
            "metadata",
            f"Pseudo answer added to the answerer's context: {PSEUDO_ANSWER}",
            extra={"pseudo_answer": PSEUDO_ANSWER},
        )
        return
    if exchange.answer is None:
        return
    answer = exchange.answer
    log.event(GM, ANSWERER, "send message", exchange.message, at=answer.sent_at)
    log.event(ANSWERER, GM, "get message", answer.text, at=answer.received_at, call=answer)
    if exchange.parsed is None:
        return
    log.event(GM, GM, "parse", exchange.parsed)
    log.event(GM, GM, "metadata", f"Slot filled: {exchange.filled}", extra={"slot": exchange.slot})
    assert state.instance is not None
    values = state.instance.slots
    revealed: dict[str, JsonValue] = {
        slot: values[slot] for slot in sorted(revealed_slots(answer.text, values))
    }
    if revealed:
        given = ", ".join(values[slot] for slot in revealed)
        log.event(GM, GM, "metadata", f"Values given: {given}.", extra={"revealed": revealed})
    for slot, since in state.shared_since.items():
        if since == turn and slot != exchange.slot:
            log.event(
                GM, GM, "metadata",
                f"Value of {slot.upper()} given before it was asked: shared from turn {turn}.",
                extra={"shared_early": slot},
            )  # fmt: skip
    log.event(GM, QUESTIONER, "send message", exchange.parsed)


def _log_questioner_step(log: _Log, step: QuestionerStep) -> None:
    reply = step.reply
    where: dict[str, JsonValue] = {"turn": step.turn, "attempt": step.attempt}
    if step.questioner is not None:
        where["questioner"] = step.questioner
    if step.farewell:
        where["farewell"] = True
    log.event(QUESTIONER, GM, "get message", reply.text, at=reply.received_at, call=reply,
              extra=where)  # fmt: skip
    for record in step.calls:
        call = record.call
        shown = json.dumps(call.arguments, ensure_ascii=False) if call.arguments else ""
        log.event(
            GM, GM, "tool call", f"{call.name}({shown})",
            extra={
                "id": call.id, "name": call.name, "arguments": call.arguments,
                "valid": record.valid, "result": record.result,
                "intermediate_results": record.intermediate_results, **where,
            },
        )  # fmt: skip


def _log_probe(log: _Log, round_index: int, probe: Probe) -> None:
    about: dict[str, JsonValue] = {} if probe.listener is None else {"listener": probe.listener}
    for number, attempt in enumerate(probe.attempts, start=1):
        where: dict[str, JsonValue] = {"round": round_index, **about, "slot": probe.slot,
                                       "try": number}  # fmt: skip
        reply = attempt.reply
        log.event(GM, ANSWERER, "probe question", attempt.message, at=reply.sent_at, extra=where)
        log.event(
            ANSWERER, GM, "probe answer", reply.text, at=reply.received_at, call=reply, extra=where
        )
        log.event(GM, GM, "parse", attempt.parsed or "invalid")
    if probe.failed:  # no reply came; the episode's `error` event says why
        return
    validity = "valid" if probe.answer is not None else "invalid"
    tries = len(probe.attempts)
    whose = "" if probe.listener is None else f" ({probe.listener})"
    summary = f"Answer for {probe.slot.upper()}{whose} {validity} after {tries} tries."
    log.event(GM, GM, "metadata", summary)
    verdict = "correct" if probe.answer == probe.gold else "incorrect"
    log.event(
        GM, GM, "check", f"Answer is {verdict}.",
        extra={**about, "slot": probe.slot, "gold": probe.gold, "answer": probe.answer},
    )  # fmt: skip


def _log_audience(log: _Log, instance: GameInstance, change: AudienceChange | None) -> None:
    """The audience's changes: who arrives, who leaves, and the note between them."""
    if change is None:
        return
    log.event(GM, GM, "arrival", f"{change.listener} joins the conversation.", at=change.at,
              extra={"listener": change.listener})  # fmt: skip
    if change.note is None:
        return
    log.event(
        GM, GM, "note", f"{instance.tag} to {change.listener}: {change.note}",
        extra={"from": instance.tag, "to": change.listener, "values": dict(change.note_values),
               "carried": list(change.carried)},
    )  # fmt: skip
    log.event(GM, GM, "departure", f"{instance.tag} leaves the conversation.",
              extra={"listener": instance.tag})  # fmt: skip


def _probe_entry(instance: GameInstance, probe: Probe) -> ProbeEntry:
    about = {} if probe.listener is None else {"listener": probe.listener}
    return ProbeEntry(
        **about,
        target=probe.slot.upper(),
        question=instance.probe_wording.message(probe.question, 1),
        gt=PROBE_VALUES[probe.gold],
        answer=probe.attempts[-1].reply.text if probe.attempts else None,
        value=PROBE_VALUES[probe.answer] if probe.answer else INVALID_PROBE_VALUE,
        tries=len(probe.attempts),
    )


def build_records(
    state: EpisodeState, players: dict[str, str]
) -> tuple[Interactions, list[CallRecord]]:
    """The episode's interactions.json and requests.json, from its state."""
    instance = state.instance
    if instance is None:
        raise ValueError("the episode has no instance yet; records start after instruct_answerer")
    n = len(instance.request_order)
    log = _Log()
    change = state.audience_change
    # The change is logged where it happened: a late joiner arrives before the questioner's next
    # turn; a handover comes after the leaving questioner's farewell, before the second
    # questioner's first turn (or at the end, when no step came after it).
    first_after_change = None
    if change is not None:
        first_after_change = next(
            (step for step in state.questioner_steps
             if step.turn == change.after_turn + 1
             and (change.kind == "late-joiner" or step.questioner != instance.tag)),
            None,
        )  # fmt: skip

    for turn in range(max(len(state.dialogue), len(state.probe_rounds))):
        log.next_turn()
        if turn < len(state.dialogue):
            for step in state.questioner_steps:
                if step.turn == turn:
                    if step is first_after_change:
                        _log_audience(log, instance, change)
                    _log_questioner_step(log, step)
            _log_exchange(log, state, turn, state.dialogue[turn])
        if turn == 0 and instance.audience is not None:
            log.event(GM, GM, "arrival", f"{instance.tag} joins the conversation.",
                      extra={"listener": instance.tag})  # fmt: skip
        if turn < len(state.probe_rounds):
            log.event(GM, GM, "info", "Begin probing", extra={"round": turn})
            for probe in state.probe_rounds[turn]:
                _log_probe(log, turn, probe)
            log.event(GM, GM, "info", "End probing", extra={"round": turn})
    # Steps of a turn that brought no question: the finishing one, a farewell before a
    # handover, or a questioner's failed tries.
    for step in state.questioner_steps:
        if step.turn >= len(state.dialogue):
            if step is first_after_change:
                _log_audience(log, instance, change)
            _log_questioner_step(log, step)
    if first_after_change is None:
        _log_audience(log, instance, change)
    for judgment in state.judgments:
        reply = judgment.reply
        log.event(JUDGE, GM, "get message", reply.text, at=reply.received_at, call=reply,
                  extra={"turn": judgment.turn})  # fmt: skip
        rating = "unreadable, counted as missing" if judgment.score is None else judgment.score
        log.event(
            GM, GM, "judgment", f"Question {judgment.turn} rated {rating}.",
            extra={"turn": judgment.turn, "question": judgment.question,
                   "score": judgment.score, "reason": judgment.reason},
        )  # fmt: skip
    if state.abort_reason is not None:
        log.event(GM, GM, "invalid format", f"Abort: {state.abort_reason}.")
    if state.error is not None:
        failure = state.error
        log.event(
            GM, GM, "error",
            f"A call to {failure.player} ({failure.model}) failed after {failure.tries} tries: "
            f"{failure.kind}: {failure.message}",
            at=failure.at, extra={"kind": failure.kind, "tries": failure.tries},
        )  # fmt: skip
    log.event(GM, GM, "end", "Game finished." if state.error is None else "Game stopped.")

    # One count per probing round: n + 1, or more when a questioner asked more than n questions.
    rounds = max(n + 1, len(state.dialogue), len(state.probe_rounds))
    requests = [0] * rounds
    parsed = [0] * rounds
    violated = [0] * rounds
    for turn, exchange in enumerate(state.dialogue):
        if exchange.slot is not None and exchange.answer is not None:
            requests[turn] += 1
            parsed[turn] += exchange.parsed is not None
            violated[turn] += exchange.parsed is None
    for k, probes in enumerate(state.probe_rounds):
        for probe in probes:
            for attempt in probe.attempts:
                requests[k] += 1
                parsed[k] += attempt.parsed is not None
                violated[k] += attempt.parsed is None
    played = sum(
        1 for k, probes in enumerate(state.probe_rounds)
        if len(probes) == len(round_plan(instance, k))
        and all(probe.answer is not None for probe in probes)
    )  # fmt: skip
    interactions = Interactions(
        players=players,
        turns=log.turns,
        probes=[
            [_probe_entry(instance, probe) for probe in probes if not probe.failed]
            for probes in state.probe_rounds
        ],
        # clembench's name: the index of the answer after which each slot became shared.
        realised_slots={
            slot: state.shared_since[slot] - 1
            if slot in state.shared_since
            else instance.request_order.index(slot)
            for slot in instance.request_order
        },
        request_count=requests,
        parsed_request_count=parsed,
        violated_request_count=violated,
        filled_slots=[bool(ex.filled) for ex in state.dialogue[1:] if ex.parsed is not None],
        aborted=state.abort_reason is not None,
        played_probe_rounds=played,
    )
    return interactions, log.calls


def interactions_json(interactions: Interactions) -> str:
    """interactions.json's text, as json.dumps(indent=2) writes it.

    pydantic's JSON writer gives those bytes in an eighth of the time, and interactions.json is
    the largest record, written for every episode (tests/test_episodes.py compares the two)."""
    return interactions.model_dump_json(indent=2) + "\n"


INTERACTIONS_FILE = "interactions.json"
REQUESTS_FILE = "requests.json"
SCORES_FILE = "scores.json"
ERROR_FILE = "error.json"


def write_episode(
    folder: Path,
    instance_spec: JsonValue,
    interactions: Interactions,
    calls: list[CallRecord],
    outcome: EpisodeScores | CallFailure,
    usage: EpisodeUsage | None = None,
) -> None:
    """Write one episode's records, and usage.json when its calls reported usage (graph/usage.py).
    The last file marks the episode done: scores.json when it was played to its end (or
    aborted), error.json when a call failed for good. Until then, an interrupted write leaves an
    episode that the next run plays again."""
    for marker in (SCORES_FILE, ERROR_FILE, USAGE_FILE):  # an earlier try's are stale
        (folder / marker).unlink(missing_ok=True)
    write_json(folder / "instance.json", instance_spec)
    write_text(folder / INTERACTIONS_FILE, interactions_json(interactions))
    # One call per line: the file holds every prompt in full, and json's C encoder, which
    # writes it several times faster than the indenting one, only writes single lines.
    lines = (json.dumps(call.model_dump(mode="python"), ensure_ascii=False) for call in calls)
    write_text(folder / REQUESTS_FILE, "[\n" + ",\n".join(lines) + "\n]\n")
    if usage is not None:
        write_json(folder / USAGE_FILE, usage)
    last = SCORES_FILE if isinstance(outcome, EpisodeScores) else ERROR_FILE
    write_json(folder / last, outcome)

"""What a domain folder holds: the slots an answerer knows and the texts used to ask about them.

A domain is the first step of an episode: its value pools, request phrasings and probe phrasings
are sampled into game instances (`instances.py`), which the graph then plays.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

ANSWER_TAG = "ANSWER:"
"""Starts every valid answer to a question of the questioner."""
ASIDE_TAG = "ASIDE:"
"""Starts every valid reply to a probe of the game master."""
PROBE_TAG = "ME:"
"""Starts every probe of the game master; re-prompts add their words right after it."""
# The three labels above are the game's protocol: the game master parses replies with them,
# so every initial prompt must teach them (checked on load).

QUESTION_PLACEHOLDER = "{question}"
"""Where a probe's wording puts the probe question."""
PROBE_INSTRUCTION = "Answer this question with yes or no and then stop."
REPROMPTS = (
    "Your last reply did not follow the format.",
    "Please reply on one line that starts with ASIDE: and then says yes or no.",
    "Only ASIDE: yes or ASIDE: no is accepted here.",
    "Last try: reply with exactly ASIDE: yes or ASIDE: no.",
)
"""Our words put right after `ME:` on tries 2 to 5."""

TAG_PLACEHOLDER = "{tag}"
"""Where the initial prompt names the questioner's tag (e.g. TRAVEL-AGENT)."""
SLOTS_PLACEHOLDER = "{slots}"
"""Where the initial prompt lists the answerer's private values, one `SLOT: value` line each."""


class ProbeWording(BaseModel):
    """The probe message of each try, word for word: the game's framing around a probe question.

    Our domains frame a probe one way (`OUR_PROBE_WORDING`); clembench's instances, played with
    clembench's texts, are framed as clembench frames them (`clembench_texts.py`), so that the
    answerer receives the same bytes in both benchmarks.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    tries: tuple[str, ...] = Field(min_length=1)
    """The message of try 1, 2, ...; `{question}` stands for the probe question. Their number
    caps the tries of a probe."""

    def message(self, question: str, attempt: int) -> str:
        """The probe as sent on try `attempt` (1-based)."""
        return self.tries[attempt - 1].replace(QUESTION_PLACEHOLDER, question)


OUR_PROBE_WORDING = ProbeWording(
    tries=(
        f"{PROBE_TAG} {QUESTION_PLACEHOLDER} {PROBE_INSTRUCTION}",
        *(f"{PROBE_TAG} {words} {QUESTION_PLACEHOLDER} {PROBE_INSTRUCTION}" for words in REPROMPTS),
    )
)
"""How our domains word a probe: the tag, re-prompt words from the second try on, the question
and the instruction, one space apart."""


class SlotSpec(BaseModel):
    """One slot of a domain: its possible values and the texts that ask about it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = Field(min_length=1)
    """What the slot holds, in a few words (for people and for an LLM questioner; never a value)."""
    values: tuple[str, ...] = Field(min_length=1)
    """Value pool; an instance draws one. No value may contain another value of the domain."""
    requests: tuple[str, ...] = Field(min_length=1)
    """Ways the questioner asks for the slot."""
    probes: tuple[str, ...] = Field(min_length=1)
    """Yes/no questions the game master asks privately: does the questioner know this slot yet?"""


class SecondListener(BaseModel):
    """Someone besides the questioner who may listen in (the two-listener experiments)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: str = Field(min_length=1)
    """Their role in plain words (e.g. `colleague`); probes about them read `the <role>` where
    the questioner's probes read `the <questioner>`."""
    tag: str = Field(min_length=1, pattern=r"^[A-Z0-9]+(-[A-Z0-9]+)*$")
    """Their label (e.g. `COLLEAGUE`): starts their questions, and names them in the records."""


class Domain(BaseModel):
    """A dialogue setting: who asks, what the answerer knows, and how both are phrased."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    """Experiment name, as in instances files and record folders (e.g. `travel-booking`)."""
    tag: str = Field(min_length=1, pattern=r"^[A-Z0-9]+(-[A-Z0-9]+)*$")
    """Label that starts every question to the answerer (e.g. `TRAVEL-AGENT`)."""
    questioner: str = Field(min_length=1)
    """The questioner's role in plain words (e.g. `travel agent`)."""
    slots: dict[str, SlotSpec] = Field(min_length=1)
    """Slots in the order the initial prompt lists them."""
    initial_prompt: str = Field(min_length=1)
    """Template of the answerer's instructions, with `{tag}` and `{slots}` placeholders."""
    second_listener: SecondListener | None = None
    """Who may join or take over in the two-listener experiments; None: classic game only."""

    def second_listener_probe(self, probe: str) -> str:
        """A probe about the questioner, asked about the second listener instead."""
        assert self.second_listener is not None
        return probe.replace(f"the {self.questioner}", f"the {self.second_listener.role}")

    def render_initial_prompt(self, values: dict[str, str]) -> str:
        """Fill the template with the tag and one `SLOT: value` line per slot."""
        facts = "\n".join(f"{slot.upper()}: {value}" for slot, value in values.items())
        return self.initial_prompt.replace(TAG_PLACEHOLDER, self.tag).replace(
            SLOTS_PLACEHOLDER, facts
        )

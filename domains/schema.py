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

TAG_PLACEHOLDER = "{tag}"
"""Where the initial prompt names the questioner's tag (e.g. TRAVEL-AGENT)."""
SLOTS_PLACEHOLDER = "{slots}"
"""Where the initial prompt lists the answerer's private values, one `SLOT: value` line each."""


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

    def render_initial_prompt(self, values: dict[str, str]) -> str:
        """Fill the template with the tag and one `SLOT: value` line per slot."""
        facts = "\n".join(f"{slot.upper()}: {value}" for slot, value in values.items())
        return self.initial_prompt.replace(TAG_PLACEHOLDER, self.tag).replace(
            SLOTS_PLACEHOLDER, facts
        )

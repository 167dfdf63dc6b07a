"""Guided decoding: the answerer's replies held to the game's format by the server, so that what
is left to the model is its scorekeeping.

clembench's % Played mixes two abilities, keeping the reply format and keeping score: a model
that knows what it shared but writes `Yes.` instead of `ASIDE: yes` five times aborts. Local
servers can constrain a reply while the model still chooses its content: under the constraint a
probe's reply can only be `ASIDE: yes` or `ASIDE: no`, and which of the two is the model's own
choice; an answer is one `ANSWER: ` line, its words the model's. The questioner's tool calls and
the judge's ratings are never constrained.

Servers take the constraint in their own request fields, named by the *form*:

- `llama.cpp`: a GBNF grammar in `grammar` (llama.cpp's `llama-server` and llama-cpp-python);
- `vllm`: `structured_outputs: {regex}` (vLLM's structured outputs, 0.10 and later);
- `vllm-legacy`: `guided_regex` (vLLM before 0.12, which removed it);
- `sglang`: `regex`.

A server that says what it is in `/v1/models` (`owned_by`) is recognised (`form_of_server`);
anything else (OpenAI's API takes no grammar) must be named in a registry entry, or is refused
before the run, never played unguided under a guided name.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import JsonValue

from privateshared.agents.base import RequestKind
from privateshared.domains.schema import ANSWER_TAG, ASIDE_TAG

GuidedForm = Literal["llama.cpp", "vllm", "vllm-legacy", "sglang"]
GUIDED_FORMS: tuple[GuidedForm, ...] = get_args(GuidedForm)
Guidance = GuidedForm | Literal["auto"]
"""A form, or `auto`: the form its server names in /v1/models, settled before the run."""
GUIDED_SUFFIX = "-guided"
"""Added to a guided model's name, so its records, folders and table rows are its own
condition, never mixed with the same model unguided."""

# The probe's reply, exactly as the game's parser reads it best (graph/probing.py).
PROBE_REGEX = rf"{ASIDE_TAG} (yes|no)"
PROBE_GRAMMAR = f'root ::= "{ASIDE_TAG} " ("yes" | "no")'
# One answer line: the tag, then at least one character that ends no line. The grammar bounds
# its length, since a small model under a grammar that never forces an end may not stop.
ANSWER_REGEX = rf"{ANSWER_TAG} [^\n]{{1,200}}"
ANSWER_GRAMMAR = f'root ::= "{ANSWER_TAG} " [^\\n]{{1,200}}'

SERVER_FORMS: dict[str, GuidedForm] = {
    "llamacpp": "llama.cpp",  # llama.cpp's llama-server
    "me": "llama.cpp",  # llama-cpp-python's server (the local models of this project)
    "vllm": "vllm",
    "sglang": "sglang",
}
"""`owned_by` of a server's `/v1/models` entries -> how it takes a constraint."""


def constraint(form: GuidedForm, kind: RequestKind) -> dict[str, JsonValue]:
    """The request fields that hold a reply of `kind` to the game's format, in `form`; none for
    the questioner's moves and the judge's ratings, which are never constrained."""
    if kind not in ("probe", "question"):
        return {}
    regex, grammar = (PROBE_REGEX, PROBE_GRAMMAR) if kind == "probe" else (
        ANSWER_REGEX, ANSWER_GRAMMAR,
    )  # fmt: skip
    if form == "llama.cpp":
        return {"grammar": grammar}
    if form == "vllm":
        return {"structured_outputs": {"regex": regex}}
    if form == "vllm-legacy":
        return {"guided_regex": regex}
    return {"regex": regex}


CONSTRAINT_FIELDS = frozenset({"grammar", "structured_outputs", "guided_regex", "regex"})
"""The request fields `constraint` sets; a model's extra_body may not set them as well."""


def form_of_server(owned_by: str) -> GuidedForm | None:
    """How a server that lists its models as `owned_by` takes a constraint; None when unknown."""
    return SERVER_FORMS.get(owned_by.lower())

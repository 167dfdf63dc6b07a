"""Requests an endpoint refuses, and which setting to change so that it takes them.

A refusal (HTTP 400, 401, 403, 404, 422) is the same however often it is sent: a wrong
parameter (a reasoning model that takes no temperature), a field of `extra_body` the model does
not know, a refused key, an unknown model. The check call before a run stops it with one line
saying so (bench/running/preflight.py), and an episode a refusal ends during a run keeps the fix
in its error.json, so that the run says what to change instead of advising to run it again.
"""

from __future__ import annotations

import re
from collections.abc import Collection

CHECK_MESSAGE = "Reply with the single word OK."
"""The one message of the check call each model gets before a run, with the run's settings:
short, so that it costs a few dozen tokens (a reasoning model's thinking aside)."""
REFUSED_STATUSES = frozenset({400, 401, 403, 404, 422})
"""HTTP statuses that a re-run gets again."""
TEMPERATURE_FIX = (
    "send no temperature: temperature: null in its registry entry, or --temperature default on "
    "the command line"
)


def is_refusal(status: int | None) -> bool:
    """Whether an HTTP status says the request itself was refused."""
    return status in REFUSED_STATUSES


def endpoint_message(body: object, fallback: str) -> str:
    """The endpoint's own words, from an error body OpenAI-shaped (`{"error": {"message": ...}}`,
    or `{"message": ...}` as some servers send it), else `fallback`; on one line."""
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    text = message if isinstance(message, str) and message.strip() else fallback
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."


def error_parameter(body: object) -> str | None:
    """The request field an OpenAI-shaped error body names (`error.param`), if any."""
    error = body.get("error", body) if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    return param if isinstance(param, str) and param else None


def _names(field: str, message: str) -> bool:
    """Whether `message` names the request field `field` as a word (`'temperature'`)."""
    return re.search(rf"(?<![\w.]){re.escape(field)}(?![\w])", message) is not None


def refusal_fix(
    status: int,
    message: str,
    *,
    parameter: str | None = None,
    key_variable: str | None = None,
    extra_fields: Collection[str] = (),
    extra_name: str = "extra_body",
    tools: bool = False,
) -> str:
    """The setting to change so that the endpoint takes the request it refused with `status`
    and `message` (and, where it names one, the request field `parameter`).

    Args:
        key_variable: The environment variable the key came from; None when the model's
            integration reads its own.
        extra_fields: The fields the model's entry adds to every request (`extra_body`, or a
            LangChain entry's `parameters`, named by `extra_name`).
        tools: Whether the request carried the questioner's tools.
    """
    key = key_variable or "the variable its integration reads"
    if status == 401:
        return f"the key was refused: export a valid key in {key}"
    if status == 403:
        return f"the key in {key} may not use this model: use a key that may, or another model"
    if status == 404:
        return (
            "fix the model id (the registry entry's model, or --model) or the endpoint "
            "(its base_url, or --base-url)"
        )
    text = message.lower()
    if parameter == "temperature" or _names("temperature", text):
        return TEMPERATURE_FIX
    named = [field for field in extra_fields
             if field == parameter or _names(field.lower(), text)]  # fmt: skip
    if named:
        return f"change or remove {named[0]!r} in its registry entry's {extra_name}"
    if tools and (parameter in ("tools", "tool_choice") or _names("tools", text)):
        return "this model takes no tools, which the questioner's seat needs: play it as answerer"
    return f"fix the setting the endpoint names (the registry entry's {extra_name}, temperature)"

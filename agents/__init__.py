"""Players: the questioner and the answerers, all behind one `Player` interface.

A program in a seat is a function over a typed view of its side of the game (`QuestionerView`,
`AnswererView`), made a player by `ProgramQuestioner` or `ProgramAnswerer`.

The names below are imported on first use (PEP 562), not with the package: every module of
`agents` loads this file first, and the command line's help reads names.py alone, without the
openai SDK and LangChain that the players import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privateshared.agents.base import (
        ChatMessage,
        Player,
        PlayerReply,
        PlayerRequest,
        RequestKind,
        ToolCall,
    )
    from privateshared.agents.baselines import MockAnswerer, OracleAnswerer
    from privateshared.agents.imports import is_import_path, load_player
    from privateshared.agents.langchain_player import LangChainPlayer, LangChainSpec
    from privateshared.agents.llm import ChatModelPlayer, ModelSpec, PlayerConfigError
    from privateshared.agents.programs import (
        AnswererProgram,
        Move,
        ProgramAnswerer,
        ProgramQuestioner,
        QuestionerProgram,
    )
    from privateshared.agents.registry import resolve_answerer, resolve_questioner
    from privateshared.agents.scripted import ProgrammaticQuestioner
    from privateshared.agents.views import (
        AnswererView,
        Asked,
        QuestionerView,
        Turn,
        answerer_view,
        questioner_view,
    )

__all__ = [
    "AnswererProgram",
    "AnswererView",
    "Asked",
    "ChatMessage",
    "ChatModelPlayer",
    "LangChainPlayer",
    "LangChainSpec",
    "MockAnswerer",
    "ModelSpec",
    "Move",
    "OracleAnswerer",
    "Player",
    "PlayerConfigError",
    "PlayerReply",
    "PlayerRequest",
    "ProgramAnswerer",
    "ProgramQuestioner",
    "ProgrammaticQuestioner",
    "QuestionerProgram",
    "QuestionerView",
    "RequestKind",
    "ToolCall",
    "Turn",
    "answerer_view",
    "is_import_path",
    "load_player",
    "questioner_view",
    "resolve_answerer",
    "resolve_questioner",
]

_HOMES = {
    **dict.fromkeys(
        ("ChatMessage", "Player", "PlayerReply", "PlayerRequest", "RequestKind", "ToolCall"),
        "privateshared.agents.base",
    ),
    **dict.fromkeys(("MockAnswerer", "OracleAnswerer"), "privateshared.agents.baselines"),
    **dict.fromkeys(("is_import_path", "load_player"), "privateshared.agents.imports"),
    **dict.fromkeys(("LangChainPlayer", "LangChainSpec"), "privateshared.agents.langchain_player"),
    **dict.fromkeys(
        ("ChatModelPlayer", "ModelSpec", "PlayerConfigError"), "privateshared.agents.llm"
    ),
    **dict.fromkeys(("resolve_answerer", "resolve_questioner"), "privateshared.agents.registry"),
    **dict.fromkeys(
        ("AnswererProgram", "Move", "ProgramAnswerer", "ProgramQuestioner", "QuestionerProgram"),
        "privateshared.agents.programs",
    ),
    "ProgrammaticQuestioner": "privateshared.agents.scripted",
    **dict.fromkeys(
        ("AnswererView", "Asked", "QuestionerView", "Turn", "answerer_view", "questioner_view"),
        "privateshared.agents.views",
    ),
}
"""Each public name and the module that defines it."""


def __getattr__(name: str) -> object:
    """Import a public name from its module on first use."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


def __dir__() -> list[str]:
    """The package's names, the public ones not yet imported too."""
    return sorted({*globals(), *__all__})

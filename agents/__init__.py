"""Players: the questioner and the answerers, all behind one `Player` interface."""

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
from privateshared.agents.registry import resolve_answerer, resolve_questioner
from privateshared.agents.scripted import ProgrammaticQuestioner

__all__ = [
    "ChatMessage",
    "ChatModelPlayer",
    "LangChainPlayer",
    "LangChainSpec",
    "MockAnswerer",
    "ModelSpec",
    "OracleAnswerer",
    "Player",
    "PlayerConfigError",
    "PlayerReply",
    "PlayerRequest",
    "ProgrammaticQuestioner",
    "RequestKind",
    "ToolCall",
    "is_import_path",
    "load_player",
    "resolve_answerer",
    "resolve_questioner",
]

"""The public names of `privateshared.agents`, for type checkers and for the lazy loader in
__init__.py, which imports each from its module on first use."""

from .base import (
    ChatMessage as ChatMessage,
)
from .base import (
    Player as Player,
)
from .base import (
    PlayerReply as PlayerReply,
)
from .base import (
    PlayerRequest as PlayerRequest,
)
from .base import (
    RequestKind as RequestKind,
)
from .base import (
    ToolCall as ToolCall,
)
from .baselines import MockAnswerer as MockAnswerer
from .baselines import OracleAnswerer as OracleAnswerer
from .imports import is_import_path as is_import_path
from .imports import load_player as load_player
from .langchain_player import LangChainPlayer as LangChainPlayer
from .langchain_player import LangChainSpec as LangChainSpec
from .llm import (
    ChatModelPlayer as ChatModelPlayer,
)
from .llm import (
    ModelSpec as ModelSpec,
)
from .llm import (
    PlayerConfigError as PlayerConfigError,
)
from .programs import (
    AnswererProgram as AnswererProgram,
)
from .programs import (
    Move as Move,
)
from .programs import (
    ProgramAnswerer as ProgramAnswerer,
)
from .programs import (
    ProgramQuestioner as ProgramQuestioner,
)
from .programs import (
    QuestionerProgram as QuestionerProgram,
)
from .registry import resolve_answerer as resolve_answerer
from .registry import resolve_questioner as resolve_questioner
from .scripted import ProgrammaticQuestioner as ProgrammaticQuestioner
from .views import (
    AnswererView as AnswererView,
)
from .views import (
    Asked as Asked,
)
from .views import (
    QuestionerView as QuestionerView,
)
from .views import (
    Turn as Turn,
)
from .views import (
    answerer_view as answerer_view,
)
from .views import (
    questioner_view as questioner_view,
)

"""Players by import path: a user's own player, named where any player is named.

`package.module:attr` names an object in an importable module (installed, or on PYTHONPATH),
`./path/to/file.py:attr` (or `../...`, or an absolute path) one in a Python file, as
`langgraph.json` names graphs. The object may be a `Player` (a `name`, a `temperature` and an
async `respond`; `ProgramQuestioner` and `ProgramAnswerer` make one of a program over a view,
agents/programs.py), a LangChain chat model (which plays through agents/langchain_player.py), a
class built with no arguments, or a factory called with none; a program named itself gets a line
saying how to make a player of it. The command
line, a registry entry (agents/model_registry.py), Studio's context and `resolve_answerer` and
its siblings all come here, so the same words name the same player everywhere.

Which names are import paths (`is_import_path`), so that names with colons keep their meaning:
our own prefixes (`mock:SEED`, `local:PATH.gguf`) never are; otherwise the name is split at its
last colon, and it is an import path when the part before names

- a file: it ends in `.py` or starts with `./` or `../` (the part after is checked on loading,
  so that a typo gets its one line), or
- a module: dotted Python names (`str.isidentifier()` for each) that contain a dot, or whose
  top-level module is importable here or lies in the current folder (where Python may not look:
  loading then says how to name it), and the part after is dotted Python names too.

So model names such as `llama3.1:8b`, `qwen2.5:7b`, `phi3:mini`, `mistral:latest` or
`hf.co/org/model-GGUF:Q4_K_M` stay model names, unless a module of that name is installed (a
model named like an installed module is still reachable through a registry entry, which is
looked up first). A bare `file.py` is an import path too, so that its missing `:attr` gets a
line saying so rather than a model call that fails.

A relative file is found from the current folder (a registry entry: from the registry file's
folder, made absolute when the registry is read), and made absolute only when it travels to a Ray
task, which may run elsewhere: reading the current folder is a call LangGraph's server refuses
while it validates a run's context, where Studio names players. A file is imported under a
module name derived from the file's identity (device and inode, whatever path names it) and
kept in `sys.modules`, so that naming it again reuses it and its objects pickle within the
process. The file may import installed modules and what PYTHONPATH holds; its own folder is not
put on the path.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from dataclasses import dataclass
from numbers import Real
from pathlib import Path
from types import ModuleType

from pydantic import BaseModel, ConfigDict

from privateshared.agents.base import Player, PlayerReply, PlayerRequest
from privateshared.agents.langchain_player import LANGCHAIN_PREFIX, LangChainPlayer, is_chat_model
from privateshared.agents.llm import PlayerConfigError

OWN_PREFIXES = ("mock:", "local:", LANGCHAIN_PREFIX)
"""Names of ours that hold a colon (mock:SEED, local:PATH.gguf, langchain:PROVIDER:MODEL): never
import paths."""
NEEDS = "a player has a name (str), a temperature (float) and an async respond(request)"
"""What every 'not a player' line ends with."""


def _is_dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def _is_file(module: str) -> bool:
    return module.endswith(".py") or module.startswith(("./", "../", ".\\", "..\\"))


def is_import_path(name: str, *, meant: bool = False) -> bool:
    """Whether `name` names a player by import path (the rule is in the module's docstring).

    `meant`: where nothing else can be meant (a registry entry's `player`), dotted names count
    whether or not their module is found here, so that loading says what is missing."""
    if name.startswith(OWN_PREFIXES):
        return False
    module, colon, attr = name.rpartition(":")
    if not colon:
        return name.endswith(".py")
    if _is_file(module):
        return True
    if not (_is_dotted(module) and _is_dotted(attr)):
        return False
    if meant or "." in module or module in sys.modules or _is_here(module):
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _is_here(module: str) -> bool:
    """Whether the current folder holds `module` (a file or a package), which Python may not
    import from there: loading then says how to name it."""
    top = module.partition(".")[0]
    return Path(f"{top}.py").is_file() or Path(top, "__init__.py").is_file()


def absolute_import_path(name: str, folder: Path | None = None) -> str:
    """`name` with its file made absolute against `folder` (default: the current folder); a
    module's import path as it is."""
    module, colon, attr = name.rpartition(":")
    if not colon:
        module, attr = name, ""
    if not _is_file(module):
        return name
    path = Path(module).expanduser()
    absolute = os.path.abspath(path if path.is_absolute() else (folder or Path.cwd()) / path)
    return f"{absolute}{colon}{attr}"


class ImportSpec(BaseModel):
    """Where a player named by import path comes from: what travels to a Ray worker, which
    imports it there."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """The import path; its file (if any) absolute, or relative to the current folder."""
    name: str | None = None
    """The name it plays under (a registry entry's); None: the player's own."""

    def load(self, shown: str | None = None) -> ImportedPlayer:
        """Import the player; `shown` is the path as the user wrote it, for error lines."""
        shown = shown or self.path
        module_path, colon, attr = self.path.rpartition(":")
        if not colon:
            raise PlayerConfigError(
                f"{shown}: name the player in the file after a colon, e.g. {shown}:Asker"
            )
        module = _import(module_path, shown)
        target = _attribute(module, attr, shown)
        return ImportedPlayer(self, _player_of(target, attr, shown))

    def absolute(self) -> ImportSpec:
        """The spec with its file absolute, for a process that may run in another folder."""
        return self.model_copy(update={"path": absolute_import_path(self.path)})


def load_player(
    path: str, *, name: str | None = None, folder: Path | None = None
) -> ImportedPlayer:
    """The player `path` names (`module:attr` or `./file.py:attr`), played under `name` if
    given; a relative file is found from `folder` (default: the current folder).

    Raises PlayerConfigError, one line naming the path, the problem and the fix."""
    found = path if folder is None else absolute_import_path(path, folder)
    return ImportSpec(path=found, name=name).load(shown=path)


@dataclass(frozen=True)
class ImportedPlayer:
    """A user's player, named by an import path: it plays as the object it holds, and keeps
    where that came from, so that another process can import it again."""

    origin: ImportSpec
    player: Player

    @property
    def name(self) -> str:
        return self.origin.name or self.player.name

    @property
    def temperature(self) -> float | None:
        value = self.player.temperature
        return None if value is None else float(value)

    async def respond(self, request: PlayerRequest) -> PlayerReply:
        return await self.player.respond(request)


def _one_line(error: BaseException) -> str:
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _file_module_name(file: Path) -> str:
    """A stable module name for `file`: the same file gives the same module, whatever path
    names it (relative or absolute), in any process of this machine."""
    stem = re.sub(r"\W", "_", file.stem)
    found = file.stat()
    identity = hashlib.sha1(f"{found.st_dev}:{found.st_ino}".encode()).hexdigest()[:10]
    return f"privateshared_user_{stem}_{identity}"


def _import(module_path: str, shown: str) -> ModuleType:
    if _is_file(module_path) or os.path.isabs(module_path):
        return _import_file(Path(module_path), shown)
    if not _is_dotted(module_path):
        raise PlayerConfigError(
            f"{shown}: {module_path!r} is neither a module (dotted Python names) nor a .py file; "
            "write module:attr or ./file.py:attr"
        )
    try:
        return importlib.import_module(module_path)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (module_path + ".").startswith(missing + "."):
            file = f"./{module_path.replace('.', '/')}.py"
            named = f", or name the file: {file}:{shown.rpartition(':')[2]}"
            raise PlayerConfigError(
                f"{shown}: no module named {missing!r} here; install it, or put the folder "
                f"holding it on PYTHONPATH{named if _is_here(module_path) else ''}"
            ) from None
        raise PlayerConfigError(
            f"{shown}: importing {module_path} failed ({_one_line(error)}); fix the module"
        ) from None
    except (Exception, SystemExit) as error:  # whatever the user's module raises
        raise PlayerConfigError(
            f"{shown}: importing {module_path} failed ({_one_line(error)}); fix the module"
        ) from None


def _import_file(file: Path, shown: str) -> ModuleType:
    written = shown.rpartition(":")[0] or shown
    if not file.is_file():
        what = "is a folder, not a file" if file.is_dir() else "does not exist"
        raise PlayerConfigError(
            f"{shown}: {os.path.abspath(file)} {what}; name a Python file (a relative path "
            "starts from the current folder; in a registry, from the registry's folder)"
        )
    if file.suffix != ".py":
        raise PlayerConfigError(
            f"{shown}: {os.path.abspath(file)} is not a .py file; name a Python file"
        )
    key = _file_module_name(file)
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, file)
    assert spec is not None and spec.loader is not None  # a .py file always gets a loader
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as `import` does: dataclasses and pickle look it up there.
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:
        del sys.modules[key]
        where = ""
        if not isinstance(error, SyntaxError):  # its message says the line already
            lines = [f.lineno for f in traceback.extract_tb(error.__traceback__)
                     if f.filename == spec.origin]  # fmt: skip
            where = f" at line {lines[-1]}" if lines else ""
        raise PlayerConfigError(
            f"{shown}: importing {written} failed{where} ({_one_line(error)}); fix the file"
        ) from None
    return module


def _attribute(module: ModuleType, attr: str, shown: str) -> object:
    if not _is_dotted(attr):
        raise PlayerConfigError(
            f"{shown}: {attr!r} is not a Python name; write the name of the player, its class "
            "or its factory after the last colon"
        )
    target: object = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            written = shown.rpartition(":")[0]
            raise PlayerConfigError(f"{shown}: {written} {_missing(module, attr)}") from None
    return target


def _missing(module: ModuleType, attr: str) -> str:
    """What to say of an attribute the module lacks: close names first, then what it defines."""
    public = [n for n in vars(module) if not n.startswith("_")]
    own = [n for n in public if getattr(vars(module)[n], "__module__", None) == module.__name__]
    close = difflib.get_close_matches(attr, public, n=3)
    offered = list(dict.fromkeys([*close, *sorted(own or public)]))[:6]
    if not offered:
        return f"has no {attr!r}, nor anything else public; define it there"
    return f"has no {attr!r}; name one of {', '.join(offered)}"


def _what(value: object) -> str:
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if inspect.isroutine(value):
        return f"the function {getattr(value, '__name__', '?')}"
    if isinstance(value, ModuleType):
        return f"the module {value.__name__}"
    kind = type(value).__name__
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"


def _arguments_needed(target: object) -> list[str]:
    """The parameters a class or factory cannot be called without (none: it can be called)."""
    try:
        parameters = inspect.signature(target).parameters.values()  # type: ignore[arg-type]
    except (TypeError, ValueError):  # no signature to read (some builtins): let the call tell
        return []
    free = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in parameters if p.default is p.empty and p.kind not in free]


def _player_of(target: object, attr: str, shown: str) -> Player:
    """The player `target` is, builds (a class) or returns (a factory); a LangChain chat model
    plays through `LangChainPlayer`."""
    made = target
    if not isinstance(target, type) and not hasattr(target, "respond") and _program_view(target):
        raise PlayerConfigError(f"{shown}: {_adapt_program(target, attr)}")
    if not is_chat_model(target) and (
        isinstance(target, type) or (callable(target) and not hasattr(target, "respond"))
    ):
        kind = "class" if isinstance(target, type) else "factory"
        needed = _arguments_needed(target)
        if needed:
            raise PlayerConfigError(
                f"{shown}: {attr} needs {', '.join(needed)}, and a {kind} named here is called "
                "with no arguments; give them defaults, or name a factory that supplies them"
            )
        try:
            made = target()
        except Exception as error:
            raise PlayerConfigError(
                f"{shown}: {attr}() failed ({_one_line(error)}); fix the {kind}"
            ) from None
    if is_chat_model(made):
        try:
            return LangChainPlayer(made)
        except PlayerConfigError as error:
            raise PlayerConfigError(f"{shown}: {error}") from None
    if not hasattr(made, "respond") and _program_view(made):
        raise PlayerConfigError(f"{shown}: {_adapt_program(made, attr)}")
    problem = _not_a_player(made)
    if problem is not None:
        said = f"{attr} is" if made is target else f"{attr}() made"
        raise PlayerConfigError(f"{shown}: {said} {_what(made)}, not a player ({problem}); {NEEDS}")
    assert isinstance(made, Player)  # what _not_a_player checked
    return made


_PROGRAMS = {
    "QuestionerView": 'Asker = ProgramQuestioner({attr}, name="my-asker")',
    "AnswererView": 'Answerer = ProgramAnswerer({attr}, name="my-answerer")',
}
"""The views a program may take (agents/programs.py), by name, and how a player is made of it."""


def _program_view(value: object) -> str | None:
    """The view `value` takes if it is a program: a callable whose one parameter is annotated
    `QuestionerView` or `AnswererView` (also as a string); None otherwise."""
    try:
        parameters = list(inspect.signature(value).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):  # not callable, or no signature to read
        return None
    annotation = parameters[0].annotation if len(parameters) == 1 else None
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return name if name in _PROGRAMS else None


def _adapt_program(program: object, attr: str) -> str:
    """What to say of a program named where a player is meant: how to make a player of it."""
    view = _program_view(program)
    assert view is not None  # checked by the caller
    example = _PROGRAMS[view].format(attr=attr)
    return (
        f"{attr} is a program (it takes {'an' if view[0] in 'AEIOU' else 'a'} {view}), not a "
        "player; make a player of it in its file, "
        f"e.g. {example}, and name that"
    )


def _not_a_player(value: object) -> str | None:
    """What keeps `value` from being a player; None when nothing does."""
    if isinstance(value, type):  # a factory that returned its class: its respond is unbound
        return "it is a class, not an instance of one; return an instance"
    try:
        respond, name, temperature = (getattr(value, a, None)
                                      for a in ("respond", "name", "temperature"))  # fmt: skip
    except Exception as error:  # a property that raises
        return f"reading it raised {_one_line(error)}"
    if respond is None:
        return "it has no respond method"
    if not inspect.iscoroutinefunction(respond):
        return "its respond is not async; write async def respond"
    if not isinstance(name, str) or not name:
        return (
            "its name is missing" if name is None
            else f"its name is {name!r}, not a non-empty string"
        )  # fmt: skip
    if isinstance(temperature, bool) or not isinstance(temperature, Real):
        return (
            "its temperature is missing" if temperature is None
            else f"its temperature is {temperature!r}, not a number"
        )  # fmt: skip
    return None

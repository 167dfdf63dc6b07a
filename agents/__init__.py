"""Players: the questioner and the answerers, all behind one `Player` interface.

A program in a seat is a function over a typed view of its side of the game (`QuestionerView`,
`AnswererView`), made a player by `ProgramQuestioner` or `ProgramAnswerer`.

The names below are imported on first use (PEP 562), not with the package: every module of
`agents` loads this file first, and the command line's help reads names.py alone, without the
openai SDK and LangChain that the players import.
"""

import lazy_loader

# PEP 562: each public name (listed once, in __init__.pyi, where type checkers read it) is
# imported from its module on first use, not with the package.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

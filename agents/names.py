"""The names of the players that need no model: the programmatic ones and a person.

registry.py turns these names into players. They live apart, on the standard library alone, so
that the command line's help can name them without importing a single player (docs/performance.md:
`privateshared --help` answers at once).
"""

PROGRAMMATIC_ANSWERERS = ("oracle", "one-listener", "always-yes", "always-no", "mock")
"""Answerers that need no model (`mock:SEED` picks the mock's seed)."""
PROGRAMMATIC_QUESTIONERS = ("programmatic",)
HUMAN = "human"
"""A person in the seat, through LangGraph interrupts (agents/human.py)."""

"""The defaults of making instances: the seed and how many instances per domain.

instances.py samples with them; they live apart, on the standard library alone, so that
`privateshared instances --help` shows them without importing pydantic and the domains.
"""

DEFAULT_SEED = 20251121
"""Seed of the committed default instances file (`domains/instances.json`)."""
DEFAULT_PER_DOMAIN = 10

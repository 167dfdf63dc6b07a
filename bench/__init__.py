"""The harness around the game: everything that turns episodes into a benchmark.

A run, in the order it happens:

- `run_benchmark` (running/benchmark.py): a whole run from Python, in one call, returning its
  evaluation as data.
- `cli/`: the `privateshared` command; parses the command line and hands each command to its
  module (run, play, eval, transcribe, score, replay, instances, domains check).
- `defaults.py`: the defaults the command line shows (the models a run plays, the results
  folder, the workers, the resamples), on the standard library alone.
- `running/`: plays the benchmark: who plays (cast), what is left to play (plan), the episodes
  themselves and their records (episodes), spread over worker processes or a Ray cluster, with
  a progress bar, and the llama.cpp server of a model that runs on this machine.
- `reporting/`: reads a results folder back: evaluation, result tables (ours and clembench's),
  plots, transcript pages, re-scoring.
- `clembench/`: clembench's own records replayed through our game master, their scores and
  prompts compared.
- `testing/`: a fake OpenAI-compatible endpoint with perfect players, for the tests and for
  trying the model path without a key.

The game itself (graph/), the players (agents/) and the data (domains/) never import from here.

`run_benchmark` is imported on first use (PEP 562), not with the package: every module below
`bench` loads this file first, and `privateshared --help` should not wait the second or more that
the whole stack takes to import.
"""

import lazy_loader

# PEP 562: each public name (listed once, in __init__.pyi, where type checkers read it) is
# imported from its module on first use, not with the package.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)

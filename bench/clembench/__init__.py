"""clembench interop: its recorded episodes played again through our game master.

- `replay.py`: finds the episodes of a clembench results folder (every layout it has written),
  replays each with the recorded replies and compares scores, probes and prompts.
- `replay_answerer.py`: the answerer that gives back what the recorded model said.
- `prompt_parity.py`: whether our messages to the answerer are the very bytes clembench sent.

Reading clembench's record files lives with every other reader in reporting/record_files.py;
clembench's texts for its instances are in domains/clembench_texts.py.
"""

from privateshared.bench.clembench.replay import find_recorded_episodes, replay_episode
from privateshared.bench.clembench.replay_answerer import ReplayAnswerer, ReplayError

__all__ = ["ReplayAnswerer", "ReplayError", "find_recorded_episodes", "replay_episode"]

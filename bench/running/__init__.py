"""Playing a run: the cast of players, the plan of what is left, the episodes and their records.

- `cast.py`: the names on the command line (or in a model registry) as players, by role.
- `preflight.py`: the check call each model gets before the first episode, with the run's
  settings.
- `budget.py`: what each episode is expected to cost, and the budget that stops starting them.
- `plan.py`: every (instance, answerer) episode of a run, where its records go, what is done.
- `claims.py`: runs sharing a results folder: each episode claimed by the one run playing it.
- `episodes.py`: plays episodes through the graph, many at once, and writes each one's records
  and transcript page as it ends.
- `workers.py`, `ray_cluster.py`: the same episodes spread over worker processes or a Ray
  cluster; `processes.py` makes sure no child outlives the run.
- `progress.py`: the progress bar.
- `local_model.py`: llama.cpp's server for a model that runs on this machine (SmolLM2).
- `layout.py`: the folder names of records, as clembench names them, and experiment.json.
"""

from privateshared.bench.running.episodes import Finished, play_episode, run_episodes, save_episode
from privateshared.bench.running.plan import Episode, is_done, pending_episodes, plan_episodes

__all__ = [
    "Episode",
    "Finished",
    "is_done",
    "pending_episodes",
    "plan_episodes",
    "play_episode",
    "run_episodes",
    "save_episode",
]

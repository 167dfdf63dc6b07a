"""Replay recorded clembench episodes through our game master and compare with the recording.

Every episode under a clembench results folder is played again, in either record layout, with
or without scores.json: a `ReplayAnswerer` gives back the recorded replies, probes asked one by
one in the recorded order (as clembench asked them), and our game master decides validity,
filling, ground truth and the end of the episode. Its scores must equal the recorded ones where
there are some; every probe's truth and parsed reply must equal the recording's; and, with
clembench's texts (`resources`), every message our game master builds for the answerer must
equal, byte for byte, the one recorded in requests.json.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from privateshared.bench.clembench.prompt_parity import (
    PromptComparison,
    answerer_calls,
    compare_prompts,
)
from privateshared.bench.clembench.replay_answerer import ReplayAnswerer, ReplayError
from privateshared.bench.reporting.record_files import (
    RecordsError,
    read_interactions,
    read_player_requests,
    read_requests,
    read_scores,
)
from privateshared.bench.running.episodes import play_episode, save_episode
from privateshared.bench.running.layout import benchmark_of, write_experiment_file
from privateshared.domains.clembench_texts import (
    PhrasingLookup,
    ResourcesError,
    clembench_probe_wording,
    resource_phrasings,
    resource_values,
)
from privateshared.domains.instances import (
    ExperimentSpec,
    InstancesError,
    InstancesFile,
    InstanceSpec,
    domain_phrasings,
    placeholder_phrasings,
    resolve_instance,
)
from privateshared.domains.schema import OUR_PROBE_WORDING, Domain, ProbeWording
from privateshared.graph.context import GameContext
from privateshared.graph.recorder import INTERACTIONS_FILE, REQUESTS_FILE, SCORES_FILE
from privateshared.graph.records import (
    GAME_NAME,
    MAIN_SCORE,
    CallRecord,
    EpisodeScores,
    Interactions,
    ScoreValue,
)
from privateshared.graph.scoring import is_nan

TOLERANCE = 1e-9


@dataclass(frozen=True)
class RecordedEpisode:
    """One episode folder of a clembench results tree."""

    folder: Path
    relative: Path
    """Path below the root replay was given, as printed: `<pair>/privateshared/<index>_<experiment>/
    episode_<id>`, with any folders the root keeps above the pairs (`v2.0/<pair>/...`)."""
    experiment: str
    game_id: int


Verdict = Literal["reproduced", "differs", "unreferenced", "unreadable"]
"""reproduced: every reference score (and probe, and prompt) agrees; differs: something does
not; unreferenced: no scores.json to compare with, replayed and scored; unreadable: the
recording could not be read or played."""


@dataclass
class ReplayOutcome:
    """What replaying one episode gave."""

    episode: RecordedEpisode
    differences: list[str] = field(default_factory=list)
    """Every way our scores, probes or prompts differ from the recording; empty when they agree."""
    reference_scores: bool = True
    """Whether the recording had scores.json to compare with."""
    prompts: PromptComparison | None = None
    """How the answerer's messages compare; None when not compared (no requests.json, or no
    clembench texts to build them with)."""
    scores: EpisodeScores | None = None
    """Our scores of the replayed episode."""
    problem: str | None = None
    """Why the recording could not be replayed, one line; None when it was."""

    @property
    def verdict(self) -> Verdict:
        if self.problem is not None:
            return "unreadable"
        if self.differences:
            return "differs"
        return "reproduced" if self.reference_scores else "unreferenced"


EPISODE_FOLDER = re.compile(r"^(?:episode|instance)_(\d+)$")
"""An episode's folder: `episode_<id>` in clembench 2.0's runs, `instance_<00000>` in later
clemcore versions' (whose experiment folders also drop the `<index>_` prefix)."""


def find_recorded_episodes(root: Path) -> list[RecordedEpisode]:
    """Every episode folder with an interactions.json below a `privateshared` folder:
    `.../privateshared/<index>_<experiment>/episode_<id>/` (or `<experiment>/instance_<id>`)."""
    episodes = []
    for interactions in sorted(root.glob(f"**/{GAME_NAME}/*/*/{INTERACTIONS_FILE}")):
        folder = interactions.parent
        match = EPISODE_FOLDER.match(folder.name)
        if match is None:
            continue
        experiment = re.sub(r"^\d+_", "", folder.parent.name)
        episodes.append(
            RecordedEpisode(folder, folder.relative_to(root), experiment, int(match.group(1)))
        )
    return episodes


INDEXED_EXPERIMENT = re.compile(r"^\d+_")
"""An experiment folder named with its index, as clembench 2.0's runs and ours name them."""


def replayed_folder(episode: RecordedEpisode, instances: InstancesFile) -> Path:
    """Where the replay of `episode` goes below the results folder: the layout of a run,
    `<pair>/privateshared/<index>_<experiment>/episode_<game_id>`, so that `privateshared eval`
    reads the folder replay wrote as it reads a run's. Whatever the source keeps above its pairs
    (clembench-runs' `v2.0/`) is left out, and later clemcore versions' `<experiment>/
    instance_<00000>` get the index of the experiment in the instances file."""
    experiment_folder = episode.folder.parent.name
    if not INDEXED_EXPERIMENT.match(experiment_folder):
        names = [spec.name for spec in instances.experiments]
        if episode.experiment in names:  # else the replay fails to find the instance anyway
            experiment_folder = f"{names.index(episode.experiment)}_{episode.experiment}"
    pair = episode.folder.parents[2].name  # the folder above `privateshared`
    return Path(pair, GAME_NAME, experiment_folder, f"episode_{episode.game_id}")


def _find_spec(
    instances: InstancesFile, experiment: str, game_id: int
) -> tuple[ExperimentSpec, InstanceSpec]:
    for spec in instances.experiments:
        if spec.name == experiment:
            for instance in spec.game_instances:
                if instance.game_id == game_id:
                    return spec, instance
    raise InstancesError(
        f"the instances file has no experiment {experiment!r} with game_id {game_id}; "
        "pass the instances file the records were played on"
    )


def _same(recorded: ScoreValue, ours: ScoreValue) -> bool:
    if is_nan(recorded) or is_nan(ours):
        return is_nan(recorded) and is_nan(ours)
    return abs(recorded - ours) <= TOLERANCE


def is_ours(score: str) -> bool:
    """Whether a score is one clembench does not compute (the questioner's metrics)."""
    return score.startswith("Questioner ") or score == "Questions Asked"


def compare_scores(recorded: EpisodeScores, ours: EpisodeScores) -> list[str]:
    """Differences between recorded and replayed scores (NaN equals NaN; floats within 1e-9).

    clembench logs Middle-Accuracy only when the middle round was played; we always log it (NaN
    when aborted), so a NaN score that the recording lacks is not a difference; nor are the
    questioner's metrics, which clembench does not compute.
    """
    differences = []
    if set(recorded.turn_scores) != set(ours.turn_scores):
        differences.append(
            f"scored rounds: recorded {sorted(recorded.turn_scores)}, "
            f"ours {sorted(ours.turn_scores)}"
        )
    for turn, scores in recorded.turn_scores.items():
        for name, value in scores.items():
            mine = ours.turn_scores.get(turn, {}).get(name)
            if mine is None or not _same(value, mine):
                differences.append(f"round {turn} {name}: recorded {value}, ours {mine}")
    for name, value in recorded.episode_scores.items():
        mine = ours.episode_scores.get(name)
        if mine is None or not _same(value, mine):
            differences.append(f"{name}: recorded {value}, ours {mine}")
    for name, mine in ours.episode_scores.items():
        if name not in recorded.episode_scores and not is_nan(mine) and not is_ours(name):
            differences.append(f"{name}: not recorded, ours {mine}")
    return differences


def compare_probes(recorded: Interactions, ours: Interactions) -> list[str]:
    """Differences in the truth (`gt`) and the parsed reply (`value`) of every asked probe."""

    def asked(interactions: Interactions) -> list[list[tuple[str, int, int | None]]]:
        return [
            [(probe.target.lower(), probe.gt, probe.value) for probe in probes if probe.tries]
            for probes in interactions.probes
        ]

    differences = []
    theirs, mine = asked(recorded), asked(ours)
    if len(theirs) != len(mine):
        differences.append(f"probing rounds: recorded {len(theirs)}, ours {len(mine)}")
    for k, (their_round, my_round) in enumerate(zip(theirs, mine, strict=False)):
        if their_round != my_round:
            differences.append(
                f"round {k} probes (slot, gt, value): recorded {their_round}, ours {my_round}"
            )
    return differences


PLAYER_REQUESTS_FILE = "player_1.requests.json"
"""The answerer's calls in later clemcore versions, which keep one requests file per player."""


def _recorded_answerer_calls(
    folder: Path, recorded: Interactions
) -> tuple[str, list[tuple[int, CallRecord]]] | None:
    """The answerer's recorded calls with their index in the file that holds them, and its
    name; None when the episode kept no requests."""
    if (folder / REQUESTS_FILE).is_file():
        return REQUESTS_FILE, answerer_calls(recorded, read_requests(folder / REQUESTS_FILE))
    if (folder / PLAYER_REQUESTS_FILE).is_file():
        calls = read_player_requests(folder / PLAYER_REQUESTS_FILE)
        return PLAYER_REQUESTS_FILE, list(enumerate(calls))
    return None


def _named_episode(recorded: Interactions, episode: RecordedEpisode) -> tuple[str, int]:
    """The experiment and game id an episode's records name, else its folders'."""
    meta = (recorded.model_extra or {}).get("meta")
    if isinstance(meta, dict):
        name, game_id = meta.get("experiment_name"), meta.get("game_id")
        if isinstance(name, str) and isinstance(game_id, int):
            return name, game_id
    return episode.experiment, episode.game_id


def _instance_texts(
    experiment: str, resources: Path | None, domain: Domain | None
) -> tuple[tuple[PhrasingLookup, PhrasingLookup], ProbeWording]:
    """clembench's texts when given; else the texts of the domain the experiment names, when
    known; else stand-ins, since the replies do not depend on them."""
    if resources is not None:
        return resource_phrasings(resources, experiment), clembench_probe_wording(resources)
    if domain is not None:
        return domain_phrasings(domain), OUR_PROBE_WORDING
    return placeholder_phrasings(experiment), OUR_PROBE_WORDING


async def replay_episode(
    episode: RecordedEpisode,
    instances: InstancesFile,
    results_dir: Path,
    resources: Path | None = None,
    domains: Mapping[str, Domain] | None = None,
) -> ReplayOutcome:
    """Replay one recorded episode, write its records under `results_dir`, and compare.

    An experiment of our own instances files names its domain: when `domains` knows it, the
    instance gets its texts (clembench's files name none, and take `resources`' texts)."""
    folder, ours = episode.folder, results_dir / replayed_folder(episode, instances)
    outcome = ReplayOutcome(episode, reference_scores=(folder / SCORES_FILE).is_file())
    named: str | None = None
    try:
        recorded = read_interactions(folder / INTERACTIONS_FILE)
        reference = read_scores(folder / SCORES_FILE) if outcome.reference_scores else None
        recorded_calls = _recorded_answerer_calls(folder, recorded)
        # The newer layout names the episode's experiment and game id in its meta block.
        experiment, game_id = _named_episode(recorded, episode)
        experiment_spec, spec = _find_spec(instances, experiment, game_id)
        named = experiment_spec.domain
        domain = (domains or {}).get(named) if resources is None and named else None
        lookups, wording = _instance_texts(experiment, resources, domain)
        instance = resolve_instance(
            experiment, spec, *lookups, domain=domain, probe_wording=wording
        )
    except (RecordsError, InstancesError, ResourcesError) as error:
        outcome.problem = str(error)
        return outcome
    except (KeyError, IndexError) as error:
        texts = "the clembench texts" if resources is not None else "the domain folder"
        outcome.problem = (
            f"{resources or f'domain {named!r}'}: no text {error} that the instance asks for; "
            f"pass {texts} the records were played with"
        )
        return outcome
    replayer = ReplayAnswerer.from_interactions(recorded)
    context = GameContext(answerer=replayer, sequential_probes=True)
    try:
        state = await play_episode(instance, context)
    except ReplayError as error:
        outcome.differences.append(f"our game master went further than the recording: {error}")
        return outcome
    save_episode(ours, spec.model_dump(mode="json", exclude_none=True), state, context)
    write_experiment_file(
        ours.parent, episode.experiment, named, folder.parents[2].name, replayer,
        context.questioner, benchmark=benchmark_of([spec]),
        slot_values=None if resources is None else resource_values(resources, experiment),
    )  # fmt: skip
    assert state.scores is not None  # save_episode checked
    outcome.scores = state.scores
    replayed = read_interactions(ours / INTERACTIONS_FILE)
    if reference is not None:
        outcome.differences += compare_scores(reference, state.scores)
    outcome.differences += compare_probes(recorded, replayed)
    if recorded_calls is not None and resources is not None:
        source, theirs = recorded_calls
        outcome.prompts = compare_prompts(
            theirs, answerer_calls(replayed, read_requests(ours / REQUESTS_FILE)), source
        )
        if outcome.prompts.difference is not None:
            outcome.differences.append(f"prompts: {outcome.prompts.difference}")
    return outcome


def describe_outcome(outcome: ReplayOutcome) -> list[str]:
    """The report of one episode: a line with its verdict, then one per difference."""
    where = str(outcome.episode.relative)
    prompts = outcome.prompts
    identical = (
        f"; every answerer message identical ({prompts.compared} calls)"
        if prompts is not None and prompts.difference is None
        else ""
    )
    match outcome.verdict:
        case "unreadable":
            return [f"{where}: NOT REPLAYED: {outcome.problem}"]
        case "differs":
            return [f"{where}: DIFFERS", *(f"    {line}" for line in outcome.differences)]
        case "reproduced":
            return [f"{where}: every reference score reproduced{identical}"]
        case "unreferenced":
            assert outcome.scores is not None
            main = outcome.scores.episode_scores.get(MAIN_SCORE, float("nan"))
            shown = "NaN (aborted)" if is_nan(main) else f"{main:.2f}"
            return [f"{where}: no reference scores; replayed and scored, Main Score {shown}"
                    f"{identical}"]  # fmt: skip


def summarise(outcomes: list[ReplayOutcome], resources: Path | None) -> str:
    """The closing line: how many episodes reproduce, differ, had no reference, were not read;
    and how the prompts compared."""
    counts = {verdict: 0 for verdict in ("reproduced", "differs", "unreferenced", "unreadable")}
    for outcome in outcomes:
        counts[outcome.verdict] += 1
    line = (
        f"replayed {len(outcomes) - counts['unreadable']} episodes: {counts['reproduced']} "
        f"reproduce every reference score, {counts['differs']} differ, {counts['unreferenced']} "
        "had no reference scores (replayed and scored)"
    )
    if counts["unreadable"]:
        line += f"; {counts['unreadable']} could not be replayed"
    compared = [outcome.prompts for outcome in outcomes if outcome.prompts is not None]
    if resources is None:
        line += "; prompts not compared (pass --resources with clembench's texts)"
    else:
        same = sum(1 for prompts in compared if prompts.difference is None)
        line += (
            f"; answerer prompts identical in {same} of {len(compared)} episodes with "
            "recorded prompts"
        )
    return line

"""Game instances: what one episode plays, sampled from a domain or read from an instances file.

Instances files keep clembench's shape (`{"experiments": [{"name", "game_instances": [...]}]}`),
where requests and probes are indices into phrasing lists. Our own files add an experiment key
`domain` naming the domain whose texts the indices point into; clembench's files lack it, and
their texts come from a clembench resources folder, or are not needed at all for replay.
`resolve_instance` turns an indexed `InstanceSpec` into the `GameInstance` the graph plays.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from privateshared.domains.audience import (
    AUDIENCE_KINDS,
    Audience,
    AudienceSpec,
    experiment_name,
    sample_audience,
    two_listener_prompt,
)
from privateshared.domains.clembench_texts import (
    PhrasingLookup,
    clembench_probe_wording,
    resource_phrasings,
)
from privateshared.domains.instance_defaults import DEFAULT_PER_DOMAIN, DEFAULT_SEED
from privateshared.domains.loader import builtin_domains_dir, load_domains
from privateshared.domains.registry import DOMAINS_VARIABLE, known_domains
from privateshared.domains.schema import OUR_PROBE_WORDING, Domain, ProbeWording

DEFAULT_INSTANCES_FILE = "instances.json"
TWO_LISTENER_INSTANCES_FILE = "instances_two_listeners.json"
"""The two-listener experiments (domains/audience.py), apart from the classic benchmark so that
its default run, folders and records stay clembench's."""


class InstanceSpec(BaseModel):
    """One game instance exactly as an instances file stores it (clembench's keys)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    game_id: int
    """Episode number within the experiment; records go to `episode_<game_id>`."""
    slots: dict[str, str]
    """The answerer's private values, by slot."""
    initial_prompt: str
    """The answerer's instructions, values included."""
    request_order: tuple[str, ...]
    """The order in which the questioner asks for the slots."""
    requests: dict[str, int]
    """Index of the request phrasing used for each slot."""
    probes: dict[str, dict[str, int]]
    """Per probing round ("0" .. "n"): index of the probe phrasing for each slot. The key order
    of each round is the order in which the game master probes."""
    tag: str
    """The questioner's label, e.g. TRAVEL-AGENT."""
    lang: str = "en"
    audience: AudienceSpec | None = None
    """Two-listener instances only: who joins or takes over, and when."""

    @model_validator(mode="after")
    def _slots_agree(self) -> InstanceSpec:
        slots = set(self.slots)
        if sorted(self.request_order) != sorted(slots):
            raise ValueError("request_order must list every slot exactly once")
        if set(self.requests) != slots:
            raise ValueError("requests must have one entry per slot")
        if sorted(self.probes, key=int) != [str(k) for k in range(len(slots) + 1)]:
            raise ValueError(f"probes must have rounds 0 to {len(slots)}")
        for key, round_probes in self.probes.items():
            if set(round_probes) != slots:
                raise ValueError(f"probes round {key} must have one entry per slot")
        if self.audience is not None:
            self._audience_agrees(self.audience)
        return self

    def _audience_agrees(self, audience: AudienceSpec) -> None:
        n = len(self.slots)
        if not 1 <= audience.after_turn <= n - 2:
            raise ValueError(f"audience.after_turn must be between 1 and {n - 2}")
        if not set(audience.note_slots) <= set(self.slots):
            raise ValueError("audience.note_slots must name slots of the instance")
        rounds = [str(k) for k in range(audience.after_turn + 1, n + 1)]
        if sorted(audience.probes, key=int) != rounds:
            raise ValueError(f"audience.probes must have rounds {rounds[0]} to {rounds[-1]}")
        pairs = {(tag, slot) for tag in (self.tag, audience.listener) for slot in self.slots}
        for key, order in audience.order.items():
            if set(audience.probes[key]) != set(self.slots):
                raise ValueError(f"audience.probes round {key} must have one entry per slot")
            if len(order) != len(pairs) or set(order) != pairs:
                raise ValueError(
                    f"audience.order round {key} must list every slot once per listener"
                )


class ExperimentSpec(BaseModel):
    """One experiment of an instances file: a named list of instances."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    """Experiment name, e.g. travel-booking."""
    domain: str | None = None
    """Our domain whose texts the phrasing indices point into; None in clembench's files."""
    game_instances: tuple[InstanceSpec, ...]


class InstancesFile(BaseModel):
    """A whole instances file."""

    model_config = ConfigDict(extra="allow", frozen=True)

    experiments: tuple[ExperimentSpec, ...] = Field(min_length=1)

    def to_json(self) -> str:
        """The file's text: stable key order and indentation, so generation is byte-reproducible."""
        return (
            json.dumps(
                self.model_dump(mode="json", exclude_none=True), indent=2, ensure_ascii=False
            )
            + "\n"
        )


class GameInstance(BaseModel):
    """Everything one episode needs, with every text resolved."""

    model_config = ConfigDict(frozen=True)

    experiment: str
    """Experiment name, e.g. travel-booking."""
    game_id: int
    tag: str
    """The questioner's label; questions reach the answerer as `<tag>: <request>`."""
    initial_prompt: str
    slots: dict[str, str]
    """The answerer's private values, by slot."""
    request_order: tuple[str, ...]
    requests: dict[str, str]
    """The questioner's words for each slot."""
    probes: tuple[dict[str, str], ...]
    """One dict per probing round: slot -> probe question, in probing order."""
    probe_wording: ProbeWording = OUR_PROBE_WORDING
    """The probe message of each try around its question: ours, or clembench's for clembench's
    instances played with its texts."""
    questioner: str = ""
    """The questioner's role in plain words, e.g. travel agent (for an LLM questioner)."""
    slot_descriptions: dict[str, str] = {}
    """What each slot holds, never its value (for an LLM questioner)."""
    audience: Audience | None = None
    """Two-listener instances only: who joins or takes over, and when."""


class InstancesError(ValueError):
    """An instances file that cannot be played; the message is one line with the fix."""


def resolve_instance(
    experiment: str,
    spec: InstanceSpec,
    request_text: PhrasingLookup,
    probe_text: PhrasingLookup,
    domain: Domain | None = None,
    probe_wording: ProbeWording = OUR_PROBE_WORDING,
) -> GameInstance:
    """Replace the phrasing indices of `spec` by texts; the domain, when known, describes the
    questioner's role and the slots (else they are read off the tag and the slot names)."""
    if domain is not None and set(domain.slots) == set(spec.slots):
        questioner = domain.questioner
        descriptions = {slot: domain.slots[slot].description for slot in spec.slots}
    else:
        questioner = spec.tag.lower().replace("-", " ")
        descriptions = {slot: slot.replace("-", " ") for slot in spec.slots}
    return GameInstance(
        experiment=experiment,
        game_id=spec.game_id,
        tag=spec.tag,
        initial_prompt=spec.initial_prompt,
        slots=spec.slots,
        request_order=spec.request_order,
        requests={slot: request_text(slot, index) for slot, index in spec.requests.items()},
        probes=tuple(
            {slot: probe_text(slot, index) for slot, index in spec.probes[str(k)].items()}
            for k in range(len(spec.slots) + 1)
        ),
        probe_wording=probe_wording,
        questioner=questioner,
        slot_descriptions=descriptions,
        audience=None if spec.audience is None else _resolve_audience(spec.audience, probe_text,
                                                                      domain),
    )  # fmt: skip


def _resolve_audience(
    spec: AudienceSpec, probe_text: PhrasingLookup, domain: Domain | None
) -> Audience:
    """The second listener's probes: the questioner's phrasings, turned to the second listener
    by the domain (without a domain, as in replay, they keep the questioner's words)."""
    turn = domain.second_listener_probe if domain and domain.second_listener else str
    rounds = sorted(spec.probes, key=int)
    return Audience(
        kind=spec.kind,
        after_turn=spec.after_turn,
        listener=spec.listener,
        role=spec.role,
        note_slots=spec.note_slots,
        probes=tuple(
            {slot: turn(probe_text(slot, index)) for slot, index in spec.probes[k].items()}
            for k in rounds
        ),
        order=tuple(spec.order[k] for k in rounds),
    )


def domain_phrasings(domain: Domain) -> tuple[PhrasingLookup, PhrasingLookup]:
    """Request and probe lookups into a domain's own texts."""
    return (
        lambda slot, index: domain.slots[slot].requests[index],
        lambda slot, index: domain.slots[slot].probes[index],
    )


def placeholder_phrasings(experiment: str) -> tuple[PhrasingLookup, PhrasingLookup]:
    """Stand-in texts for replay, where the recorded replies do not depend on the wording."""
    return (
        lambda slot, index: f"[{experiment} request #{index} for {slot}]",
        lambda slot, index: f"[{experiment} probe #{index} for {slot}]",
    )


def _sample_instance(domain: Domain, game_id: int, rng: random.Random) -> InstanceSpec:
    names = list(domain.slots)
    values = {slot: rng.choice(domain.slots[slot].values) for slot in names}
    request_order = rng.sample(names, len(names))
    requests = {slot: rng.randrange(len(domain.slots[slot].requests)) for slot in names}
    probes = {}
    for k in range(len(names) + 1):
        order = rng.sample(names, len(names))
        probes[str(k)] = {slot: rng.randrange(len(domain.slots[slot].probes)) for slot in order}
    return InstanceSpec(
        game_id=game_id,
        slots=values,
        initial_prompt=domain.render_initial_prompt(values),
        request_order=tuple(request_order),
        requests=requests,
        probes=probes,
        tag=domain.tag,
    )


CLEMBENCH_ORDER = (
    "travel-booking",
    "job-interview",
    "restaurant",
    "things-places",
    "letter-number",
)
"""clembench's privateshared experiments in the order of its instances file. An experiment's
index there names its records' folder (`0_travel-booking`), so our files list the same
experiments in the same order: a results folder merged with published clembench runs then pairs
the same experiment under the same index."""


def experiment_order(domains: Sequence[Domain]) -> list[Domain]:
    """The domains in the order of an instances file: clembench's experiments in clembench's
    order, then any others by name."""

    def position(domain: Domain) -> tuple[int, str]:
        if domain.name in CLEMBENCH_ORDER:
            return CLEMBENCH_ORDER.index(domain.name), ""
        return len(CLEMBENCH_ORDER), domain.name

    return sorted(domains, key=position)


def generate_instances(
    domains: Sequence[Domain], seed: int = DEFAULT_SEED, per_domain: int = DEFAULT_PER_DOMAIN
) -> InstancesFile:
    """Sample `per_domain` instances of every domain, in clembench's experiment order; the same
    seed gives the same file."""
    experiments = []
    for domain in experiment_order(domains):
        # One generator per domain, so adding a domain leaves the others' instances unchanged.
        rng = random.Random(f"{seed}:{domain.name}")
        instances = tuple(_sample_instance(domain, game_id, rng) for game_id in range(per_domain))
        experiments.append(
            ExperimentSpec(name=domain.name, domain=domain.name, game_instances=instances)
        )
    return InstancesFile(experiments=tuple(experiments))


def generate_two_listener_instances(
    domains: Sequence[Domain], seed: int = DEFAULT_SEED, per_domain: int = DEFAULT_PER_DOMAIN
) -> InstancesFile:
    """Sample `per_domain` instances of both two-listener experiments of every domain that has a
    second listener, domains in clembench's order; the same seed gives the same file."""
    experiments = []
    for domain in experiment_order(domains):
        if domain.second_listener is None:
            continue
        for kind in AUDIENCE_KINDS:
            name = experiment_name(domain.name, kind)
            rng = random.Random(f"{seed}:{name}")
            instances = []
            for game_id in range(per_domain):
                classic = _sample_instance(domain, game_id, rng)
                audience = sample_audience(domain, kind, classic.request_order, rng)
                instances.append(classic.model_copy(update={
                    "initial_prompt": two_listener_prompt(domain, classic.slots),
                    "audience": audience,
                }))  # fmt: skip
            experiments.append(
                ExperimentSpec(name=name, domain=domain.name, game_instances=tuple(instances))
            )
    return InstancesFile(experiments=tuple(experiments))


def read_instances(path: Path) -> InstancesFile:
    """Read and validate an instances file (ours or clembench's), or raise `InstancesError`."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InstancesError(f"{path}: file not found; pass an existing instances file") from None
    except IsADirectoryError:
        raise InstancesError(f"{path}: is a folder; pass an instances JSON file") from None
    except OSError as error:
        raise InstancesError(f"{path}: cannot read it ({error.strerror}); check the path") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InstancesError(f"{path}: not valid JSON ({error}); pass an instances file") from None
    try:
        return InstancesFile.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InstancesError(
            f"{path}: {where}: {first['msg']}; fix the file or regenerate it with "
            "`privateshared instances`"
        ) from None


def default_instances_path() -> Path:
    """The committed default instances file."""
    return builtin_domains_dir() / DEFAULT_INSTANCES_FILE


def two_listener_instances_path() -> Path:
    """The committed instances of the two-listener experiments."""
    return builtin_domains_dir() / TWO_LISTENER_INSTANCES_FILE


def playable_instances(
    file: InstancesFile,
    domains: Mapping[str, Domain],
    resources: Path | None = None,
    source: str = "instances file",
) -> list[tuple[int, ExperimentSpec, list[GameInstance]]]:
    """Every experiment of `file` with its instances' texts resolved, or `InstancesError`."""
    playable = []
    for index, experiment in enumerate(file.experiments):
        domain = domains.get(experiment.domain) if experiment.domain is not None else None
        wording = OUR_PROBE_WORDING
        if experiment.domain is not None:
            if domain is None:
                raise InstancesError(
                    f"{source}: experiment {experiment.name!r} uses domain "
                    f"{experiment.domain!r}, which no known folder defines; pass its folder "
                    f"with --domains DIR (or in {DOMAINS_VARIABLE}, or install its package); "
                    f"known: {', '.join(domains)}"
                )
            lookups = domain_phrasings(domain)
        elif resources is not None:
            lookups = resource_phrasings(resources, experiment.name)
            wording = clembench_probe_wording(resources)
        else:
            raise InstancesError(
                f"{source}: experiment {experiment.name!r} has phrasing indices into texts we do "
                "not ship (a clembench file); pass --resources with clembench's "
                "privateshared/resources/texts folder, or replay it with `privateshared replay`"
            )
        try:
            instances = [
                resolve_instance(
                    experiment.name, spec, *lookups, domain=domain, probe_wording=wording
                )
                for spec in experiment.game_instances
            ]
        except (KeyError, IndexError) as error:
            raise InstancesError(
                f"{source}: experiment {experiment.name!r} refers to phrasing {error} that its "
                "texts do not have; regenerate the instances for these domains"
            ) from None
        playable.append((index, experiment, instances))
    return playable


@cache
def _shipped_playable() -> tuple[tuple[int, ExperimentSpec, list[GameInstance]], ...]:
    """The experiments of the shipped instances files (classic, then two-listener), resolved."""
    return tuple(
        item
        for path in (default_instances_path(), two_listener_instances_path())
        for item in playable_instances(read_instances(path), load_domains(), source=str(path))
    )


def default_playable(
    domains: Mapping[str, Domain],
) -> list[tuple[int, ExperimentSpec, list[GameInstance]]]:
    """Every experiment that can be named without an instances file: the shipped files', then,
    for each of `domains` they do not cover (an installed package's, a folder of the user's),
    the instances `privateshared instances` draws by default, classic and two-listener."""
    playable = list(_shipped_playable())
    shipped = {spec.domain for _, spec, _ in playable}
    others = [domain for name, domain in domains.items() if name not in shipped]
    if others:
        drawn = [generate_instances(others)]
        if any(domain.second_listener is not None for domain in others):
            drawn.append(generate_two_listener_instances(others))
        for file in drawn:
            playable += playable_instances(file, domains, source="default instances")
    return playable


def default_instance(experiment: str, game_id: int) -> GameInstance:
    """One instance that a run names by experiment and game id (e.g. from LangGraph Studio).

    A shipped experiment comes from the default files; any other from the known domains
    (`registry.known_domains`, which reads PRIVATESHARED_DOMAINS), drawn as
    `privateshared instances` draws them by default.
    """
    playable = list(_shipped_playable())
    found = _find_instance(playable, experiment, game_id)
    if found is None:  # only now the other sources: a shipped experiment needs none of them
        playable = default_playable(known_domains())
        found = _find_instance(playable, experiment, game_id)
    if found is not None:
        return found
    known = ", ".join(spec.name for _, spec, _ in playable)
    raise InstancesError(
        f"no default instance {experiment!r} #{game_id}; experiments: {known}, game ids "
        f"0-{DEFAULT_PER_DOMAIN - 1} (a domain of your own: set {DOMAINS_VARIABLE} to its folder)"
    )


def _find_instance(
    playable: Sequence[tuple[int, ExperimentSpec, list[GameInstance]]],
    experiment: str,
    game_id: int,
) -> GameInstance | None:
    for _, spec, instances in playable:
        if spec.name == experiment:
            for instance in instances:
                if instance.game_id == game_id:
                    return instance
    return None

"""How fast the installed llama.cpp plays SmolLM2: prompt and generation speed, and a probe's time.

The build for any CPU (bench/running/llama_build.py) gives up the instructions a native build
would use; this says what that costs. Run it with the Python of each environment to compare,
on the same machine, in the same minutes (shared machines drift):

    .venv/bin/python scripts/llama_speed.py
    /tmp/native/bin/python scripts/llama_speed.py      # an environment with a native build

It loads the embedded model with the server's settings (2,048 tokens of context, this machine's
cores) and times, `--runs` times each: a probe of travel-booking's game 0 after four turns,
its prompt evaluated from scratch (what a server does when its prompt cache misses) and with
all but the probe cached (a served episode's usual call), and the generation of 64 tokens. It
prints the medians and the instruction sets the library was built with.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

from privateshared.bench.running.local_model import CONTEXT_TOKENS, locate, server_environment

# The library the server would load: our build for any CPU, or llama-cpp-python's own.
os.environ.update(server_environment())
import llama_cpp

from privateshared.bench.running.llama_build import compiled_features
from privateshared.domains.instances import default_instance

GENERATED = 64


def episode_messages() -> list[dict[str, str]]:
    """Game 0 of travel-booking as the answerer sees it after four turns, and a probe."""
    instance = default_instance("travel-booking", 0)
    messages = [{"role": "user", "content": instance.initial_prompt}]
    for slot in instance.request_order[:4]:
        messages += [
            {"role": "user", "content": f"{instance.tag}: {instance.requests[slot]}"},
            {"role": "assistant", "content": f"ANSWER: {instance.slots[slot]}."},
        ]
    probe = next(iter(instance.probes[4].values()))
    return [*messages, {"role": "user", "content": f"ME: {probe}"}]


def median_seconds(runs: int, call: Callable[[], object], before: Callable[[], object]) -> float:
    """The median time of `call`, each run after `before`."""
    times = []
    for _ in range(runs):
        before()
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    model = llama_cpp.Llama(str(locate("smollm2").path), n_ctx=CONTEXT_TOKENS, verbose=False)
    built = compiled_features(llama_cpp.llama_print_system_info().decode()) or frozenset()
    messages = episode_messages()
    prompt = model.tokenize(json.dumps(messages).encode())

    def probe() -> object:
        return model.create_chat_completion(messages, max_tokens=3, temperature=0.0)

    def generate() -> object:
        return model.create_completion("Once upon a time", max_tokens=GENERATED,
                                       temperature=0.0, stop=[])  # fmt: skip

    cold = median_seconds(args.runs, probe, model.reset)
    warm = median_seconds(args.runs, probe, lambda: None)
    generation = median_seconds(args.runs, generate, model.reset)
    which = "llama-cpp-python's own" if "LLAMA_CPP_LIB_PATH" not in os.environ else "our"
    print(f"llama.cpp {llama_cpp.__version__} ({which} build), its CPU code built with: "
          f"{', '.join(sorted(built)) or 'no optional instruction set'}")  # fmt: skip
    print(f"a probe after {len(prompt)} tokens, evaluated from scratch: {cold * 1000:7.0f} ms")
    print(f"a probe, the prompt cached but its last message:    {warm * 1000:7.0f} ms")
    print(f"generation: {GENERATED / generation:.1f} tokens/s (median of {args.runs} runs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

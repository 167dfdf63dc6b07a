"""Time the default benchmark's 50 fake-model episodes on a local Ray cluster of 1 worker, then
of 2, against the local fake endpoint: what a second worker buys. Prints one line per size.

Each worker plays one episode at a time (--concurrency = the cluster's CPUs), so the cluster's
size is the number of episodes under way.

    .venv/bin/python scripts/ray_bench.py [--latency 0.05]
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import tempfile

CHILD = """
import contextlib, io, os, sys, time
import ray
cpus, latency, concurrency, results = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
from privateshared.bench.cli import main
from privateshared.bench.testing.fake_endpoint import FakeOpenAI
from privateshared.bench.testing.fake_players import default_players
with FakeOpenAI(default_players(), delay=latency) as server:
    ray.get(ray.remote(lambda: None).remote())  # the cluster is up before the clock starts
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--model", "fake-model", "--base-url", server.base_url, "--ray",
                     "auto", "--concurrency", concurrency, "--results-dir", results])
    print(f"{time.perf_counter() - start:.1f} {len(server.requests)} {code}")
ray.shutdown()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per call")
    args = parser.parse_args()
    for cpus in (1, 2):
        args.concurrency = str(cpus)
        with tempfile.TemporaryDirectory() as results:
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    CHILD,
                    str(cpus),
                    str(args.latency),
                    args.concurrency,
                    results,
                ],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
        seconds, calls, code = float(out[0]), int(out[1]), out[2]
        print(
            f"{cpus} worker{'s' if cpus > 1 else ' '}: {seconds:5.1f} s for 50 episodes, "
            f"{calls} calls, latency {args.latency} s (exit {code})"
        )
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())

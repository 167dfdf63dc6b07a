"""llama.cpp for the local model, built so that it runs on any CPU it meets.

PyPI has no wheel of llama-cpp-python, so pip builds it from source, by default with
`-march=native`: the library then uses whatever the build machine's CPU has. That breaks in two
ways. On a CPU with AMX (Intel Xeon since Sapphire Rapids) llama.cpp compiles in its AMX matrix
kernels, which crash the server with SIGSEGV on its first completion (an upstream fault of
`ggml_backend_amx_mul_mat`). And the wheel lands in pip's cache, keyed by the source archive
alone: every later install on that machine takes it whatever CMAKE_ARGS say, and an environment
or cache that moves to an older CPU dies with SIGILL. A build for the oldest x86-64 alone runs
everywhere, but ggml then has no vector code for the model's quantized weights: measured here,
a probe's prompt took 48 s instead of well under one.

So the project builds llama.cpp itself (`privateshared llama-cpp build`, run by `make install`),
the way llama.cpp's own releases are built: the CPU code as several variants (`VARIANTS`,
llama.cpp's own definitions, from the oldest x86-64 up to AVX-512), each a library that llama.cpp
scores against the CPU it finds when it starts, loading the best it can run. AMX's variant is
never built, nor anything the project does not load (llama.cpp's tools, its common library, the
multimodal one), which makes the build shorter than pip's. The libraries go into our cache
folder, keyed by everything that makes them (`recipe_key`); llama-cpp-python's Python code is
installed from the same source without libraries of its own, and the server is pointed at ours
(`LLAMA_CPP_LIB_PATH`). pip never builds llama.cpp, so no wheel from its cache can stand in.

A llama-cpp-python that does carry its own libraries (a user's native or GPU build) is played as
it is; `crash_fix` then says what applies when its server crashes.

This module imports only the standard library: the crash report reads it, and the build runs
before anything heavy is installed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "llama-cpp-python"
BUILD_COMMAND = "privateshared llama-cpp build"
"""Builds llama.cpp for any CPU and installs it; the fix a crash of another build is told."""

CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=ON",
    # The CPU code as variant libraries that llama.cpp loads by what the CPU has (no -march=
    # native, which GGML_BACKEND_DL refuses anyway).
    "-DGGML_BACKEND_DL=ON", "-DGGML_CPU_ALL_VARIANTS=ON", "-DGGML_NATIVE=OFF",
    # Only the library: llama-cpp-python loads libllama and nothing else of llama.cpp's.
    "-DLLAMA_BUILD_COMMON=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_TOOLS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_CURL=OFF",
    # The libraries find each other beside themselves, wherever the folder is.
    "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
    "-DCMAKE_INSTALL_RPATH=" + ("@loader_path" if sys.platform == "darwin" else "$ORIGIN"),
)  # fmt: skip

VARIANTS = {
    # (system, machine) -> llama.cpp's CPU variants to build (ggml/src/CMakeLists.txt names
    # them and their instruction sets). The first runs on every CPU of its kind; AMX's
    # (sapphirerapids) is left out: its kernels crash.
    ("linux", "x86_64"): ("x64", "haswell", "icelake"),
    ("linux", "aarch64"): ("armv8.0_1", "armv8.2_2"),
    ("darwin", "arm64"): ("apple_m1",),
}
"""x86-64: `x64` (no optional instruction set), `haswell` (AVX2, FMA, F16C: most CPUs since
2013), `icelake` (AVX-512 with VBMI and VNNI: Ice Lake and later Xeons, AMD Zen 4 and 5).
arm64 Linux: the v8.0 baseline, and v8.2 with dot products and FP16. macOS: the M1's, which
every Apple chip runs (and Metal, llama.cpp's default there)."""

X86_FLAGS = {
    # llama.cpp's name for an instruction set (its system info) -> the Linux /proc/cpuinfo flag
    "SSE3": "pni", "SSSE3": "ssse3", "AVX": "avx", "AVX_VNNI": "avx_vnni", "AVX2": "avx2",
    "F16C": "f16c", "FMA": "fma", "BMI2": "bmi2", "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi", "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}  # fmt: skip
ARM_FLAGS = {
    "NEON": "asimd", "ARM_FMA": "asimd", "FP16_VA": "asimdhp", "DOTPROD": "asimddp",
    "MATMUL_INT8": "i8mm", "SVE": "sve", "SME": "sme",
}  # fmt: skip
FEATURE_FLAGS = {**X86_FLAGS, **ARM_FLAGS}
"""The CPU features llama.cpp's system info reports -> the CPU flag each needs (Linux)."""


def variants_for(system: str, machine: str) -> tuple[str, ...]:
    """The CPU variants built for a platform (`sys.platform`, `platform.machine()`)."""
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine.lower(), machine.lower())
    if system == "darwin" and machine == "aarch64":
        machine = "arm64"
    try:
        return VARIANTS[(system, machine)]
    except KeyError:
        raise LookupError(
            f"no build of llama.cpp for {system} on {machine} here; install llama-cpp-python "
            "your own way (it is then played as it is)"
        ) from None


def recipe_key(version: str, variants: Sequence[str], system: str, machine: str) -> str:
    """What names a build in our cache: the same inputs, the same libraries."""
    recipe = "\n".join([PACKAGE, version, system, machine, *CMAKE_OPTIONS, *variants])
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def pinned_version(requirements: Sequence[str]) -> str:
    """The version of llama-cpp-python that the `local` extra pins, from the distribution's
    requirements (`llama-cpp-python[server]==0.3.36; extra == "local"`)."""
    for requirement in requirements:
        pin = re.match(r"llama[-_]cpp[-_]python\s*(\[[^\]]*\])?\s*==\s*([^\s;,]+)",
                       requirement, re.IGNORECASE)  # fmt: skip
        if pin:
            return pin.group(2)
    raise LookupError(f"no {PACKAGE}==VERSION among privateshared's requirements")


def cache_root(environ: Mapping[str, str]) -> Path:
    """Where our builds are kept: PRIVATESHARED_CACHE, else the user's cache folder."""
    if root := environ.get("PRIVATESHARED_CACHE"):
        return Path(root)
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "privateshared"


def library_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The folder of this machine's build of llama.cpp for the pinned version (it may not
    exist yet)."""
    version = pinned_version(importlib.metadata.requires("privateshared") or [])
    variants = variants_for(sys.platform, platform.machine())
    key = recipe_key(version, variants, sys.platform, platform.machine())
    return cache_root(environ) / "llama.cpp" / f"{version}-{key}"


def own_libraries() -> Path | None:
    """The libraries llama-cpp-python was installed with, if any (a build of the user's: pip's
    native one, or for a GPU); None for ours, installed without."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "lib"
    return folder if any(folder.glob("libllama.*")) else None


def compiled_features(system_info: str) -> frozenset[str] | None:
    """The CPU features the loaded llama.cpp was built with, from its system info (`CPU : SSE3
    = 1 | AVX = 1 | ... | Metal : ...`, which the server prints into its log); None without."""
    line = next((line for line in system_info.splitlines() if "CPU :" in line), None)
    if line is None:
        return None
    features = set()
    for item in line.split("CPU :", 1)[1].split("|"):
        if " : " in item:  # the next backend's features begin
            break
        name, _, value = (part.strip() for part in item.partition("="))
        if value == "1" and name in FEATURE_FLAGS:
            features.add(name)
    return frozenset(features)


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of a Linux /proc/cpuinfo (x86 `flags`, arm64 `Features`)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def this_cpu() -> frozenset[str] | None:
    """This machine's CPU flags (Linux); None where they cannot be read."""
    try:
        return cpu_flags(Path("/proc/cpuinfo").read_text())
    except OSError:
        return None


def crash_fix(ours: bool, features: frozenset[str] | None, cpu: frozenset[str] | None) -> str:
    """What to do about a llama.cpp server that a signal killed: `ours` when it ran our build,
    `features` what its library was built with, `cpu` what the CPU has."""
    if features is not None and "AMX_INT8" in features:
        return (
            "its llama.cpp was built with AMX kernels (pip's native build on this CPU), which "
            f"crash; install the build for any CPU: {BUILD_COMMAND}"
        )
    missing = sorted(f for f in features or () if cpu is not None and FEATURE_FLAGS[f] not in cpu)
    if missing:
        return (
            f"its llama.cpp was built for a CPU with {', '.join(missing)}, which this one lacks; "
            f"install the build for any CPU: {BUILD_COMMAND}"
        )
    if not ours:
        return (
            "its llama.cpp is llama-cpp-python's own build (pip's, for the CPU it was built "
            f"on); install the build for any CPU: {BUILD_COMMAND}"
        )
    return (
        "its llama.cpp is the build for any CPU already, so a rebuild will not change it; run "
        "the same command to play what is missing, and should it crash again, report the log "
        "to llama.cpp"
    )


def _run(command: Sequence[str], what: str, **options: object) -> None:
    """Run a step of the build quietly; on failure, show its output and stop in one line."""
    done = subprocess.run(command, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          **options)  # type: ignore[call-overload]  # fmt: skip
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-6000:])
        raise SystemExit(
            f"privateshared: error: {what} failed (its output is above); building llama.cpp "
            "needs a C++ compiler, make and cmake 3.21 or later (Debian: apt-get install "
            "build-essential cmake)"
        )


def _pip(*arguments: str, what: str, env: Mapping[str, str] | None = None) -> None:
    _run([sys.executable, "-m", "pip", *arguments], what, env=env)


def _build_libraries(source: Path, variants: Sequence[str], target: Path, work: Path) -> None:
    """Compile llama.cpp from llama-cpp-python's source archive, `variants` of its CPU code,
    into `target` (which llama.cpp will search for its CPU variants)."""
    build = work / "build"
    _run(["cmake", "-S", str(source / "vendor" / "llama.cpp"), "-B", str(build), *CMAKE_OPTIONS,
          f"-DGGML_BACKEND_DIR={target}"], "configuring llama.cpp")  # fmt: skip
    jobs = f"-j{os.cpu_count() or 1}"
    # Building libggml would build every variant (it depends on them all, AMX's too): the
    # chosen variants first, then libggml and libllama alone (make's TARGET/fast).
    cpu_targets = [f"ggml-cpu-{variant}" for variant in variants]
    extra = ["ggml-metal"] if sys.platform == "darwin" else []
    _run(["make", "-C", str(build), jobs, "ggml-base", *cpu_targets, *extra],
         "compiling llama.cpp's CPU variants")  # fmt: skip
    _run(["make", "-C", str(build), jobs, "ggml/fast", "llama/fast"], "compiling llama.cpp")
    shutil.copytree(build / "bin", work / "lib", symlinks=True,
                    ignore=shutil.ignore_patterns("*.a", "*.o"))  # fmt: skip


def _source_archive(version: str, folder: Path) -> Path:
    """llama-cpp-python's source archive (llama.cpp's source inside), fetched once."""
    archives = sorted(folder.glob(f"llama_cpp_python-{version}.tar.gz"))
    if not archives:
        _pip("download", "--quiet", "--no-deps", "--no-binary", ":all:", "--no-cache-dir",
             "--dest", str(folder), f"{PACKAGE}=={version}",
             what=f"downloading {PACKAGE} {version}")  # fmt: skip
        archives = sorted(folder.glob(f"llama_cpp_python-{version}.tar.gz"))
    return archives[0]


def build(rebuild: bool = False) -> Path:
    """Build llama.cpp for any CPU unless our cache has it, and install llama-cpp-python's
    Python code, which will load it, into this environment. Returns the libraries' folder."""
    version = pinned_version(importlib.metadata.requires("privateshared") or [])
    variants = variants_for(sys.platform, platform.machine())
    target = library_dir()
    root = cache_root(os.environ)
    archive = _source_archive(version, root / "sources")
    if rebuild or not (target / "build.json").is_file():
        print(f"building llama.cpp ({PACKAGE} {version}) for any CPU, once per machine, a few "
              f"minutes: CPU variants {', '.join(variants)}", flush=True)  # fmt: skip
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".building-") as work:
            source = Path(work) / "source"
            with tarfile.open(archive) as tar:
                tar.extractall(source, filter="data")
            (unpacked,) = source.iterdir()
            _build_libraries(unpacked, variants, target, Path(work))
            recipe = {"package": PACKAGE, "version": version, "variants": list(variants),
                      "cmake": list(CMAKE_OPTIONS)}  # fmt: skip
            (Path(work) / "lib" / "build.json").write_text(json.dumps(recipe, indent=2) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            os.replace(Path(work) / "lib", target)  # whole, or not at all
    # The Python code alone, from the same archive; never through pip's cache.
    no_libraries = {**os.environ, "CMAKE_ARGS": "-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF"}
    _pip("install", "--quiet", "--no-deps", "--force-reinstall", "--no-cache-dir", str(archive),
         what=f"installing {PACKAGE}'s Python code", env=no_libraries)  # fmt: skip
    return target


@dataclass(frozen=True)
class LoadedBuild:
    """What the local model's server loads on this machine."""

    own: bool
    """llama-cpp-python's own libraries (a user's build), not ours."""
    folder: Path
    variant: str | None
    """The CPU variant llama.cpp chose for this CPU (ours), e.g. libggml-cpu-haswell.so."""
    features: frozenset[str]
    """The instruction sets the loaded CPU code was built with."""

    def __str__(self) -> str:
        which = "llama-cpp-python's own build" if self.own else "the build for any CPU"
        sets = ", ".join(sorted(self.features)) or "no optional instruction set"
        code = self.variant or "its CPU code"
        return f"llama.cpp: {which} in {self.folder}; this CPU loads {code} ({sets})"


def loaded_build(environ: Mapping[str, str] = os.environ) -> LoadedBuild:
    """What the local model's server will load here, asked of a process that loads it."""
    own = own_libraries()
    folder = own or library_dir(environ)
    if own is None and not (folder / "build.json").is_file():
        raise FileNotFoundError(f"llama.cpp is not built here; build it: {BUILD_COMMAND}")
    # The library itself, through ctypes: llama-cpp-python's own imports need packages that
    # `make install` adds only after the build.
    probe = (
        "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.llama_backend_init(); "
        "lib.llama_print_system_info.restype = ctypes.c_char_p; "
        "print(lib.llama_print_system_info().decode())"
    )
    library = next(iter(sorted(folder.glob("libllama.*"))), folder / "libllama.so")
    done = subprocess.run([sys.executable, "-c", probe, str(library)], env=dict(environ),
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        said = " ".join((done.stderr or f"exit code {done.returncode}").split())
        raise RuntimeError(f"llama.cpp does not load here: {said[-300:]}")
    loaded = re.findall(r"loaded CPU backend from (\S+)", done.stderr)
    variant = Path(loaded[-1]).name if loaded else None
    return LoadedBuild(own is not None, folder, variant,
                       compiled_features(done.stdout) or frozenset())  # fmt: skip

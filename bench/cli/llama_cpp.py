"""`privateshared llama-cpp build` and `info`: llama.cpp for the local model, built for any CPU.

`make install` runs `build` before it installs the `local` extra; a crash of another build of
llama.cpp names it as the fix (running/llama_build.py says why the project builds it itself).
"""

from __future__ import annotations

import argparse

from privateshared.bench.cli.usage import UsageError
from privateshared.bench.running.llama_build import build, loaded_build


def llama_cpp_command(args: argparse.Namespace) -> int:
    try:
        if args.llama_cpp_command == "build":
            folder = build(rebuild=args.rebuild)
            print(f"llama.cpp for any CPU: {folder}")
        print(loaded_build())
    except (LookupError, FileNotFoundError, RuntimeError) as error:
        raise UsageError(str(error)) from None
    return 0

"""lion_nb against the floor it stands on, both measured in this one run.

Run: ``python tests/bench/bench_floor.py``. Prints two ratios, each beside its floor:

- ``Branch.chat`` of one text prompt against a raw ``httpx.AsyncClient.post`` of the same
  payload to the same loopback server (in its own process, so that its work is not counted):
  the CPU time per call (``time.process_time``), the paths taking turns block by block, the
  median of the blocks. Target: at most 1.15x.
- ``Branch.from_dict`` of a 10,000-message branch against pydantic validating the same
  message dicts into classes with the same fields, types and defaults as lion_nb's message
  classes but none of their validators (one discriminated-union pass: what pydantic alone
  costs). CPU time, the two taking turns, the median of the rounds. Target: at most 1.3x.

A report, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, Any, Union

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from bench_gc import Server, branch_chat, cpu_per_call, raw_httpx  # noqa: E402

N_MESSAGES = 10_000
CHAT_TARGET, LOAD_TARGET = 1.15, 1.3


# -- Branch.chat against a raw post ----------------------------------------------------------
async def chat_cpu(url: str, n: int, warmup: int, blocks: int) -> tuple[float, float]:
    """(raw post, ``Branch.chat``) median CPU seconds per call over ``blocks`` blocks, the
    two taking turns block by block (`bench_gc.cpu_per_call`)."""
    cpu = await cpu_per_call(url, n, warmup, blocks, {"raw": raw_httpx, "chat": branch_chat})
    return cpu["raw"], cpu["chat"]


# -- Branch.from_dict against pydantic -------------------------------------------------------
def floor_adapter() -> Any:
    """A validator of lion_nb's message dicts into plain pydantic classes: each message
    class's fields (types, defaults) with none of its validators."""
    from pydantic import ConfigDict, Field, TypeAdapter, create_model

    from lion_nb.protocols.messages import (
        ActionRequest,
        ActionResponse,
        AssistantResponse,
        Instruction,
        System,
    )

    config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    plain = [
        create_model(  # type: ignore[call-overload]
            "Plain" + cls.__name__,
            __config__=config,
            **{name: (f.annotation, f) for name, f in cls.model_fields.items()},
        )
        for cls in (System, Instruction, AssistantResponse, ActionRequest, ActionResponse)
    ]
    union = Union[tuple(plain)]  # type: ignore[valid-type]
    return TypeAdapter(list[Annotated[union, Field(discriminator="kind")]])


def serialized_branch() -> dict[str, Any]:
    from lion_nb import Branch

    branch = Branch(system="bench")
    for i in range(N_MESSAGES // 2):
        branch.msgs.add_message(instruction=f"question {i}")
        branch.msgs.add_message(assistant_response=f"answer {i}")
    return branch.to_dict()


def load_cpu(rounds: int) -> tuple[float, float]:
    """(pydantic's validation, ``Branch.from_dict``) median CPU seconds over ``rounds``."""
    from lion_nb import Branch

    data = serialized_branch()
    collections = data["messages"]["collections"]
    adapter = floor_adapter()
    paths = {
        "floor": lambda: adapter.validate_python(collections),
        "from_dict": lambda: Branch.from_dict(data),
    }
    for run in paths.values():  # schemas built, caches warm
        run()
    samples: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(rounds):
        for name, run in paths.items():
            gc.collect()
            start = time.process_time()
            run()
            samples[name].append(time.process_time() - start)
    return statistics.median(samples["floor"]), statistics.median(samples["from_dict"])


def measure(
    n: int = 30, warmup: int = 30, blocks: int = 21, rounds: int = 11
) -> tuple[float, float, float, float]:
    """(raw post, chat, pydantic floor, from_dict) CPU seconds."""
    with Server() as server:
        raw, chat = anyio.run(chat_cpu, server.url, n, warmup, blocks)
    floor, load = load_cpu(rounds)
    return raw, chat, floor, load


def results() -> list[tuple]:
    """Rows ``(figure, value, target, ratio to its floor)`` for ``tests/bench/run_all.py``."""
    raw, chat, floor, load = measure()
    return [
        ("Branch.chat, text, CPU per call", f"{chat * 1e6:.0f} us", "<= 1.15x raw", chat / raw),
        ("  raw httpx.AsyncClient.post, same payload (floor)", f"{raw * 1e6:.0f} us", "", 1.0),
        ("Branch.from_dict, 10,000 messages, CPU", f"{load * 1e3:.1f} ms", "<= 1.3x", load / floor),
        ("  pydantic, the same dicts into plain classes (floor)", f"{floor * 1e3:.1f} ms", "", 1.0),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=30, help="calls per block")
    parser.add_argument("--blocks", type=int, default=21, help="blocks per path")
    parser.add_argument("--rounds", type=int, default=11, help="from_dict rounds")
    args = parser.parse_args()
    raw, chat, floor, load = measure(args.n, 30, args.blocks, args.rounds)
    print(f"raw httpx post (floor)     {raw * 1e6:8.0f} us CPU")
    print(
        f"Branch.chat                {chat * 1e6:8.0f} us CPU  {chat / raw:5.2f}x"
        f"   (target <= {CHAT_TARGET}x)"
    )
    print(f"pydantic validation (floor){floor * 1e3:8.1f} ms CPU")
    print(
        f"Branch.from_dict           {load * 1e3:8.1f} ms CPU  {load / floor:5.2f}x"
        f"   (target <= {LOAD_TARGET}x)"
    )


if __name__ == "__main__":
    main()

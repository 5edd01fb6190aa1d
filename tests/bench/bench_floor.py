"""lion_nb against the floor it stands on, both measured in this one run.

Run: ``python tests/bench/bench_floor.py``. Prints two ratios, each beside its floor:

- ``Branch.chat`` of one text prompt against a raw ``httpx.AsyncClient.post`` of the same
  payload to the same loopback server (in its own process, so that its work is not counted):
  the CPU time per call (``time.process_time``), the paths taking turns block by block (in
  the reverse order every other round); the ratio is the median of the blocks' paired
  ratios, each pair run back to back. Target: at most 1.15x.
- ``Branch.from_dict`` of a 10,000-message branch against two floors, timed in turns with
  it (CPU time, the median of the rounds):

  - pydantic validating the same message dicts into lion_nb's own message classes (one
    ``TypeAdapter`` pass, their validators in: each message's text made whole and known
    secrets masked as it is made, the secrets looked up once for the pass). This is the
    floor as the target words it. Target: at most 1.3x.
  - pydantic validating them into classes with the same fields, types and defaults but none
    of the validators: what pydantic alone costs. Printed beside it, with no target: the
    gap to it is the cleaning every loaded message goes through.

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

from bench_gc import Server, branch_chat, cpu_samples, paired_ratio, raw_httpx  # noqa: E402

N_MESSAGES = 10_000
CHAT_TARGET, LOAD_TARGET = 1.15, 1.3


# -- Branch.chat against a raw post ----------------------------------------------------------
async def chat_cpu(url: str, n: int, warmup: int, blocks: int) -> tuple[float, float, float]:
    """(raw post, ``Branch.chat``) median CPU seconds per call over ``blocks`` blocks, the
    two taking turns block by block (`bench_gc.cpu_samples`), and the median of the blocks'
    chat/raw ratios: each pair ran back to back, so the drift of a shared machine cancels
    in it."""
    cpu = await cpu_samples(url, n, warmup, blocks, {"raw": raw_httpx, "chat": branch_chat})
    ratio = paired_ratio(cpu, "chat", "raw")
    return statistics.median(cpu["raw"]), statistics.median(cpu["chat"]), ratio


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


def load_cpu(rounds: int) -> tuple[float, float, float]:
    """(pydantic into plain classes, pydantic into lion_nb's message classes,
    ``Branch.from_dict``) median CPU seconds over ``rounds``."""
    from lion_nb import Branch
    from lion_nb.protocols.messages import load_messages

    data = serialized_branch()
    collections = data["messages"]["collections"]
    adapter = floor_adapter()
    paths = {
        "plain": lambda: adapter.validate_python(collections),
        "classes": lambda: load_messages(collections),
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
    plain, classes, load = (statistics.median(samples[name]) for name in paths)
    return plain, classes, load


def measure(
    n: int = 30, warmup: int = 30, blocks: int = 41, rounds: int = 31
) -> tuple[float, float, float, float, float, float]:
    """(raw post, chat, the median chat/raw ratio, pydantic into plain classes, into
    lion_nb's classes, from_dict) CPU seconds."""
    with Server() as server:
        raw, chat, ratio = anyio.run(chat_cpu, server.url, n, warmup, blocks)
    plain, classes, load = load_cpu(rounds)
    return raw, chat, ratio, plain, classes, load


def results() -> list[tuple]:
    """Rows ``(figure, value, target, ratio to its floor)`` for ``tests/bench/run_all.py``."""
    raw, chat, ratio, plain, classes, load = measure()
    return [
        ("Branch.chat, text, CPU per call", f"{chat * 1e6:.0f} us", "<= 1.15x raw", ratio),
        ("  raw httpx.AsyncClient.post, same payload (floor)", f"{raw * 1e6:.0f} us", "", 1.0),
        (
            "Branch.from_dict, 10,000 messages, CPU",
            f"{load * 1e3:.1f} ms",
            "<= 1.3x",
            load / classes,
        ),
        (
            "  pydantic, the same dicts into lion_nb's message classes (floor)",
            f"{classes * 1e3:.1f} ms",
            "",
            1.0,
        ),
        (
            "  pydantic into plain classes, no validators (from_dict against it)",
            f"{plain * 1e3:.1f} ms",
            "",
            load / plain,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=30, help="calls per block")
    parser.add_argument("--blocks", type=int, default=41, help="blocks per path")
    parser.add_argument("--rounds", type=int, default=31, help="from_dict rounds")
    args = parser.parse_args()
    raw, chat, ratio, plain, classes, load = measure(args.n, 30, args.blocks, args.rounds)
    print(f"raw httpx post (floor)           {raw * 1e6:8.0f} us CPU")
    print(
        f"Branch.chat                      {chat * 1e6:8.0f} us CPU  {ratio:5.2f}x"
        f"   (target <= {CHAT_TARGET}x)"
    )
    print(f"pydantic into the classes (floor){classes * 1e3:8.1f} ms CPU")
    print(f"pydantic into plain classes      {plain * 1e3:8.1f} ms CPU")
    print(
        f"Branch.from_dict                 {load * 1e3:8.1f} ms CPU  {load / classes:5.2f}x"
        f"   (target <= {LOAD_TARGET}x; {load / plain:.2f}x the plain classes)"
    )


if __name__ == "__main__":
    main()

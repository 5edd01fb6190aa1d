"""``%lion cassette``: record the notebook's model calls to a file, and replay them.

``%lion cassette PATH [--mode MODE]`` makes PATH (relative to the notebook's folder, the
kernel's working directory) the process-wide cassette of `lion_nb.models.cassettes`, so it
covers every model of the notebook -- branches' models, ``-m`` models, models created later
-- through the same seam as ``with cassette(...)`` in code. Running the cell again opens the
file afresh, so *Run All* twice replays the same answers in the same order. ``--off`` stops
it; ``%lion cassette`` alone says what is in force (``LION_NB_CASSETTE_MODE`` included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...models.cassettes._modes import MODE_HELP, MODES
from .registry import _short, arg, command, file_problem

if TYPE_CHECKING:
    from argparse import Namespace

    from .command_context import CommandContext

__all__: list[str] = []


@command(
    "cassette",
    "Record or replay every model call of the notebook through a .jsonl file; "
    "alone, show the cassette in force.",
    arg("path", nargs="?", help="the cassette file, e.g. cassettes/calls.jsonl"),
    arg(
        "--mode",
        choices=MODES,
        help="; ".join(f"{m}: {h}" for m, h in MODE_HELP.items()) + " (default: once)",
    ),
    arg("--off", action="store_true", help="stop using the cassette: calls go to the providers"),
)
def _cassette(ctx: CommandContext, args: Namespace) -> None:
    from ...models.cassettes import Cassette, CassetteError, current_cassette, use_cassette

    if args.off:
        if args.path or args.mode:
            raise UsageError("`%lion cassette --off` takes no PATH and no `--mode`.")
        use_cassette(None)
        print("Cassette off: model calls go to the providers.")
        return
    if args.path is None:
        if args.mode:
            raise UsageError(
                f"`%lion cassette --mode {args.mode}` needs the cassette's PATH: "
                f"`%lion cassette cassettes/calls.jsonl --mode {args.mode}`."
            )
        tape = current_cassette()
        try:
            print(tape.describe() if tape else "No cassette: calls go to the providers.")
        except CassetteError as exc:  # a forced mode that is not one
            raise UsageError(f"`%lion cassette`: {exc}") from None
        return
    try:
        tape = Cassette(args.path, args.mode or "once")
        status = tape.describe()
        missing = tape.effective_mode == "none" and not tape.existed
    except CassetteError as exc:
        raise UsageError(f"`%lion cassette {args.path}`: {exc}") from None
    except OSError as exc:
        problem = file_problem(exc, args.path, writing=(args.mode or "once") != "none")
        raise UsageError(f"`%lion cassette {_short(args.path, 60)}`: {problem}") from None
    use_cassette(tape)
    print(status.replace("):", ") for every model of this notebook:", 1))
    if missing:
        print(
            f"`{tape.path}` does not exist yet: in mode `none` every call to a provider (HTTP "
            "service or CLI agent) will fail; offline models still answer."
        )

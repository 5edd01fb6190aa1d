"""``%lion trace on|off|status``: send the notebook's spans to an OpenTelemetry collector.

``%lion trace on [ENDPOINT] [--content]`` turns `lion_nb.tracing` on: ENDPOINT, else
``%config LionMagics.trace_endpoint``, else the standard ``OTEL_EXPORTER_OTLP_*`` variables
(``http://localhost:4318`` when none is set). Headers are never typed here -- a cell's
source is kept in its history and in the notebook file: give them in
``OTEL_EXPORTER_OTLP_HEADERS`` or to ``lion_nb.tracing.enable(headers=...)``. Each cell's
spans are sent before the cell ends (ADR-0116). ``off`` stops it; ``status`` (or nothing)
says where spans go and how many went. Setting ``LionMagics.trace_endpoint`` turns tracing
on at that endpoint ('' turns it off).
"""

from __future__ import annotations

from argparse import Namespace

from IPython.core.error import UsageError

from ...errors import ConfigurationError
from .command_context import CommandContext
from .registry import arg, command

__all__ = ["apply_endpoint"]


@command(
    "trace",
    "Send each turn's, model call's and tool call's spans to an OpenTelemetry (OTLP/HTTP) "
    "collector: on, off, or its status.",
    arg("action", nargs="?", choices=("on", "off", "status"), default="status"),
    arg("endpoint", nargs="?", help="the collector's URL, e.g. http://127.0.0.1:4318"),
    arg("--content", action="store_true", help="send message content too (masked, bounded)"),
)
def _trace(ctx: CommandContext, args: Namespace) -> None:
    from ... import tracing

    if args.action != "on" and (args.endpoint or args.content):
        raise UsageError(f"`%lion trace {args.action}` takes no ENDPOINT and no `--content`.")
    if args.action == "off":
        print(tracing.disable())
        return
    if args.action == "status":
        print(tracing.status())
        return
    endpoint = args.endpoint or ctx.settings.get("trace_endpoint") or None
    try:
        state = tracing.enable(endpoint, capture_content=args.content)
    except ConfigurationError as exc:
        raise UsageError(f"`%lion trace on`: {exc}") from None
    print(state)


def apply_endpoint(value: str) -> None:
    """What setting ``LionMagics.trace_endpoint`` does: on at ``value``; '' turns it off."""
    from ... import tracing

    if not value:
        tracing.disable()
        return
    content = tracing.status().capture_content
    try:
        tracing.enable(value, capture_content=content)
    except ConfigurationError as exc:
        raise UsageError(f"`LionMagics.trace_endpoint`: {exc}") from None

"""The ``%lion`` subcommands, one module per group, each registering its own in `registry`.

Importing this package registers them all, in the order ``%lion help`` lists them: the
branch subcommands of `registry` itself, then `session` (models, tools, save/load, config,
runs), `store`, `extend`, `cassette`, `mcp`, `trace` and `serve`. The modules import
`registry`; it imports none of them, and none of them imports the magics above: each
subcommand takes the line's `CommandContext` (`command_context`), which the magics build.
"""

from __future__ import annotations

# registration order is the order in which `%lion help` lists the subcommands
# isort: off
from . import registry
from . import session as _registers_session  # noqa: F401
from . import store as _registers_store  # noqa: F401
from . import extend as _registers_extend  # noqa: F401
from . import cassette as _registers_cassette  # noqa: F401
from . import mcp as _registers_mcp  # noqa: F401
from . import trace as _registers_trace  # noqa: F401
from . import serve as _registers_serve  # noqa: F401
# isort: on

COMMANDS = registry.COMMANDS
dispatch = registry.dispatch
dispatch_async = registry.dispatch_async

__all__ = ["COMMANDS", "dispatch", "dispatch_async"]

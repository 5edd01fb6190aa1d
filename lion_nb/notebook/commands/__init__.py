"""The ``%lion`` subcommands, one module per group, dispatched by `registry`."""

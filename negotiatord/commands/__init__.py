"""The ``negotiatord`` subcommands, one module each."""

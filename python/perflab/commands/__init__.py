"""One module per subcommand: ``add_arguments(parser)`` and ``main(args) -> int``."""

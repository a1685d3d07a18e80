"""``python -m memspec.cli``: the command line, as the ``memspec`` script runs it."""

from .commands import main

main()

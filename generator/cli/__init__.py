"""cli: the ``memspec`` command line (``python -m memspec.cli`` runs it too).

The commands, ``memspec show`` and ``memspec validate``. Exit status: 0 ok, 1 a check failed,
2 bad input.

May import: every other stage (last stage).

``memspec.cli.<name>`` for a name of the former module ``memspec.cli`` (``main``, ``app``, ...)
still works for one version (now ``memspec.cli.commands``), with a DeprecationWarning.
"""

from .._moved import forward_names

__getattr__ = forward_names(__name__, "commands")

"""``python -m loopwright``: the ``loopwright`` command (as ``python -m loopwright.cli``)."""

from loopwright.cli.main import main

main()

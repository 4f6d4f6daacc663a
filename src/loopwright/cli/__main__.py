"""``python -m loopwright.cli``."""

from loopwright.cli.main import main

main()

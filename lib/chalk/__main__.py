"""``python -m chalk``: see ``chalk.cli``."""
import sys

from .cli import main

sys.exit(main())

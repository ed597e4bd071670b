"""``python -m d2s``: the d2s command line."""
import sys

from .cli import main

sys.exit(main())

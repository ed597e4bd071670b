"""``python -m d2s``: the d2s command line."""
import sys

from .cli import main

if __name__ == "__main__":  # importing it (a documentation tool walking the package) runs nothing
    sys.exit(main())

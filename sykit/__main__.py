"""``python -m sykit …`` works like the ``sykit`` command."""

import sys

from sykit._cli.main import main

if __name__ == "__main__":
    sys.exit(main())

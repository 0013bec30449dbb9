"""``python -m offsetscope.cli``: the ``offsetscope`` command."""

from __future__ import annotations

import sys

from offsetscope.cli import main

if __name__ == "__main__":
    sys.exit(main())

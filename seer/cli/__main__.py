"""``python -m seer.cli``: the ``seer`` command."""

import sys

from seer.cli import main

sys.exit(main())

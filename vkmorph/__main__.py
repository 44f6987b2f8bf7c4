"""``python -m vkmorph ...`` is the ``vkmorph`` command."""

import sys

from .app.cli import main

sys.exit(main())

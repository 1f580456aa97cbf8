"""``python -m otelhooks`` is the ``otelhooks`` command."""

import sys

from otelhooks._cli import main

sys.exit(main())

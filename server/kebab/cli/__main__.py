"""`python -m kebab.cli`: the same as the `kebab` command."""

import sys

from kebab.cli import main

sys.exit(main())

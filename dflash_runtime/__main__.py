"""`python -m dflash_runtime`."""

import sys

from dflash_runtime.cli import main

sys.exit(main())

"""`python -m triage`: the same command line as the `triage` script."""

import sys

from triage.cli import main

sys.exit(main())

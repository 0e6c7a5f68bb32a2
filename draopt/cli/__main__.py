"""`python -m draopt.cli`: the same command line as `python -m draopt` (kept: scripts and the
conformance runner call it so)."""

import sys

from draopt.cli import main

sys.exit(main())

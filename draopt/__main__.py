import sys

from draopt.cli import main

sys.exit(main())

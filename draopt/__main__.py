import sys

try:
    from draopt.cli import main
except KeyboardInterrupt:  # Ctrl-C while the libraries load: no traceback, as later
    sys.exit(130)

sys.exit(main())

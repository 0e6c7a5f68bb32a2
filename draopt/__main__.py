import sys

try:
    from draopt.launch import main
except KeyboardInterrupt:  # Ctrl-C before draopt.launch could take the signal over
    sys.exit(130)

sys.exit(main())

import sys

from robotlab.cli import main

sys.exit(main())

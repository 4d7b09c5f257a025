import sys

from tokend.cli import main

sys.exit(main())

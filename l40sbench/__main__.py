import sys

from l40sbench.cli import main

sys.exit(main())

import sys

from kernelindex.cli.main import main

sys.exit(main())

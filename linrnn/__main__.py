"""`python -m linrnn ...` is the `linrnn` command."""

import sys

from linrnn.cli import main

sys.exit(main())

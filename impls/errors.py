"""Moved to `linrnn.base.errors` (issue 51; docs/architecture.md, "What moved where"): `linrnn.impls.errors` still imports,
as the same module, for users' code. Nothing in the package imports this name (tests/test_packaging.py)."""

import sys

from linrnn.base import errors

sys.modules[__name__] = errors

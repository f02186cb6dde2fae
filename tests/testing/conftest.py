"""tests/testing: linrnn.testing, its strategies and its pytest plugin. `outside/` is a separate package (its own
pyproject.toml) whose tests run in a subprocess of their own (test_outside_package.py), never collected here."""

collect_ignore = ["outside"]

"""The one exception type that the command line turns into a one-line message.

Raise `LinrnnError` for every input a user can get wrong (a file, a shape, a name, a value); the
message says what was expected and what was found. Programming errors stay ordinary exceptions.
"""


class LinrnnError(ValueError):
    """A user-facing error: bad input, bad file, unknown name. Printed as one line by `linrnn`."""

"""linrnn's base, below every area: what the whole project builds on and nothing of it builds on another area.

    errors       `LinrnnError`, the one-line error of bad input (exit status 2)
    results      every results record: the envelope, the atomic writer, the record types, the stored-results folder
    provenance   the code version, the libraries and the machine a record keeps
    tolerance    the one tolerance table and `compare` / `assert_close` (docs/precision.md)
    extras       which optional extra installs which module, and the one-line error of a missing one

They lived in `impls/` until issue 51; `linrnn.impls.errors`, `linrnn.impls.results` and `linrnn.impls.tolerance`
still import (the same modules), for users' code and the pages that name them.
"""

"""linrnn: differential testing and theory verification for linear recurrent sequence models.

The package is one import root, `linrnn`, over the repository's top-level folders (docs/architecture.md):

    linrnn.base         what every area builds on: errors, results records, provenance, the tolerance table
    linrnn.impls        the contract (one spec per model), bundle, initialisation, the float64 reference,
                        the PyTorch side, the JAX side
    linrnn.verify       the cross-check, `linrnn conform` and its adapters, the speed harnesses
    linrnn.theory       SymPy/SciPy derivations of the papers' claims (import neither framework)
    linrnn.tasks        the tasks' generators and the one training stack
    linrnn.experiments  measurements that run the implementations, the claim experiments (`claims`) and how a
                        measurement decides (`decide`)
    linrnn.reports      loads saved results, settles the claims ledger, renders the HTML page
    linrnn.testing      the public testing API (`linrnn.testing`, the pytest plugin)
    linrnn.cli          the `linrnn` command (also `python -m linrnn`)

Importing `linrnn` imports nothing else: each area loads when it is used.
"""

__version__ = "0.2.0"
__all__ = ["__version__"]

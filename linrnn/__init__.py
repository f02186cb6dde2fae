"""linrnn: differential testing and theory verification for linear recurrent sequence models.

The package is one import root, `linrnn`, over the repository's top-level folders:

    linrnn.impls        configs, bundle, initialisation, tolerance table, the float64 reference,
                        the PyTorch side, the JAX side, the cross-check engine
    linrnn.theory       SymPy/SciPy derivations of the papers' claims (import neither framework)
    linrnn.tasks        the tasks' generators and the one training stack
    linrnn.experiments  measurements that run the implementations (Monte Carlo, training studies)
    linrnn.reports      loads saved results, settles the claims ledger, renders the HTML page
    linrnn.cli          the `linrnn` command (also `python -m linrnn`)

Importing `linrnn` imports nothing else: each area loads when it is used.
"""

__version__ = "0.2.0"
__all__ = ["__version__"]

"""How a measurement decides: the statistics (`stats`: SciPy and statsmodels' tests, never hand-rolled), the rules
that turn measurements into a claim's parts (`evidence`: `Part`, the thresholds, the learned and control gates) and
what combines tests (`rules`: Holm over a claim's contradictions and side findings, the comparisons of two arms).
It imports nothing of the project but `linrnn.base`: the claim experiments (`linrnn.experiments.claims`), the section
measurements beside them and the ledger (`linrnn.reports.ledger`) all decide through it."""

"""Experiments: measurements that run the implementations, returning plain data (numbers and lists).

    reference     recurrent vs kernel view of the float64 reference; R4 head independence; R5 converters
    derivations   the theory section: every derivation of `linrnn.theory`, and R3 by Monte Carlo
    montecarlo    E||x_t||^2 per RotRNN head / LRU mode, in the PyTorch and the JAX layers
    speed         forward time against L, every mixer x backend x mode
    tasks         the D4 grid: Shift and ContextShift for DLR, LRU, RotRNN
    normstudy     hidden-state norms, gamma_log drift and orthogonality over training (R8, R9, R1)
    precision_map every route's error against float64 over L and the radius, float32 / bfloat16 / float16

No verdicts and no drawing here: `linrnn.reports` settles the claims and draws the figures. Every
record they write or read goes through `linrnn.base.results` (the envelope, the atomic writer, the stored-results
folder `STORED_DIR`).
"""

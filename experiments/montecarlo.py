"""Claim R3 by Monte Carlo with the PyTorch and the JAX layers: E||x_t||^2 per RotRNN head, E|x_t,j|^2 per LRU mode.

Inputs u_t ~ N(0, I_H), i.i.d. over time and sequences (NumPy's generator, an independent stream per
framework, so the two frameworks give two independent estimates). The estimates, with normal-theory
confidence intervals, are compared with the closed forms of `linrnn.theory.normalisation`:

    RotRNN head, x_0 = 0 (the code)                 E||x_t||^2 = 1 - gamma^(2t)
    RotRNN head, stationary start E||x_0||^2 = 1    E||x_t||^2 = 1                 (x_0 ~ N(0, I/N) per head)
    RotRNN head, first input scaled by 1/||B||_F    E||x_t||^2 = 1 for t >= 1      (then xi as usual)
    LRU mode j, x_0 = 0                             E|x_t,j|^2 = g_j^2 ||B_j||^2 (1 - |lambda_j|^(2t)) / (1 - |lambda_j|^2)

How the states are read. The layers return outputs and the final state; the state at every t comes
from the outputs of a *probe* layer: the measured recurrence (M, theta, gamma_log, B; nu_log, theta_log,
gamma_log, B) read out by an identity (RotRNN: H = heads*N, C = I, D = 0, so y_t = x_t in the original
basis; LRU: H = 2N, C = [I; -i I], D = 0, so y_t = (Re x_t, Im x_t)). The recurrence is the layer's own,
only the read-out is chosen to expose the state; every run also checks that the returned final state
equals the last output (the reference's state convention, RotRNN (B heads N) real, LRU (B N) complex).

Starts. Each sequence is run once, from x_0 = 0. The recurrence is linear, so the state from another
start is that state plus the free response A^t x_0, and A^t = Phi_t comes from the same layer, run with
zero input from the basis states e_k passed as its state (`free_response`):

    stationary start          x_t = x_t^0 + Phi_t x_0,                  x_0 ~ N(0, I/N) per head
    unit first input          x_t = x_t^0 + Phi_(t-1) (x_1' - x_1),     x_1' = x_1 / sqrt(1 - gamma_h^2)

where x_1 = xi_h B_h u_1 is the first output and xi_h ||B_h||_F = sqrt(1 - gamma_h^2), so x_1' = B_h u_1 / ||B_h||_F.
This costs one layer run per sequence for all three starts (the default fits in about 20 s on two cores).

    run_montecarlo(config, progress=None) -> dict (JSON-ready)

torch and jax are imported inside the functions that need them.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import scipy.stats

from linrnn.impls.bundle import Bundle
from linrnn.impls.init import init
from linrnn.impls.specs.lru import LRUConfig
from linrnn.impls.specs.rotrnn import RotRNNConfig
from linrnn.theory.normalisation import MC_STARTS, lru_expected_sq_norm, rotrnn_expected_sq_norm

FRAMEWORKS = ("torch", "jax")
STARTS = MC_STARTS                       # ("zero", "stationary", "unit_first_input")
TABLE_T = (1, 10, 100, 1000, 4096)       # the times of the summary table (those <= T)


@dataclass(frozen=True)
class MonteCarloConfig:
    n_seq: int = 2000                     # sequences per framework (and per start: the starts share the inputs)
    T: int = 4096                         # last time step
    batch: int = 500                      # sequences per layer call (memory: batch x T x H float64)
    gammas: tuple[float, ...] = (0.9, 0.999)      # RotRNN head decays: the ends of the default init range
    d_state: int = 4                      # N per RotRNN head (N = 4: P = expm(M - M^T) does not commute with Theta)
    lru_moduli: tuple[float, ...] = (0.9, 0.999)  # |lambda_j| of the LRU modes, the same profile as the heads
    mode: str = "sequential"              # the layers' mode (both frameworks; the fastest of their modes here on CPU)
    confidence: float = 0.95              # two-sided level of the plotted and tabulated intervals
    family_level: float = 0.01            # family-wise level (Bonferroni) of the agreement tests: one family,
                                          # every stored time of every curve, both frameworks
    points: int = 40                      # log-spaced times kept for the curves (plus TABLE_T)
    seed: int = 0                         # parameters of the probes and every input stream

    def __post_init__(self) -> None:
        if self.n_seq % self.batch:
            raise ValueError(f"n_seq ({self.n_seq}) must be a multiple of batch ({self.batch})")


DEFAULT = MonteCarloConfig()
QUICK = MonteCarloConfig(n_seq=500, T=256, batch=250)


# -- the probe layers ---------------------------------------------------------------------------

def rotrnn_probe(cfg: MonteCarloConfig) -> Bundle:
    """A RotRNN layer with heads of decay `gammas`, read out by C = I, D = 0 (y_t = x_t)."""
    heads, N = len(cfg.gammas), cfg.d_state
    layer = init(RotRNNConfig(d_model=heads * N, d_state=N, heads=heads), cfg.seed)
    return layer.replace(gamma_log=np.log(-np.log(np.asarray(cfg.gammas, dtype=np.float64))),
                         C=np.eye(heads * N), D=np.zeros(heads * N))


def lru_probe(cfg: MonteCarloConfig) -> Bundle:
    """An LRU layer with modes of modulus `lru_moduli` at its initial normalisation, read out as (Re x, Im x)."""
    N = len(cfg.lru_moduli)
    r = np.asarray(cfg.lru_moduli, dtype=np.float64)
    layer = init(LRUConfig(d_model=2 * N, d_state=N), cfg.seed)
    eye, zero = np.eye(N), np.zeros((N, N))
    return layer.replace(nu_log=np.log(-np.log(r)), gamma_log=0.5 * np.log(1.0 - r**2),
                         C_re=np.vstack([eye, zero]), C_im=np.vstack([zero, -eye]), D=np.zeros(2 * N))


def _with_start(sampled):
    """The LRU's moments start from zero only: (moments, mismatch) -> ({"zero": moments}, mismatch)."""
    moments, mismatch = sampled
    return {"zero": moments}, mismatch


def _runner(framework: str, bundle: Bundle, mode: str):
    """run(u (B L H), state) -> (y (B L H), final state) as float64/complex128 NumPy, in `framework`."""
    if framework == "torch":
        import torch

        from linrnn.impls.torch import from_bundle
        module = from_bundle(bundle, torch.float64)

        def run(u, state):
            with torch.no_grad():
                y, x = module(torch.from_numpy(u), mode=mode, state=torch.from_numpy(state))
            return y.numpy(), x.numpy()
        return run
    if framework == "jax":
        from linrnn.impls.jax import float64, from_bundle
        from linrnn.impls.jax.layer import apply
        with float64():                        # JAX's 64-bit mode, scoped to this run's calls
            params = from_bundle(bundle, "float64")

        def run(u, state):
            with float64():
                y, x = apply(params, bundle.config, u, mode, state)
                return np.asarray(y), np.asarray(x)
        return run
    raise ValueError(f"framework must be one of {FRAMEWORKS}, found {framework!r}")


# -- sampling -----------------------------------------------------------------------------------

class _Moments:
    """Running sums of a (times, units) quantity over sequences."""

    def __init__(self, times: int, units: int):
        self.n = 0
        self.s1 = np.zeros((times, units))
        self.s2 = np.zeros((times, units))

    def add(self, sq: np.ndarray) -> None:             # sq (B times units)
        self.n += sq.shape[0]
        self.s1 += sq.sum(axis=0)
        self.s2 += (sq**2).sum(axis=0)

    def mean_se(self) -> tuple[np.ndarray, np.ndarray]:
        mean = self.s1 / self.n
        var = np.maximum(self.s2 - self.n * mean**2, 0.0) / (self.n - 1)
        return mean, np.sqrt(var / self.n)


def _state_mismatch(y: np.ndarray, x_last: np.ndarray) -> float:
    """max |returned final state - last output|: 0 up to rounding when the read-out is the state."""
    return float(np.max(np.abs(x_last.reshape(x_last.shape[0], -1) - y[:, -1])))


def free_response(run, batch: int, heads: int, N: int, T: int) -> tuple[np.ndarray, float]:
    """Phi_t = A_h^t for t = 0..T, from the layer run with zero input from the basis states e_k (every head).

    Uses `batch` sequences (the first N carry e_k, the rest zeros) so that JAX reuses the compiled shape.
    -> Phi (T+1 heads N N) with Phi[t, h, :, k] = A_h^t e_k, and the state mismatch of that run.
    """
    state = np.zeros((batch, heads, N))
    state[np.arange(N), :, np.arange(N)] = 1.0
    y, x_last = run(np.zeros((batch, T, heads * N)), state)
    phi = np.empty((T + 1, heads, N, N))
    phi[0] = np.eye(N)
    phi[1:] = np.transpose(y[:N].reshape(N, T, heads, N), (1, 2, 3, 0))   # (T heads m k)
    return phi, _state_mismatch(y, x_last)


def _sample_rotrnn(cfg: MonteCarloConfig, framework: int, run, probe: Bundle, t: np.ndarray,
                   progress) -> tuple[dict, float]:
    """||x_t^h||^2 at the stored times `t`, from the three starts, over cfg.n_seq sequences.

    One layer run per chunk, from x_0 = 0; the recurrence is linear, so the state from another start is
    the zero-start state plus the free response: x_t = x_t^0 + A^t x_0 (stationary start), and
    x_t = x_t^0 + A^(t-1) (x_1' - x_1) for t >= 1 with x_1' = x_1 / sqrt(1 - gamma_h^2) (first input scaled
    by 1/||B_h||_F instead of xi_h). A^t itself comes from the same layer (`free_response`).
    """
    heads, N, T = len(cfg.gammas), cfg.d_state, cfg.T
    gamma = np.exp(-np.exp(probe.params["gamma_log"]))                  # as the layers compute it
    moments = {start: _Moments(t.size, heads) for start in STARTS}
    chunks = cfg.n_seq // cfg.batch
    progress(0, chunks + 1)
    phi, mismatch = free_response(run, cfg.batch, heads, N, T)          # (T+1 heads N N)
    for c in range(chunks):
        progress(c + 1, chunks + 1)
        rng = np.random.default_rng([cfg.seed, 1, framework, c])
        u = rng.standard_normal((cfg.batch, T, heads * N))               # (B T H): u_1 .. u_T
        x0 = rng.standard_normal((cfg.batch, heads, N)) / np.sqrt(N)     # E||x_0||^2 = 1 per head
        y, x_last = run(u, np.zeros((cfg.batch, heads, N)))              # y_t = x_t from x_0 = 0, t = 1..T
        mismatch = max(mismatch, _state_mismatch(y, x_last))
        zero = y[:, t - 1].reshape(cfg.batch, t.size, heads, N)          # (B times heads N)
        x1 = y[:, 0].reshape(cfg.batch, heads, N)
        jump = x1 * (1.0 / np.sqrt(1.0 - gamma**2) - 1.0)[None, :, None]  # x_1' - x_1
        states = {"zero": zero,
                  "stationary": zero + np.einsum("thmk,bhk->bthm", phi[t], x0),
                  "unit_first_input": zero + np.einsum("thmk,bhk->bthm", phi[t - 1], jump)}
        for start, x in states.items():
            moments[start].add(np.sum(x**2, axis=-1))                    # (B times heads)
    return moments, mismatch


def _sample_lru(cfg: MonteCarloConfig, framework: int, run, t: np.ndarray, progress) -> tuple[_Moments, float]:
    """|x_t,j|^2 at the stored times `t` from x_0 = 0, over cfg.n_seq sequences."""
    N, T = len(cfg.lru_moduli), cfg.T
    moments = _Moments(t.size, N)
    mismatch = 0.0
    chunks = cfg.n_seq // cfg.batch
    for c in range(chunks):
        progress(c, chunks)
        rng = np.random.default_rng([cfg.seed, 2, framework, c])
        u = rng.standard_normal((cfg.batch, T, 2 * N))
        y, x_last = run(u, np.zeros((cfg.batch, N), dtype=np.complex128))
        x = y[..., :N] + 1j * y[..., N:]                                  # (B T N)
        mismatch = max(mismatch, float(np.max(np.abs(x_last - x[:, -1]))))
        moments.add(np.abs(x[:, t - 1]) ** 2)
    return moments, mismatch


# -- summary ------------------------------------------------------------------------------------

def stored_times(cfg: MonteCarloConfig) -> np.ndarray:
    """Log-spaced t in [1, T] (about `points` of them) plus the table's times."""
    log_spaced = np.unique(np.round(np.logspace(0, np.log10(cfg.T), cfg.points)).astype(int))
    return np.union1d(log_spaced, [t for t in TABLE_T if t <= cfg.T])


def _zscores(mean: np.ndarray, se: np.ndarray, target) -> np.ndarray:
    """|mean - target| / se, with se = 0 counting as exact (z = 0 if equal, a huge z otherwise)."""
    diff = np.abs(mean - target)
    live = se > 0
    return np.where(live, diff / np.where(live, se, 1.0), np.where(diff == 0, 0.0, 1e300))


def _curve(model, start, framework, unit, label, t, mean, se, closed, fixed, z_ci, z_family) -> dict:
    """One estimated curve with its closed form, and the verdicts.

    agrees    the closed form lies inside the family-wise band at every stored t
    constant  the fixed point (1 per RotRNN head; g^2 ||B_j||^2 / (1 - |lambda|^2) per LRU mode) lies inside
              the family-wise band at every stored t: "E||x_t||^2 constant for all t" is not rejected
    """
    z = _zscores(mean, se, closed)
    z_fixed = _zscores(mean, se, fixed)
    inside = np.flatnonzero(z_fixed <= z_family)
    return {
        "model": model, "start": start, "framework": framework, "unit": unit, "label": label,
        "mean": mean.tolist(), "ci_low": (mean - z_ci * se).tolist(), "ci_high": (mean + z_ci * se).tolist(),
        "std_error": se.tolist(), "closed": closed.tolist(), "fixed_point": float(fixed),
        "worst_z": float(z.max()), "within_ci": float(np.mean(z <= z_ci)), "agrees": bool(z.max() <= z_family),
        "worst_z_vs_fixed_point": float(z_fixed.max()), "constant": bool(z_fixed.max() <= z_family),
        "first_t_at_fixed_point": int(t[inside[0]]) if inside.size else None,
    }


def run_montecarlo(cfg: MonteCarloConfig = DEFAULT, progress=None) -> dict:
    """Sample both frameworks; return curves at `stored_times`, the table at TABLE_T and the verdicts (JSON-ready)."""
    progress = progress or (lambda done, total, what: None)
    t = stored_times(cfg)
    z_ci = float(scipy.stats.norm.ppf(0.5 + cfg.confidence / 2))
    rot, lru = rotrnn_probe(cfg), lru_probe(cfg)
    gamma = np.exp(-np.exp(rot.params["gamma_log"]))
    r = np.exp(-np.exp(lru.params["nu_log"]))
    g_in = np.exp(lru.params["gamma_log"])
    b_sq = np.sum(lru.params["B_re"] ** 2 + lru.params["B_im"] ** 2, axis=1)
    closed = {("rotrnn", "zero"): rotrnn_expected_sq_norm(gamma[None, :], t[:, None], 0.0),
              ("rotrnn", "stationary"): rotrnn_expected_sq_norm(gamma[None, :], t[:, None], 1.0),
              ("rotrnn", "unit_first_input"): np.ones((t.size, gamma.size)),
              ("lru", "zero"): lru_expected_sq_norm(r[None, :], g_in[None, :], b_sq[None, :], t[:, None])}
    fixed = {"rotrnn": np.ones(gamma.size), "lru": g_in**2 * b_sq / (1.0 - r**2)}
    units = {"rotrnn": gamma.size, "lru": r.size}
    comparisons = t.size * len(FRAMEWORKS) * (len(STARTS) * gamma.size + r.size)
    z_family = float(scipy.stats.norm.ppf(1 - cfg.family_level / (2 * comparisons)))
    curves, mismatch, seconds = [], {}, {}
    jobs = [(m, f) for m in ("rotrnn", "lru") for f in FRAMEWORKS]
    # the two models of the claim (R3), each with its probe layer, its sampler and the label of its units
    probes = {"rotrnn": rot, "lru": lru}
    samplers = {"rotrnn": lambda run, probe, step: _sample_rotrnn(cfg, fw, run, probe, t, step),
                "lru": lambda run, probe, step: _with_start(_sample_lru(cfg, fw, run, t, step))}
    labels = {"rotrnn": lambda unit: f"head {unit}, gamma = {gamma[unit]:.4g}",
              "lru": lambda unit: f"mode {unit}, |lambda| = {r[unit]:.4g}, ||B_j||^2 = {b_sq[unit]:.4g}"}
    for i, (model, framework) in enumerate(jobs):
        start_time = time.perf_counter()
        fw = FRAMEWORKS.index(framework)
        step = lambda done, total: progress(i * 100 + 100 * done // total, 100 * len(jobs),  # noqa: E731
                                            f"Monte Carlo {model} {framework}")
        probe = probes[model]
        run = _runner(framework, probe, cfg.mode)
        moments, mismatch[f"{model}/{framework}"] = samplers[model](run, probe, step)
        for start, mom in moments.items():
            mean, se = mom.mean_se()
            for unit in range(units[model]):
                label = labels[model](unit)
                curves.append(_curve(model, start, framework, unit, label, t, mean[:, unit], se[:, unit],
                                     closed[(model, start)][:, unit], fixed[model][unit], z_ci, z_family))
        seconds[f"{model}/{framework}"] = round(time.perf_counter() - start_time, 2)
    progress(100 * len(jobs), 100 * len(jobs), "Monte Carlo done")
    table = []
    for c in curves:
        for tt in TABLE_T:
            if tt <= cfg.T:
                k = int(np.searchsorted(t, tt))
                table.append({key: c[key] for key in ("model", "start", "framework", "unit", "label")}
                             | {"t": tt, "mean": c["mean"][k], "ci_low": c["ci_low"][k], "ci_high": c["ci_high"][k],
                                "closed": c["closed"][k]})
    return {
        "config": dataclasses.asdict(cfg),
        "t": t.tolist(),
        "z_ci": z_ci,
        "z_family": z_family,
        "comparisons": comparisons,
        "gammas": gamma.tolist(),
        "lru": {"moduli": r.tolist(), "gamma_in": g_in.tolist(), "b_sq": b_sq.tolist()},
        "curves": curves,
        "table": table,
        "agrees": all(c["agrees"] for c in curves),
        "state_mismatch": mismatch,   # max |returned final state - last output|: 0 when the read-out is the state
        "seconds": seconds,
    }


# -- the rule (R3) ------------------------------------------------------------------------------

def settle_r3_montecarlo(data: dict) -> list:
    """R3 by Monte Carlo (the theory section's `r3` rows): E||x_t||^2 = 1 at every stored t from each start, in both
    frameworks; verified from every start, contradicted (in part) from some, inconclusive where a curve disagrees
    with its closed form."""
    from linrnn.experiments.decide.evidence import Part

    rows = {r["start"]: r for r in data["r3"]}
    mc = data["montecarlo"]["config"]
    holds = [s for s, r in rows.items() if r["constant"]]
    text = ("E||x_t||^2 = 1 at every stored t (1 inside the family-wise band), torch and JAX layers: "
            + "; ".join(f"from {s}: {'holds' if r['constant'] else 'does not hold'}" for s, r in rows.items())
            + ("; every curve agrees with its closed form" if all(r["agrees"] for r in rows.values())
               else "; some curves disagree with their closed forms"))
    power = None
    if not all(r["agrees"] for r in rows.values()):
        verdict = "inconclusive"
        power = {"seeds_per_arm": None, "cpu_hours": None, "assumption": "Monte Carlo curves that agree with their "
                 "closed forms (more sequences: the full `linrnn report --out DIR` runs 2,000 per framework)"}
    elif len(holds) == len(rows):
        verdict = "verified"
    else:
        verdict = "contradicted (in part)" if holds else "contradicted"
    return [Part("Monte Carlo (theory)", verdict, text,
                 f"{mc['n_seq']} sequences per framework, t up to {mc['T']}, float64", test="numeric",
                 scale=f"Monte Carlo, {mc['n_seq']} sequences, t <= {mc['T']}", power=power)]

"""What a stream of tokens through a JAX step does, read from its jaxpr token by token (claim D9's structure check).

    step = JaxStep(fn)                    # fn(params, u_t, state) -> (y_t, state), jitted once for every stream
    stream = JaxStream(step, params, u)   # u (B T+1 H): token 0 makes the state (state None), 1..T are read
    counts = count_stream(make, T)        # per token t = 1..T: the primitives the program runs, their elements
    read_jaxpr(jax.make_jaxpr(fn)(...))   # one program: {"ops", "elements", "loops", "unreadable"}

The program a token runs is the jaxpr of the step at that token's arguments (the program `jax.jit` compiles for
them: one per distinct shape, dtype and weak type). Its work is counted equation by equation, every loop's body
multiplied by its trip count, nested loops multiplied through (XLA's cost analysis counts a loop body once, so a
loop of t iterations looks like one). `ops`: primitive applications; `elements`: the elements they write.

- `scan` (and `fori_loop` with Python-int bounds, which JAX lowers to one): the body times its `length`.
- `while` (`while_loop`, and `fori_loop` with bounds that are arrays, such as a counter kept in the state): its trip
  count is decided at run time, so the program is **unreadable**; its body is counted once and the reason names
  the loop's source line.
- `cond`: the most expensive branch (an upper bound of what one call runs); `custom_linear_solve`: its solve.
- a host callback (`pure_callback`, `io_callback`, `jax.debug.print`): Python work outside the program, unreadable.
- `jit` and the other calls that run their sub-program once: counted inside; any other primitive with a
  sub-program runs it a number of times this reading does not know: unreadable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import jax

CALLED_ONCE = ("jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
               "custom_vjp_call_jaxpr", "remat", "checkpoint", "custom_lin")


class JaxStep:
    """A step function `fn(params, u_t, state) -> (y_t, state)` and its one jitted version."""

    def __init__(self, fn: Callable):
        self.fn, self.jitted = fn, jax.jit(fn)


class JaxStream:
    """A stream through a `JaxStep`: each token one synchronised call of the jitted step, the state kept."""

    def __init__(self, step: JaxStep, params, u, state=None):
        self.step, self.params, self.u, self.state = step, params, u, state      # u (B T+1 H)

    def advance(self, t: int) -> None:
        _, self.state = self.step.jitted(self.params, self.u[:, t], self.state)
        jax.block_until_ready(self.state)

    def jaxpr(self, t: int):
        """The program token t runs from the current state."""
        return jax.make_jaxpr(self.step.fn)(self.params, self.u[:, t], self.state)

    def signature(self, t: int):
        """What selects the compiled program: the arguments' tree, shapes, dtypes and weak types."""
        leaves, tree = jax.tree_util.tree_flatten((self.params, self.u[:, t], self.state))
        return tree, tuple(jax.typeof(x) for x in leaves)


@dataclass
class Reading:
    ops: int = 0
    elements: int = 0
    loops: list[dict] = field(default_factory=list)       # {"primitive", "length", "trips", "where"}
    unreadable: list[str] = field(default_factory=list)

    def add(self, other: "Reading") -> None:
        self.ops += other.ops
        self.elements += other.elements
        self.loops += other.loops
        self.unreadable += other.unreadable


def _where(eqn) -> str:
    """The user's source line of an equation ("inside JAX" for one that only JAX's own code made)."""
    try:
        from jax._src import source_info_util       # private: the source line is a courtesy, not the reading
        return source_info_util.summarize(eqn.source_info) or "inside JAX"
    except Exception:   # noqa: BLE001  (any failure: the reading stands without the line)
        return "an unknown line"


def _subprograms(params: dict) -> list:
    """The jaxprs among an equation's parameters (a ClosedJaxpr's inner jaxpr, alone or in a tuple)."""
    out = []
    for value in params.values():
        for v in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(v, "jaxpr", v)
            if hasattr(inner, "eqns"):
                out.append(inner)
    return out


def _written(eqn) -> int:
    return sum(math.prod(getattr(v.aval, "shape", ())) for v in eqn.outvars)


def _costliest(branches: list[Reading]) -> Reading:
    """The costliest branch's counts with every branch's loops and unreadable parts (any branch may run)."""
    costliest = max(branches, key=lambda r: (r.elements, r.ops))
    return Reading(costliest.ops, costliest.elements, [x for r in branches for x in r.loops],
                   [x for r in branches for x in r.unreadable])


def _read(jaxpr, times: int) -> Reading:
    """The work of `jaxpr` run `times` times."""
    out = Reading()
    for eqn in jaxpr.eqns:
        name, subs = eqn.primitive.name, _subprograms(eqn.params)
        if name == "scan":
            length = int(eqn.params["length"])
            out.loops.append({"primitive": "scan", "length": length, "trips": times * length, "where": _where(eqn)})
            out.add(_read(subs[0], times * length))
        elif name == "while":
            out.loops.append({"primitive": "while", "length": None, "trips": None, "where": _where(eqn)})
            out.unreadable.append(f"a while loop at {_where(eqn)}: its trip count is decided at run time")
            for sub in subs:
                out.add(_read(sub, times))
        elif name == "cond":
            out.add(_costliest([_read(sub, times) for sub in subs]))
        elif name == "custom_linear_solve":       # runs its solve once (matvec and the transposes: derivatives)
            out.add(_read(eqn.params["jaxprs"].solve.jaxpr, times))
        elif "callback" in name:
            out.unreadable.append(f"a host callback ({name}) at {_where(eqn)}: Python work outside the program")
            out.ops, out.elements = out.ops + times, out.elements + times * _written(eqn)
        elif subs and name not in CALLED_ONCE:
            out.unreadable.append(f"{name} at {_where(eqn)}: runs a sub-program a number of times this reading "
                                  "does not know")
            for sub in subs:
                out.add(_read(sub, times))
        elif subs:
            for sub in subs:
                out.add(_read(sub, times))
        else:
            out.ops, out.elements = out.ops + times, out.elements + times * _written(eqn)
    return out


def read_jaxpr(closed) -> dict:
    """One program's work: {"ops", "elements", "loops", "unreadable"} (`closed`: a ClosedJaxpr or a Jaxpr)."""
    r = _read(getattr(closed, "jaxpr", closed), 1)
    return {"ops": r.ops, "elements": r.elements, "loops": r.loops, "unreadable": r.unreadable}


def count_stream(make: Callable[[], JaxStream], tokens: int) -> dict:
    """A fresh stream's tokens 1..`tokens` read one by one (token 0, which makes the state, is not):
    {"reading", "positions", "ops", "elements", "state_bytes" (lists, one entry per position), "flops" (None),
    "state_shapes" (every distinct list of the state's shapes seen), "programs" (distinct programs the tokens ran),
    "loops", "unreadable" (every program's, once each)}."""
    stream = make()
    stream.advance(0)
    programs: dict = {}
    out = {"reading": "jaxpr of the program each token runs, loops multiplied through", "positions": [], "ops": [],
           "flops": None, "elements": [], "state_bytes": [], "state_shapes": [], "programs": 0, "loops": [],
           "unreadable": []}
    for t in range(1, tokens + 1):
        key = stream.signature(t)
        if key not in programs:
            programs[key] = read_jaxpr(stream.jaxpr(t))
            out["loops"] += [x for x in programs[key]["loops"] if x not in out["loops"]]
            out["unreadable"] += [x for x in programs[key]["unreadable"] if x not in out["unreadable"]]
        stream.advance(t)
        leaves = jax.tree_util.tree_leaves(stream.state)
        shapes = [list(x.shape) for x in leaves]
        out["positions"].append(t)
        out["ops"].append(programs[key]["ops"])
        out["elements"].append(programs[key]["elements"])
        out["state_bytes"].append(sum(int(x.size) * x.dtype.itemsize for x in leaves))
        if shapes not in out["state_shapes"]:
            out["state_shapes"].append(shapes)
    out["programs"] = len(programs)
    return out

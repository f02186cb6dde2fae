"""What a trivial predictor may read of a ListOps tree (`linrnn.tasks.trivial`): its shape and what is local.

Token ids are a loader's (`VOCABULARY` of `tasks/data/listops.py` or `listops_subtrees.py`: the same operator,
digit and `X` names). Each reader walks one example's tokens once with a stack of the open operators:

    closing_operators   at each `]` the operator it closes (a parse that reads no operand)
    local_values        at each `]` the operator applied to its own digit operands only, every nested subtree's
                        value unknown: what can be evaluated without reading beyond one operator's arguments
    root_features       ListOps: the root operator one-hot, x the counts and presence of each digit among the root's
                        own (depth-1) digit operands, x its local value, and x its number of subtree operands
"""

from __future__ import annotations

import numpy as np

from linrnn.tasks.data.generate.listops import OPERATORS, apply

DIGITS = 10
UNKNOWN = -1          # the local value of an operator with no digit operand of its own


def token_ids(vocabulary: dict[str, int]) -> tuple[dict[int, str], int, dict[int, int]]:
    """(operator id -> name, the closing bracket's id, digit id -> value) of a loader's vocabulary."""
    operators = {vocabulary[name]: name for name in OPERATORS}
    digits = {vocabulary[str(d)]: d for d in range(DIGITS)}
    return operators, vocabulary["X"], digits


def _walk(tokens: np.ndarray, vocabulary: dict[str, int]):
    """Yields (position, operator name, its own digit operands, its subtree operands, depth) at each `]` that closes
    an operator (depth 1: the root)."""
    operators, closing, digits = token_ids(vocabulary)
    stack: list[list] = []          # [operator, digits, subtree operands]
    for i, token in enumerate(np.asarray(tokens).ravel().tolist()):
        if token in operators:
            if stack:
                stack[-1][2] += 1
            stack.append([operators[token], [], 0])
        elif token == closing and stack:
            op, own, subtrees = stack.pop()
            yield i, op, own, subtrees, len(stack) + 1
        elif token in digits and stack:
            stack[-1][1].append(digits[token])


def closing_operators(tokens: np.ndarray, vocabulary: dict[str, int]) -> np.ndarray:
    """(L,) at each `]` the id of the operator it closes; elsewhere the token itself."""
    out = np.asarray(tokens, dtype=np.int64).ravel().copy()
    for i, op, _, _, _ in _walk(tokens, vocabulary):
        out[i] = vocabulary[op]
    return out


def local_values(tokens: np.ndarray, vocabulary: dict[str, int]) -> np.ndarray:
    """(L, 4) int64 at each `]`: (operator index in OPERATORS, its value on its own digit operands or UNKNOWN, the
    number of those digits, the number of its subtree operands); -1 elsewhere."""
    out = np.full((np.asarray(tokens).size, 4), -1, dtype=np.int64)
    for i, op, own, subtrees, _ in _walk(tokens, vocabulary):
        out[i] = (OPERATORS.index(op), apply(op, own) if own else UNKNOWN, len(own), subtrees)
    return out


def root_features(tokens: np.ndarray, vocabulary: dict[str, int]) -> np.ndarray:
    """(4 + 4 x (2 x 10 + 11 + 1),) the root operator one-hot and its outer products with its own digits' counts and
    presence, its local value one-hot (UNKNOWN the 11th) and its number of subtree operands."""
    root = next((w for w in _walk(tokens, vocabulary) if w[4] == 1), None)
    op = np.zeros(len(OPERATORS))
    if root is None:                # not a tree: no feature
        return np.zeros(len(OPERATORS) * (1 + 2 * DIGITS + DIGITS + 2))
    _, name, own, subtrees, _ = root
    op[OPERATORS.index(name)] = 1.0
    counts = np.bincount(np.asarray(own, dtype=np.int64), minlength=DIGITS).astype(np.float64)
    value = np.zeros(DIGITS + 1)
    value[apply(name, own) if own else DIGITS] = 1.0
    return np.concatenate([op, np.outer(op, counts).ravel(), np.outer(op, counts > 0).ravel(),
                           np.outer(op, value).ravel(), op * subtrees])

"""tinyssm: an LRU (Orvieto et al. 2023) and an S5 (Smith et al. 2023) layer in plain PyTorch."""

from tinyssm.lru import LRU
from tinyssm.s5 import S5

__all__ = ["LRU", "S5"]

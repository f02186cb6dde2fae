"""Experiments: measurements that run the implementations (Monte Carlo of the state norm, training studies)."""

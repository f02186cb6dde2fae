"""conftest.py's settings for the default run reach the processes that run the tests.

XLA's optimisation level 0 and the run's shared JAX compilation cache are environment variables the
controller sets before its workers start; a worker (or `-n 0`'s one process) that imported JAX before
they were set would silently run without them.
"""

import os
import pathlib

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def test_xla_compiles_at_the_test_level():
    assert "--xla_backend_optimization_level=" in os.environ["XLA_FLAGS"]


def test_jax_compiles_into_the_runs_shared_cache():
    folder = pathlib.Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    assert jax.config.jax_compilation_cache_dir == str(folder) and folder.is_dir()
    before = set(folder.iterdir())

    @jax.jit
    def program(x):                      # a program no other test compiles: its entry is new
        return jnp.cumsum(jnp.sin(x) * 1.2345678) - 0.0271828

    program(jnp.arange(7.0)).block_until_ready()
    assert set(folder.iterdir()) - before, f"compiling a new program wrote nothing into {folder}"


def root_conftest(config):
    path = pathlib.Path(__file__).resolve().parents[1] / "conftest.py"
    return next(p for p in config.pluginmanager.get_plugins()
                if getattr(p, "__file__", None) and pathlib.Path(p.__file__).resolve() == path)


def test_xla_compiles_with_the_elemental_fusion_emitters_and_unsplit_where_jaxlib_takes_the_flags(request):
    conftest = root_conftest(request.config)
    for flag in (conftest.XLA_TEST_EMITTERS, conftest.XLA_TEST_SPLIT):
        if conftest.xla_accepts(flag):                          # this jaxlib knows the flag: the run must set it
            assert flag.split("=")[0] + "=" in os.environ["XLA_FLAGS"]       # (or the user did, to any value)
    assert not conftest.xla_accepts("--xla_cpu_no_such_flag_linrnn=true")   # an unknown flag: left out, no abort

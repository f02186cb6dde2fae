"""Batches: a pure function of (seed, epoch, step); sharding; padding, lengths and masks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from linrnn.base.errors import LinrnnError
from linrnn.tasks.data import image, listops, retrieval
from linrnn.tasks.data.batches import Batches, assemble


@pytest.fixture
def train(tmp_path, cache_env, writers):
    writers.listops(tmp_path)
    return listops.load(tmp_path, "train")


def test_a_batch_depends_only_on_seed_epoch_and_step(train):
    a = Batches(train, 8, seed=3)
    b = Batches(train, 8, seed=3)
    for epoch, step in ((0, 0), (2, 4), (1, 3)):  # any order, fresh objects: same batch
        x, y = a.batch(epoch, step), b.batch(epoch, step)
        np.testing.assert_array_equal(x.indices, y.indices)
        np.testing.assert_array_equal(x.inputs["tokens"], y.inputs["tokens"])
    assert not np.array_equal(a.batch(0, 0).indices, a.batch(1, 0).indices)  # a new order per epoch
    assert not np.array_equal(a.batch(0, 0).indices, Batches(train, 8, seed=4).batch(0, 0).indices)
    order = np.random.default_rng([3, 2]).permutation(len(train))
    np.testing.assert_array_equal(a.batch(2, 4).indices, order[32:40])


def test_an_epoch_visits_every_example_once(train):
    batches = Batches(train, 8, seed=0, drop_last=False, shuffle=True)
    seen = np.concatenate([b.indices for b in batches.epoch(5)])
    assert sorted(seen.tolist()) == list(range(len(train)))
    assert Batches(train, 7).steps_per_epoch() == len(train) // 7
    assert Batches(train, 7, drop_last=False).steps_per_epoch() == -(-len(train) // 7)
    with pytest.raises(LinrnnError, match="step 5 out of range"):
        Batches(train, 8).batch(0, 5)


def test_ranks_together_see_exactly_the_single_process_batch(train):
    whole = Batches(train, 12, seed=1).batch(0, 2)
    parts = [Batches(train, 12, seed=1, rank=r, world_size=3).batch(0, 2) for r in range(3)]
    np.testing.assert_array_equal(np.concatenate([p.indices for p in parts]), whole.indices)
    assert all(len(p.indices) == 4 for p in parts)
    with pytest.raises(LinrnnError, match="rank must lie"):
        Batches(train, 12, rank=3, world_size=3)


def test_lengths_and_mask_are_true_and_padding_is_the_pad_id(train):
    batch = Batches(train, 10, seed=0).batch(0, 1)
    tokens, mask, lengths = batch.inputs["tokens"], batch.mask["tokens"], batch.lengths["tokens"]
    assert tokens.dtype == np.int32 and tokens.shape == (10, int(lengths.max()))
    for row, i in enumerate(batch.indices):
        expected = np.asarray(train.row("tokens", i))
        assert lengths[row] == len(expected) and expected[-1] == listops.EOS
        np.testing.assert_array_equal(tokens[row, :lengths[row]], expected)
        assert mask[row].sum() == lengths[row] and mask[row, :lengths[row]].all()
        assert (tokens[row, lengths[row]:] == listops.PAD).all()
    np.testing.assert_array_equal(batch.labels, np.asarray(train.arrays["labels"])[batch.indices])


def test_changing_the_pad_value_changes_nothing_a_masked_consumer_sees(train):
    plain = Batches(train, 10, seed=2).batch(1, 2)
    odd = Batches(train, 10, seed=2, pads=(("tokens", 17),)).batch(1, 2)
    assert not np.array_equal(plain.inputs["tokens"], odd.inputs["tokens"])  # the padding did change
    one_hot = lambda t: np.eye(18)[np.minimum(t, 17)]  # noqa: E731 - a model's embedding
    def masked_mean(b):  # a masked mean-pool, as S5's classifier
        m = b.mask["tokens"][..., None]
        return (one_hot(b.inputs["tokens"]) * m).sum(1) / m.sum(1)
    np.testing.assert_array_equal(masked_mean(plain), masked_mean(odd))


def test_fixed_length_pads_to_L_and_refuses_a_shorter_one(train):
    batch = Batches(train, 4, length=64).batch(0, 0)
    assert batch.inputs["tokens"].shape == (4, 64) and batch.mask["tokens"].shape == (4, 64)
    with pytest.raises(LinrnnError, match="shorter than the batch's longest"):
        Batches(train, 4, length=2).batch(0, 0)


def test_two_documents_share_one_padded_length(tmp_path, cache_env, writers):
    writers.aan(tmp_path)
    split = retrieval.load(tmp_path, "train")
    batch = Batches(split, 4, seed=0).batch(0, 0)
    assert batch.inputs["tokens1"].shape == batch.inputs["tokens2"].shape
    longest = max(batch.lengths["tokens1"].max(), batch.lengths["tokens2"].max())
    assert batch.inputs["tokens1"].shape[1] == longest


def test_dense_pixels_come_in_the_batch_order(tmp_path, cache_env, writers):
    writers.cifar_bin(tmp_path / "cifar-10-batches-bin")
    split = image.load(tmp_path, "test")
    indices = np.array([7, 2, 11, 0])
    batch = assemble(split, indices)
    np.testing.assert_array_equal(batch.inputs["pixels"], np.asarray(split.arrays["pixels"])[indices])
    assert batch.mask["pixels"].all() and (batch.lengths["pixels"] == 1024).all()
    assert dataclasses.is_dataclass(batch)

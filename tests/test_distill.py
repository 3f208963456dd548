"""Notebook 08's given code (specdec/distill.py) and its shipped drafts (specdec/weights/distilled/)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from solutions.reference import a08_raising_alpha as ref
from specdec import distill
from specdec.model import WEIGHTS, load


@pytest.fixture(scope="module")
def pair():
    return load("target", "cpu"), load("draft", "cpu")


def test_corpus_windows_are_seeded_and_the_held_out_split_is_other_code():
    a = distill.corpus_windows(4, 32, torch.Generator().manual_seed(1))
    b = distill.corpus_windows(4, 32, torch.Generator().manual_seed(1))
    assert a.shape == (4, 32) and a.dtype == torch.long and torch.equal(a, b)
    assert int(a.min()) >= 0 and int(a.max()) < 128  # ASCII source
    held = distill.held_out(4, 32)
    assert torch.equal(held, distill.held_out(4, 32)) and not torch.equal(held, a)


def test_fine_tune_is_seeded_and_trains_only_the_draft(pair):
    target, _ = pair
    before = {k: v.clone() for k, v in target.state_dict().items()}
    runs = []
    for _ in range(2):
        draft = load("draft", "cpu")
        losses = distill.fine_tune(draft, target, ref.total_variation, steps=2, batch=2, seq=16)
        runs.append((losses, draft.state_dict()))
    assert runs[0][0] == runs[1][0] and all(math.isfinite(x) for x in runs[0][0])
    assert all(torch.equal(runs[0][1][k], runs[1][1][k]) for k in runs[0][1])
    shipped = load("draft", "cpu").state_dict()
    assert any(not torch.equal(shipped[k], runs[0][1][k]) for k in shipped)  # the draft moved
    assert all(torch.equal(before[k], v) for k, v in target.state_dict().items())  # the target did not
    assert not any(p.requires_grad for p in target.parameters())


def test_on_policy_fine_tuning_feeds_the_loss_the_rows_of_the_draft_s_tokens(pair):
    """The loss sees (target_logits, draft_logits, mask) of one shape: the n_new rows that predict the
    draft's tokens, the target's from collect and the draft's from the same positions."""
    target, _ = pair
    seen = []

    def loss(t, d, mask, temperature):
        seen.append((t.shape, d.shape, mask.shape, bool(mask.all()), temperature))
        return ref.forward_kl(t, d, mask, temperature)

    distill.fine_tune(load("draft", "cpu"), target, loss, source="on_policy", collect=ref.on_policy_batch,
                      steps=1, batch=3, seq=24)
    n_new = 24 + 1 - distill.PROMPT
    assert seen == [((3, n_new, 256), (3, n_new, 256), (3, n_new), True, distill.TEMPERATURE)]
    with pytest.raises(ValueError):
        distill.fine_tune(load("draft", "cpu"), target, loss, source="on_policy", steps=1)


def test_acceptance_rates_is_the_notebook_s_expected_acceptance(pair):
    target, draft = pair
    ids = distill.held_out(4, 48)
    rates = distill.acceptance_rates(target, draft, ids)
    with torch.no_grad():
        t, d = target(ids), draft(ids)
    mask = torch.ones(ids.shape, dtype=torch.bool)
    assert abs(rates["alpha_T1"] - float(ref.expected_acceptance(t, d, mask))) < 1e-5
    assert rates["alpha_T0"] == pytest.approx((t.argmax(-1) == d.argmax(-1)).float().mean().item())


def test_every_distilled_draft_is_shipped_with_its_card_and_measures_as_the_card_says(pair):
    """Eight drafts, one per loss and data source, each different from the shipped draft, and alpha
    on held-out code as its training card recorded it (the measurement is deterministic on a CPU)."""
    target, _ = pair
    contexts = distill.held_out()
    with torch.no_grad():
        on_contexts = target(contexts)
    shipped = load("draft", "cpu").state_dict()
    assert set(distill.distilled("cpu")) == set(distill.DISTILLED)
    for (loss, source), name in distill.DISTILLED.items():
        card = json.loads((WEIGHTS / f"{name}.json").read_text())
        assert (card["loss"], card["source"]) == (loss, source)
        assert card["steps"] > 0 and card["seed"] == distill.SEED and card["start"].startswith("the shipped draft")
        draft = load(name, "cpu")
        assert any(not torch.equal(shipped[k].float(), v.float()) for k, v in draft.state_dict().items()), name
        rates = distill.acceptance_rates(target, draft, contexts, on_contexts)
        for key, value in card["held_out_after"].items():
            assert abs(rates[key] - value) < 2e-3, (name, key, rates[key], value)


def test_measure_reports_each_draft_s_alpha_cost_and_speedup(pair):
    target, draft = pair
    table = distill.measure(target, {"shipped": draft}, [distill.held_out(1, 24)[0].tolist()], n_new=8, K=2, repeats=1)
    row = table["shipped"]
    assert set(row) == {"alpha_T1", "alpha_T0", "c", "speedup_T1", "speedup_T0", "engine_alpha_T1", "engine_alpha_T0"}
    assert 0 < row["alpha_T1"] < 1 and 0 < row["alpha_T0"] < 1 and row["c"] > 0
    assert row["speedup_T1"] > 0 and row["speedup_T0"] > 0
    assert 0 <= row["engine_alpha_T1"] <= 1 and 0 <= row["engine_alpha_T0"] <= 1


def test_the_corpus_cache_appears_whole_train_bin_last(tmp_path, monkeypatch):
    """A fresh clone's test workers (or two notebooks) may build the corpus cache at the same moment, and a
    reader takes train.bin's existence as "the cache is there": so every file is written under a private
    name and renamed into place whole, train.bin last (a worker once read zeros past a half-written file)."""
    import os

    from specdec import train

    renamed, real_replace = [], os.replace

    def recording_replace(src, dst):
        assert Path(src).name.startswith(".")  # written under a private name first
        renamed.append((Path(src).parent == Path(dst).parent, Path(dst).name, Path(src).stat().st_size))
        real_replace(src, dst)

    monkeypatch.setattr(train.os, "replace", recording_replace)
    data, held = train.build_corpus(tmp_path / "corpus")
    assert [name for _, name, _ in renamed] == ["source.txt", "val.bin", "train.bin"]
    assert all(same_folder for same_folder, _, _ in renamed)  # a rename within one folder is atomic
    sizes = {name: size for _, name, size in renamed}
    assert sizes["train.bin"] == len(data) > 1_000_000 and sizes["val.bin"] == len(held) > 10_000
    assert sorted(p.name for p in (tmp_path / "corpus").iterdir()) == ["source.txt", "train.bin", "val.bin"]

"""The shipped model pair: loads on CPU, the key/value cache gives the plain call's logits
across appends and rollbacks, and the weights stay within the size budget."""
import pytest
import torch

from specdec.model import WEIGHTS, decode, encode, load

PROMPT = "def read_config(path):\n    with open(path) as f:\n        "


@pytest.fixture(scope="module", params=["target", "draft"])
def model(request):
    torch.manual_seed(0)
    return load(request.param, device="cpu")


def test_plain_call_shapes(model):
    ids = encode(PROMPT)[None]
    logits = model(ids)
    assert logits.shape == (1, ids.shape[1], 256) and logits.dtype == torch.float32


@torch.no_grad()
def test_hidden_states_are_part_of_the_public_call(model):
    """model(ids, hidden=True) and extend(..., hidden=True) give the same logits and the states
    the output layer reads (what notebook 05's heads use): logits == model.head(hidden)."""
    ids = encode(PROMPT)[None]
    logits, h = model(ids, hidden=True)
    assert h.shape == (1, ids.shape[1], model.config.d_model)
    assert torch.equal(logits, model(ids)) and torch.allclose(model.head(h), logits, atol=1e-6)
    cached_logits, cached_h = model.extend(ids, model.new_cache(), hidden=True)
    assert close(cached_logits, logits) and close(cached_h, h)


def close(a, b):
    """Equal up to float32 summation order: the cached call multiplies matrices of other shapes
    than the plain call, so BLAS may sum in another order (CI saw 1e-5-sized differences on
    logits of size 10 with 1e-5 tolerances). A stale or missing cache entry moves logits by far
    more than 1e-3, so this still catches every cache mistake."""
    return torch.allclose(a, b, atol=1e-4, rtol=1e-4)


@torch.no_grad()
def test_cache_matches_plain_call_across_appends_and_rollbacks(model):
    gen = torch.Generator().manual_seed(0)
    ids = torch.cat([encode(PROMPT), torch.randint(32, 127, (120,), generator=gen)])[None]
    full = model(ids)
    cache = model.new_cache()
    pieces = [(0, 40), (40, 41), (41, 50)]        # a prompt, one token, a block of drafts
    for a, b in pieces:
        assert close(model.extend(ids[:, a:b], cache), full[:, a:b])
    cache.rollback(44)                             # reject the last 6 drafts
    assert cache.length == 44
    assert close(model.extend(ids[:, 44:60], cache), full[:, 44:60])
    cache.rollback(60)
    for t in range(60, 70):                        # token by token
        assert close(model.extend(ids[:, t:t + 1], cache), full[:, t:t + 1])
    # A rollback followed by DIFFERENT tokens: the stale entries must be overwritten, not reused.
    other = ids.clone()
    other[0, 65:75] = torch.randint(32, 127, (10,), generator=gen)
    cache.rollback(65)
    assert close(model.extend(other[:, 65:75], cache), model(other)[:, 65:75])


def test_greedy_sample_is_python_like():
    target = load("target", device="cpu")
    ids = encode(PROMPT)[None]
    with torch.no_grad():
        for _ in range(30):
            ids = torch.cat([ids, target(ids)[:, -1:].argmax(-1)], dim=1)
    text = decode(ids[0, len(PROMPT):].tolist())
    assert text.isascii() and any(ch.isalpha() for ch in text)


def test_weights_fit_the_budget():
    """Every shipped weight file, notebook 08's distilled drafts (weights/distilled/) included: 30 MiB
    (25 MiB before notebook 08 added eight 0.6 MB drafts)."""
    total = sum(p.stat().st_size for p in WEIGHTS.rglob("*.pt"))
    assert total <= 30 * 1024 * 1024, total


@torch.no_grad()
def test_every_position_the_model_accepts_was_trained(model):
    """A learned position embedding that training never reached is random: the first shipped
    pair had 512 rows trained on 256-byte windows, and its loss past byte 256 was 3.7 nats
    instead of about 0.8. Now max_len is the training window, and the last quarter of a full
    window predicts code about as well as the third quarter does."""
    L = model.config.max_len
    assert model.pos.weight.shape[0] == L == 256
    text = b"".join(p.read_bytes() for p in sorted((WEIGHTS.parent).glob("*.py")))
    windows = torch.stack([torch.tensor(list(text[s:s + L + 1])) for s in range(0, 8 * 997, 997)])
    losses = torch.nn.functional.cross_entropy(model(windows[:, :-1]).transpose(1, 2), windows[:, 1:], reduction="none")
    third, last = losses[:, L // 2:3 * L // 4].mean().item(), losses[:, 3 * L // 4:].mean().item()
    assert last < third + 0.5, (third, last)


def test_a_batch_cache_matches_each_sequence_alone_as_rows_grow_and_roll_back_apart(model):
    """extend_batch (issue 34's server batch): rows of different prompt lengths, fed together and
    rolled back by different amounts, give each row the logits its own cache gives, up to float
    rounding (1e-4 on logits of order 10), and the same greedy tokens."""
    gen = torch.Generator().manual_seed(3)
    prompts = [torch.randint(32, 127, (n,), generator=gen) for n in (5, 9, 3, 12)]
    batch, alone = model.new_batch_cache(len(prompts)), [model.new_cache() for _ in prompts]
    for b, prompt in enumerate(prompts):  # each row's prompt on its own
        got = model.extend_batch(prompt.view(1, -1), batch, rows=[b])
        assert torch.allclose(got[0], model.extend(prompt.view(1, -1), alone[b])[0], atol=1e-4)
    for step, back in enumerate([[0, 0, 0, 0], [0, 1, 2, 3], [3, 0, 1, 2], [1, 1, 0, 0]]):
        batch.rollback(batch.lengths - torch.tensor(back))
        for b, n in enumerate(back):
            alone[b].rollback(alone[b].length - n)
        ids = torch.randint(32, 127, (len(prompts), 1 + step), generator=gen)
        got = model.extend_batch(ids, batch)
        for b in range(len(prompts)):
            want = model.extend(ids[b:b + 1], alone[b])[0]
            assert torch.allclose(got[b], want, atol=1e-4), (step, b, (got[b] - want).abs().max())
            assert torch.equal(got[b].argmax(-1), want.argmax(-1))
        assert batch.lengths.tolist() == [c.length for c in alone]
    with pytest.raises(AssertionError):
        batch.rollback(batch.lengths + 1)  # a row cannot grow by rolling back

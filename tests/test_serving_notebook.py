"""What notebook 07's checkers rely on: the reference batch_accept is exact (each row's output
follows the target's distribution), and the greedy prompts of check_batched_generate leave no
near-tie that batched arithmetic could swap."""
from __future__ import annotations

import numpy as np
import torch

from solutions.checks import a07
from solutions.checks._common import counts_match_pmf
from solutions.reference import a07_speculation_in_a_server as ref
from specdec.engine import plain
from specdec.model import load


def test_each_rows_first_token_follows_the_target_whatever_the_other_rows_do():
    """20,000 rows, each with its own p and q drawn from 3 kinds, drafts drawn from q, uniforms
    fresh: the first token each row emits (its first draft if accepted, else its correction) is
    distributed as that row's p_1. Exact binomial tests per kind and token, Bonferroni-corrected:
    a correct rule fails with probability below 1e-6 for a random seed (the seed is fixed)."""
    gen = torch.Generator().manual_seed(20261205)
    V, K, per_kind = 5, 3, 20_000
    kinds = []
    for k in range(3):
        lp, lq = torch.randn(K + 1, V, generator=gen) * 1.5, torch.randn(K, V, generator=gen)
        kinds.append((torch.softmax(lp, -1), torch.softmax(lp[:K] + lq * (0.5 + k), -1)))
    for p1, q1 in kinds:
        p = p1.expand(per_kind, -1, -1).contiguous()
        q = q1.expand(per_kind, -1, -1).contiguous()
        drafts = torch.stack([torch.multinomial(q1[i], per_kind, replacement=True, generator=gen) for i in range(K)], 1)
        u = torch.rand(per_kind, K + 1, generator=gen)
        n, token = ref.batch_accept(p, q, drafts, u)
        first = torch.where(n > 0, drafts[:, 0], token).numpy()
        assert counts_match_pmf(first, np.arange(V), p1[0].double().numpy(), alpha_level=1e-6 / 3)
        # rows that accepted everything emit a bonus token distributed as p_{K+1}
        full = (n == K).numpy()
        assert full.sum() > 100 and counts_match_pmf(token.numpy()[full], np.arange(V), p1[K].double().numpy(),
                                                     alpha_level=1e-6 / 3)


def test_the_greedy_prompts_have_no_near_tie():
    """check_batched_generate compares batched greedy rows with each prompt decoded alone; the target's
    top-two logit gap at every greedy step must dwarf the batch's float rounding (about 1e-5)."""
    target = load("target", "cpu")
    smallest = np.inf
    for a, b in a07.PROMPT_SPANS:
        prompt = a07.encode(a07.TEXT[a:b])
        out = plain(target, prompt, a07.NEW)
        with torch.no_grad():
            logits = target(torch.cat([prompt, out])[None])[0, len(prompt) - 1:len(prompt) - 1 + a07.NEW]
        top = logits.topk(2, -1).values
        smallest = min(smallest, float((top[:, 0] - top[:, 1]).min()))
    assert smallest > 1e-3, smallest


def test_best_K_built_on_a_wrong_goodput_is_sent_to_fix_goodput_first():
    """best_K calls the learner's own goodput: when that goodput has a named mistake, best_K's hint
    names it (and says to fix goodput first), alone or together with a mistake of best_K's own."""
    import pytest

    import tests.answers_07 as answers
    from solutions.checks._common import CheckFailure

    def on_wrong_goodput(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
        rates = [answers.goodput_overhead_per_token(alpha, K, B, target_time, draft_time, overhead, context)
                 for K in range(K_max + 1)]
        return int(np.argmax(rates))

    def also_acceptance_alone(alpha, B, target_time, draft_time, overhead=0.0, K_max=16, context=0):
        return on_wrong_goodput(alpha, 1, target_time, draft_time, overhead, K_max, context)

    for fn in (on_wrong_goodput, also_acceptance_alone):
        with pytest.raises(CheckFailure) as failure:
            a07.check_best_K(fn)
        assert "fix goodput first" in str(failure.value) and "once per step" in str(failure.value)


def test_no_untouched_release_is_flagged_and_a_learners_own_network_code_is():
    """The integrity scan looks at what a learner wrote: every untouched release passes clean (07's
    own cells say "requests per second"), while `import requests` in an answer cell, or a given
    cell that a learner changed, is flagged."""
    from pathlib import Path

    import nbformat

    from coursekit.grading.integrity import given_code, scan
    from coursekit.paths import COURSE, SOURCE, assignments

    for a in assignments():
        release = nbformat.read(COURSE / a / f"{a}.ipynb", as_version=4)
        given = given_code(SOURCE / a / f"{a}.ipynb")
        assert scan(release, given) == [] and scan(release) == [], a
    a = "07_speculation_in_a_server"
    nb = nbformat.read(COURSE / a / f"{a}.ipynb", as_version=4)
    given = given_code(Path(SOURCE / a / f"{a}.ipynb"))
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    answer.source = "import requests\n" + answer.source
    assert "opens a network connection" in scan(nb, given)
    answer.source = answer.source.replace("import requests\n", "")
    demo = next(c for c in nb.cells if "demo" in c.metadata.get("tags", []))
    demo.source += "\nimport subprocess"
    assert "starts processes" in scan(nb, given)


def test_best_K_is_graded_by_its_value_and_the_visible_test_gives_the_type_advice():
    """A best_K that returns numpy's int64 with the right value gets the hidden test's points; a float does not."""
    import pytest

    import tests.answers_07 as answers
    from solutions.checks._common import CheckFailure

    a07.check_best_K(answers.best_K_numpy_integer)
    with pytest.raises(CheckFailure, match="whole number"):
        a07.check_best_K(lambda *args, **kw: float(answers.best_K_numpy_integer(*args, **kw)))


def test_the_toy_batch_cache_behaves_like_the_shipped_one():
    """check_batched_generate hands toy pairs to the learner's loop: their batch cache takes the same
    calls as the shipped model's (rows, empty ids, per-row rollback, lengths on the model's device) and
    records what each row held and was fed."""
    import pytest

    from specdec.toy import text_pair

    toy, shipped = text_pair("cpu")[0], load("target", "cpu")
    for model in (toy, shipped):
        cache = model.new_batch_cache(3)
        assert model.extend_batch(torch.tensor([[1, 2, 3]]), cache, rows=[1]).shape == (1, 3, model.config.vocab)
        assert model.extend_batch(torch.tensor([[]]), cache, rows=torch.tensor([0])).shape == (1, 0, model.config.vocab)
        assert model.extend_batch(torch.tensor([[4], [5], [6]]), cache).shape == (3, 1, model.config.vocab)
        assert cache.lengths.tolist() == [1, 4, 1] and cache.lengths.dtype == torch.long and cache.batch == 3
        cache.rollback(cache.lengths - torch.tensor([1, 2, 0]))
        assert cache.lengths.tolist() == [0, 2, 1]
        with pytest.raises(AssertionError):
            cache.rollback([0, 3, 1])  # longer than what row 1 holds
    fed = [e for e in toy.events if e["op"] == "extend_batch"]
    assert [(e["rows"], e["before"], e["fed"]) for e in fed] == [
        ([1], [[]], [[1, 2, 3]]), ([0, 1, 2], [[], [1, 2, 3], []], [[4], [5], [6]])]


def test_the_sampled_check_is_sized_for_the_mistakes_it_names():
    """The sizes DIST_CASES states: at T = 0.5 on the close pair, 3,000 rows make the first token's exact
    test (4 cells, Bonferroni at 1e-7) pass a loop whose q comes from the raw logits with probability
    below 4e-7, and one with raw drafts or argmax drafts below 1e-15 (exact binomial arithmetic)."""
    from scipy import stats

    from specdec.toy import toy_pair

    T, close, K, rows = a07.DIST_CASES[0]
    target, draft = toy_pair("cpu", close=close)
    p, q, q_raw = target.probs(T)[3].numpy(), draft.probs(T)[3].numpy(), draft.probs(1.0)[3].numpy()

    def passes(law):
        """P(every cell's exact test passes) <= the smallest cell's, under `law`."""
        chance = 1.0
        for p_cell, w_cell in zip(p, law):
            sd = np.sqrt(rows * p_cell * (1 - p_cell))  # the kept counts lie within 7 sd of the mean
            ks = range(max(0, int(rows * p_cell - 10 * sd)), min(rows, int(rows * p_cell + 10 * sd)) + 1)
            kept = [k for k in ks if stats.binomtest(k, rows, p_cell).pvalue >= a07.DIST_LEVEL / 4]
            assert 0 < min(kept) and max(kept) < rows and min(kept) > ks[0] and max(kept) < ks[-1]
            chance = min(chance, stats.binom.cdf(max(kept), rows, w_cell) - stats.binom.cdf(min(kept) - 1, rows, w_cell))
        return chance

    assert passes(a07._first_law(p, q, q_raw)) < 4e-7
    assert passes(a07._first_law(p, q_raw, q)) < 1e-15
    assert passes(a07._first_law(p, np.eye(4)[int(np.argmax(q))], q)) < 1e-15

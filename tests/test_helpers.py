"""The helper package the notebooks import: the explorer reacts to its sliders, the plots draw
with the reference functions, and the formulas reproduce the published numbers."""
import matplotlib

matplotlib.use("Agg")

import inspect  # noqa: E402

import nbformat  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from coursekit.paths import COURSE  # noqa: E402

from solutions.reference import a01_acceptance_chain as ref01  # noqa: E402
from solutions.reference import a02_cost_and_speedup as ref02  # noqa: E402
from solutions.reference import a03_rejection_sampling as ref03  # noqa: E402
from specdec import plots  # noqa: E402
from specdec.widgets import SpeedupExplorer, speedup_explorer, speedup_explorer_from  # noqa: E402


def test_explorer_readout_follows_the_sliders():
    ex = speedup_explorer(ref02.speedup, ref02.optimal_K, alpha=0.8, c=0.1, K=4)
    assert "2.40x" in ex.readout.value and "best K = 6: 2.47x" in ex.readout.value
    ex.alpha.value, ex.c.value = 0.3, 0.35
    assert "loses" in ex.readout.value and "do not speculate" in ex.readout.value
    assert "every K loses" in ex.readout.value
    ex.alpha.value, ex.c.value, ex.K.value = 0.5, 0.3, 1
    assert "1.15x" in ex.readout.value and "wins" in ex.readout.value
    ex.K.value = 4
    assert "0.88x" in ex.readout.value and "K = 1 already wins" in ex.readout.value


def test_explorer_marks_the_optimum_and_shades_the_losing_region():
    ex = speedup_explorer(ref02.speedup, ref02.optimal_K, alpha=0.8, c=0.1, K=4)
    s = ex.summary()
    assert s["best_K"] == 6 and s["S"].shape == (17,) and np.isclose(s["ceiling"], 5.0)


def notebook_namespace(*sources) -> dict:
    """A notebook's globals after running these cells: the functions defined run in it."""
    namespace = {"np": np}
    for source in sources:
        exec(source, namespace)
    return namespace


def released_cell(grade_id) -> str:
    nb = nbformat.read(COURSE / "02_cost_and_speedup" / "02_cost_and_speedup.ipynb", as_version=4)
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


REFERENCE_CELLS = [inspect.getsource(f) for f in (ref02.round_cost, ref02.speedup, ref02.optimal_K)]


@pytest.mark.parametrize("cells, named", [
    ([], "implement speedup and optimal_K above and run their cells"),  # nothing run yet: no NameError
    ([released_cell(g) for g in ("round_cost", "speedup", "optimal_K")],  # the untouched release
     "implement speedup and optimal_K above and run their cells"),
    ([released_cell("round_cost")] + REFERENCE_CELLS[1:],  # speedup done, the round_cost it calls is not
     "implement round_cost above and run its cell"),
    (REFERENCE_CELLS[:2] + [released_cell("optimal_K")], "implement optimal_K above and run its cell"),
])
def test_explorer_cell_names_what_to_implement_instead_of_raising(cells, named, capsys):
    """Notebook 02's explorer cell, `speedup_explorer_from(globals())`, on a notebook whose
    functions are missing or still raise NotImplementedError: one plain sentence, no explorer."""
    assert speedup_explorer_from(notebook_namespace(*cells)) is None
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and printed.count(". ") == 0 and printed.endswith(".\n"), printed
    assert printed.startswith("The explorer runs your speedup and optimal_K: ") and named in printed, printed


def test_explorer_cell_draws_the_learners_functions_unchanged(capsys):
    namespace = notebook_namespace(*REFERENCE_CELLS)
    ex = speedup_explorer_from(namespace, alpha=0.8, c=0.1, K=4)
    assert isinstance(ex, SpeedupExplorer) and "implement" not in capsys.readouterr().out
    assert ex.speedup is namespace["speedup"] and ex.optimal_K is namespace["optimal_K"]
    assert ex.readout.value == speedup_explorer(ref02.speedup, ref02.optimal_K, alpha=0.8, c=0.1, K=4).readout.value


def test_explorer_cell_still_shows_a_learners_bug():
    """Only a missing function or a stub is explained away; a real error reaches the learner."""
    namespace = notebook_namespace(*REFERENCE_CELLS, "def speedup(alpha, K, c):\n    return alpha.shape\n")
    with pytest.raises(AttributeError):
        speedup_explorer_from(namespace)


def test_explorer_has_an_overhead_slider_that_lowers_every_curve(monkeypatch):
    """The o slider (per-round overhead in plain decoding steps, 0 to 1, default 0) sits with the
    other sliders; at o = 0.3 every drawn speedup is E / (1 + K c + o), i.e. the o = 0 curve times
    (1 + K c) / (1 + K c + o), and moving it back to 0 restores the explorer exactly."""
    drawn = []  # each redraw's figure, closed so that pyplot does not keep them all

    def show():
        drawn.append(plots.plt.gcf())
        plots.plt.close(drawn[-1])
    monkeypatch.setattr(plots.plt, "show", show)
    ex = speedup_explorer(ref02.speedup, ref02.optimal_K, alpha=0.8, c=0.1, K=4)
    assert (ex.o.description, ex.o.min, ex.o.max, ex.o.value) == ("o", 0.0, 1.0, 0.0)
    assert ex.o in ex.children[0].children[0].children  # beside alpha, c and K
    readout0, curve0 = ex.readout.value, drawn[-1].axes[0].lines[0].get_ydata().copy()
    heat0 = np.asarray(drawn[-1].axes[1].collections[0].get_array()).copy()
    Ks, c, o = np.arange(17), 0.1, 0.3
    assert np.array_equal(curve0, ref02.speedup(0.8, Ks, c))  # o = 0: the learner's speedup itself

    ex.o.value = o
    factor = (1 + Ks * c) / (1 + Ks * c + o)
    curve = drawn[-1].axes[0].lines[0].get_ydata()
    assert np.allclose(curve, curve0 * factor) and np.allclose(ex.summary()["S"], curve0 * factor)
    assert np.isclose(curve[0], 1 / 1.3)  # K = 0: the speculative loop without drafts, 1/(1 + o)
    assert "K = 4: speedup <b>1.98x</b>" in ex.readout.value  # 3.3616 / (1 + 0.4 + 0.3)
    assert "best K = 7: 2.08x" in ex.readout.value and "alpha > c + o: K = 1 already wins" in ex.readout.value
    heat = np.asarray(drawn[-1].axes[1].collections[0].get_array())
    assert heat.shape == heat0.shape and (heat <= heat0 + 1e-12).all() and (heat < heat0 - 0.1).any()
    assert (heat >= 1.0).all()  # "do not speculate" (plain decoding, 1) stays available

    ex.alpha.value, ex.K.value, ex.o.value = 0.8, 1, 0.8  # c < alpha <= c + o: K = 1 loses, K = 2 wins
    assert "0.95x" in ex.readout.value and "loses" in ex.readout.value
    assert "K = 1 does not win, a longer draft does" in ex.readout.value
    assert ex.summary()["S"][2] > 1 and ex.summary()["best_K"] == 8
    ex.alpha.value, ex.c.value, ex.o.value = 0.5, 0.3, 0.3  # K = 1 needs alpha > 0.6; nothing wins here
    assert "do not speculate: plain decoding" in ex.readout.value and ex.summary()["S_best"] == 1.0

    ex.alpha.value, ex.c.value, ex.K.value, ex.o.value = 0.8, 0.1, 4, 0.0
    assert ex.readout.value == readout0
    assert np.array_equal(drawn[-1].axes[0].lines[0].get_ydata(), curve0)
    assert np.array_equal(np.asarray(drawn[-1].axes[1].collections[0].get_array()), heat0)


def test_overhead_helpers_reduce_to_the_formula_at_zero():
    alphas, cs, best, arg = plots.best_speedup_grid(ref02.speedup, n=40)
    _, _, best0, arg0 = plots.best_speedup_grid(ref02.speedup, n=40, overhead=0.0)
    assert np.array_equal(best, best0) and np.array_equal(arg, arg0)
    _, _, best_o, arg_o = plots.best_speedup_grid(ref02.speedup, n=40, overhead=0.3)
    assert (best_o >= 1.0).all() and (best_o <= best).all() and (arg_o >= 0).all()
    a, K, c, o = 0.7, np.arange(6), 0.2, 0.3
    S = ref02.speedup(a, K, c)
    assert plots.with_overhead(S, K, c, 0.0) is S
    assert np.allclose(plots.with_overhead(S, K, c, o), (1 - a ** (K + 1)) / (1 - a) / (1 + K * c + o))


def test_plots_draw_with_the_reference():
    plots.monte_carlo_check(ref01.accepted_pmf, ref01.expected_tokens, ref01.simulate_tokens, rounds=2000)
    plots.break_even_frontier(ref02.break_even_alpha)
    plots.optimal_K_map(ref02.optimal_K, n=10)
    plots.best_speedup_heatmap(ref02.speedup, n=50)
    plots.rejection_sampling_check(ref03.speculative_sample, ref03.acceptance_rate, n=500, pairs=3, n_per_pair=100)


@pytest.mark.parametrize("alpha, K, c, printed", [
    # Leviathan et al. 2023, Table 1 (c = 0), printed to 2 decimals
    (0.6, 2, 0.0, 1.96), (0.7, 3, 0.0, 2.53), (0.8, 2, 0.0, 2.44), (0.8, 5, 0.0, 3.69),
    (0.9, 2, 0.0, 2.71), (0.9, 10, 0.0, 6.86),
    # Table 4, predicted column (T5-XXL target, greedy EnDe, K = 7), printed to 1 decimal
    (0.75, 7, 0.02, 3.2), (0.82, 7, 0.11, 2.5),
])
def test_speedup_reproduces_published_predictions(alpha, K, c, printed):
    decimals = len(str(printed).split(".")[1])
    assert round(ref02.speedup(alpha, K, c), decimals) == pytest.approx(printed)


def test_corollaries_hold_on_a_grid():
    """alpha <= c loses for every K >= 1; alpha > c wins at K = 1 with S = (1+alpha)/(1+c);
    the speedup never exceeds 1/(1 - alpha)."""
    alphas = np.linspace(0, 0.99, 100)[:, None, None]
    cs = np.linspace(0, 1, 101)[None, :, None]
    Ks = np.arange(1, 17)[None, None, :]
    S = ref02.speedup(alphas, Ks, cs)
    le = (alphas <= cs)[..., 0]
    assert (S[le] <= 1 + 1e-12).all()
    S1 = S[..., 0]
    assert np.allclose(S1, (1 + alphas[..., 0]) / (1 + cs[..., 0]))
    assert (S <= 1 / (1 - alphas) + 1e-9).all()

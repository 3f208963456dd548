"""The speedup explorer of notebook 02: sliders for alpha, c, K and the per-round overhead o;
speedup against K with the losing region shaded and the optimal K marked; the best achievable
speedup over (alpha, c).

It calls the learner's own `speedup` and `optimal_K`. Their API takes no overhead, so for o > 0
every curve is the learner's speedup rescaled to E / (1 + K c + o) (`specdec.plots.with_overhead`)
and the explorer picks the best K itself (K = 0, "do not speculate", is plain decoding: 1). At
o = 0 everything is exactly what the learner's functions return. The speedup grid behind the
heat map is computed once (one vectorised call over a 300 x 300 x 17 grid) and rescaled when o
moves; each slider move redraws two small plots.

The notebook's cell is `speedup_explorer_from(globals())`: until the learner's `speedup` and
`optimal_K` exist and no longer raise NotImplementedError, it prints one sentence naming what to
implement (the learner's own function that raised, such as a `round_cost` that `speedup` calls)
instead of a NameError or a traceback.
"""
from __future__ import annotations

from collections.abc import Mapping

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from specdec.plots import C_LABEL, best_over_K, speedup_grid, with_overhead


class SpeedupExplorer(widgets.VBox):
    def __init__(self, speedup, optimal_K, K_max=16, alpha=0.8, c=0.1, K=4, o=0.0):
        self.speedup, self.optimal_K, self.K_max = speedup, optimal_K, K_max
        style = {"description_width": "60px"}
        layout = widgets.Layout(width="420px")
        self.alpha = widgets.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="alpha",
                                         continuous_update=False, style=style, layout=layout)
        self.c = widgets.FloatSlider(value=c, min=0.0, max=1.0, step=0.01, description="c",
                                     continuous_update=False, style=style, layout=layout, readout_format=".2f")
        self.K = widgets.IntSlider(value=K, min=0, max=K_max, description="K", continuous_update=False,
                                   style=style, layout=layout)
        self.o = widgets.FloatSlider(value=o, min=0.0, max=1.0, step=0.01, description="o",
                                     continuous_update=False, style=style, layout=layout, readout_format=".2f",
                                     tooltip="per-round overhead, in plain decoding steps")
        self.readout = widgets.HTML()
        self.plot = widgets.Output()
        self._S_grid = speedup_grid(speedup, K_max=K_max)  # (alphas, cs, Ks, S): rescaled for o
        self._best_cache = {}
        for slider in (self.alpha, self.c, self.K, self.o):
            slider.observe(self._update, names="value")
        note = widgets.HTML(f"<small>{C_LABEL} (small c = cheap draft).<br>o = per-round overhead in plain "
                            "decoding steps (sampling, acceptance test, rollback, host reads, Python): "
                            "round cost 1 + K c + o; o = 0 is the formula of Leviathan et al.</small>")
        super().__init__([widgets.HBox([widgets.VBox([self.alpha, self.c, self.K, self.o]), self.readout]),
                          note, self.plot])
        self._update()

    def summary(self) -> dict:
        a, c, K, o = self.alpha.value, self.c.value, self.K.value, self.o.value
        Ks = np.arange(self.K_max + 1)
        S = np.asarray(with_overhead(np.asarray(self.speedup(a, Ks, c), dtype=float), Ks, c, o), dtype=float)
        if o == 0:
            best = int(self.optimal_K(a, c, self.K_max))
            S_best = float(S[best])
        else:  # the learner's optimal_K takes no overhead; K = 0 ("do not speculate") is plain decoding: 1
            S = np.where(np.abs(S - 1.0) < 1e-12, 1.0, S)  # a rescaled tie (alpha = c + o at K = 1) stays a tie
            choices = np.concatenate([[1.0], S[1:]])
            best = int(np.argmax(choices))  # the smallest K on ties, as optimal_K
            S_best = float(choices[best])
        return dict(alpha=a, c=c, K=K, o=o, Ks=Ks, S=S, S_K=float(S[K]), best_K=best, S_best=S_best,
                    ceiling=1.0 / ((1.0 - a) * (1.0 + o)), loses_all=bool(np.all(S[1:] < 1.0)),
                    wins_any=bool(np.any(S[1:] > 1.0)),
                    k1_wins=bool(a > c + o + 1e-9))  # sliders step by 0.01: a float excess of 1e-17 is a tie

    @staticmethod
    def _corollary(s) -> str:
        """Corollary 3.9 of Leviathan et al. read from (alpha, c); alpha == c is the break-even of K = 1.
        With an overhead o > 0: K = 1 wins iff alpha > c + o, alpha <= c still loses for every K, and
        in between a longer draft may win (it loses iff mean(alpha..alpha^K) < c + o/K)."""
        if s["o"] == 0:
            if s["k1_wins"]:
                return "alpha > c: K = 1 already wins"
            if s["loses_all"]:
                return "alpha <= c: every K loses"
            return "alpha = c: no K wins (K = 1 only breaks even)"
        if s["k1_wins"]:
            return "alpha > c + o: K = 1 already wins"
        if s["alpha"] <= s["c"] + 1e-9:
            return "alpha <= c: every K loses"
        if s["wins_any"]:
            return "alpha <= c + o: K = 1 does not win, a longer draft does (more drafts share o)"
        if s["loses_all"]:
            return f"alpha <= c + o: every K up to {len(s['Ks']) - 1} loses"
        return "alpha <= c + o: no K wins (the best only breaks even)"

    def _best_grid(self, o):
        """(best speedup over K, its K) on the heat map's grid at overhead o (cached per o)."""
        if o not in self._best_cache:
            _, cs, Ks, S = self._S_grid
            self._best_cache = {o: best_over_K(S, Ks, cs, o)}  # keep one: the slider moves one way at a time
        return self._best_cache[o]

    def _update(self, change=None):
        s = self.summary()
        verdict = ("<b style='color:#b00'>loses</b>" if s["S_K"] < 1 else
                   "<b>break-even</b>" if s["S_K"] == 1 else "<b style='color:#070'>wins</b>")
        dont = "" if s["best_K"] else " (do not speculate)" if s["o"] == 0 else " (do not speculate: plain decoding)"
        self.readout.value = (
            f"<div style='padding-left:1em'>K = {s['K']}: speedup <b>{s['S_K']:.2f}x</b> ({verdict})<br>"
            f"best K = {s['best_K']}: {s['S_best']:.2f}x{dont}<br>"
            + (f"ceiling 1/(1 - alpha) = {s['ceiling']:.2f}x<br>" if s["o"] == 0 else
               f"K = 0 loop 1/(1 + o) = {1.0 / (1.0 + s['o']):.2f}x of plain<br>"
               f"ceiling 1/((1 - alpha)(1 + o)) = {s['ceiling']:.2f}x<br>")
            + f"{self._corollary(s)}</div>")
        with self.plot:
            self.plot.clear_output(wait=True)
            fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
            left.axhspan(0, 1, color="tab:red", alpha=0.12, label="speedup < 1: loses")
            left.plot(s["Ks"], s["S"], "o-", color="tab:blue",
                      label="speedup(alpha, K, c)" if s["o"] == 0 else "E[tokens] / (1 + K c + o)")
            left.plot([s["best_K"]], [s["S_best"]], "*", color="gold", markersize=18, markeredgecolor="k",
                      label=f"optimal K = {s['best_K']}")
            left.axvline(s["K"], color="gray", linestyle=":", label=f"K = {s['K']}")
            left.axhline(1.0, color="k", linewidth=0.8)
            left.set_xlabel("draft length K")
            left.set_ylabel("speedup over plain decoding")
            left.set_ylim(0, max(2.0, s["S"].max() * 1.1))
            left.set_title(f"alpha = {s['alpha']:.2f}, c = {s['c']:.2f}"
                           + (f", o = {s['o']:.2f}" if s["o"] else ""))
            left.legend(fontsize=8)
            alphas, cs = self._S_grid[:2]
            best, _ = self._best_grid(s["o"])
            mesh = right.pcolormesh(cs, alphas, best, shading="auto", cmap="viridis", vmin=1.0,
                                    vmax=min(5.0, best.max()))
            fig.colorbar(mesh, ax=right, label="best speedup over K")
            right.plot([0, 0.99], [0, 0.99], "w--", linewidth=1)  # alpha <= c: every K loses, whatever o
            if s["o"] and s["o"] < 0.99:  # alpha > c + o: K = 1 wins
                right.plot([0, 0.99 - s["o"]], [s["o"], 0.99], "w:", linewidth=1)
            right.plot([s["c"]], [s["alpha"]], "r*", markersize=14, markeredgecolor="w")
            right.set_xlabel(C_LABEL)
            right.set_ylabel("alpha")
            right.set_title("best achievable speedup; star = your (alpha, c)" if s["o"] == 0 else
                            f"best achievable speedup at o = {s['o']:.2f}; star = your (alpha, c)")
            fig.tight_layout()
            plt.show()


def speedup_explorer(speedup, optimal_K, **kwargs) -> SpeedupExplorer:
    return SpeedupExplorer(speedup, optimal_K, **kwargs)


NEEDED = ("speedup", "optimal_K")  # what the explorer calls; anything they call is found by `unfinished`


def unfinished(namespace: Mapping) -> list[str]:
    """The learner's functions to implement before the explorer can run, in the order found: each
    name of NEEDED that `namespace` (the notebook's globals) lacks, and, for each that raises
    NotImplementedError on one of the explorer's own calls, the innermost of the learner's
    functions that raised it (their `speedup` may be waiting for their `round_cost`). Any other
    error is left for the explorer itself to show: it is a bug to see, not a stub."""
    probes = {"speedup": (0.8, np.arange(17), 0.1), "optimal_K": (0.8, 0.1, 16)}
    todo = []
    for name in NEEDED:
        fn = namespace.get(name)
        if not callable(fn):
            todo.append(name)
            continue
        try:
            fn(*probes[name])
        except NotImplementedError as err:
            tb, raised = err.__traceback__, name
            while tb is not None:  # the learner's frames are those that run in the notebook's globals
                if tb.tb_frame.f_globals is namespace:
                    raised = tb.tb_frame.f_code.co_name
                tb = tb.tb_next
            todo.append(raised)
        except Exception:  # noqa: BLE001  (not a stub: the explorer raises it as before)
            pass
    return list(dict.fromkeys(todo))


def speedup_explorer_from(namespace: Mapping, **kwargs) -> SpeedupExplorer | None:
    """Notebook 02's explorer cell: the explorer of the learner's `speedup` and `optimal_K` in
    `namespace` (pass `globals()`), or None after printing what to implement first."""
    todo = unfinished(namespace)
    if todo:
        names = todo[0] if len(todo) == 1 else ", ".join(todo[:-1]) + " and " + todo[-1]
        cells = "its cell" if len(todo) == 1 else "their cells"
        print(f"The explorer runs your speedup and optimal_K: implement {names} above and run {cells}, "
              "then run this cell again.")
        return None
    return SpeedupExplorer(namespace["speedup"], namespace["optimal_K"], **kwargs)

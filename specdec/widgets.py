"""The speedup explorer of notebook 02: sliders for alpha, c and K; speedup against K with the
losing region shaded and the optimal K marked; the best achievable speedup over (alpha, c).

It calls the learner's own `speedup` and `optimal_K`. The heat map is computed once (one
vectorised call over a 300 x 300 x 17 grid); each slider move redraws two small plots.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from specdec.plots import C_LABEL, best_speedup_grid


class SpeedupExplorer(widgets.VBox):
    def __init__(self, speedup, optimal_K, K_max=16, alpha=0.8, c=0.1, K=4):
        self.speedup, self.optimal_K, self.K_max = speedup, optimal_K, K_max
        style = {"description_width": "60px"}
        layout = widgets.Layout(width="420px")
        self.alpha = widgets.FloatSlider(value=alpha, min=0.0, max=0.99, step=0.01, description="alpha",
                                         continuous_update=False, style=style, layout=layout)
        self.c = widgets.FloatSlider(value=c, min=0.0, max=1.0, step=0.01, description="c",
                                     continuous_update=False, style=style, layout=layout, readout_format=".2f")
        self.K = widgets.IntSlider(value=K, min=0, max=K_max, description="K", continuous_update=False,
                                   style=style, layout=layout)
        self.readout = widgets.HTML()
        self.plot = widgets.Output()
        self._grid = best_speedup_grid(speedup, K_max=K_max)
        for slider in (self.alpha, self.c, self.K):
            slider.observe(self._update, names="value")
        note = widgets.HTML(f"<small>{C_LABEL} (small c = cheap draft). Round cost 1 + K c target passes.</small>")
        super().__init__([widgets.HBox([widgets.VBox([self.alpha, self.c, self.K]), self.readout]),
                          note, self.plot])
        self._update()

    def summary(self) -> dict:
        a, c, K = self.alpha.value, self.c.value, self.K.value
        Ks = np.arange(self.K_max + 1)
        S = np.asarray(self.speedup(a, Ks, c), dtype=float)
        best = int(self.optimal_K(a, c, self.K_max))
        return dict(alpha=a, c=c, K=K, Ks=Ks, S=S, S_K=float(S[K]), best_K=best, S_best=float(S[best]),
                    ceiling=1.0 / (1.0 - a), loses_all=bool(np.all(S[1:] < 1.0)),
                    k1_wins=bool(a > c + 1e-9))  # sliders step by 0.01: a float excess of 1e-17 is a tie

    @staticmethod
    def _corollary(s) -> str:
        """Corollary 3.9 of Leviathan et al. read from (alpha, c); alpha == c is the break-even of K = 1."""
        if s["k1_wins"]:
            return "alpha > c: K = 1 already wins"
        if s["loses_all"]:
            return "alpha <= c: every K loses"
        return "alpha = c: no K wins (K = 1 only breaks even)"

    def _update(self, change=None):
        s = self.summary()
        verdict = ("<b style='color:#b00'>loses</b>" if s["S_K"] < 1 else
                   "<b>break-even</b>" if s["S_K"] == 1 else "<b style='color:#070'>wins</b>")
        self.readout.value = (
            f"<div style='padding-left:1em'>K = {s['K']}: speedup <b>{s['S_K']:.2f}x</b> ({verdict})<br>"
            f"best K = {s['best_K']}: {s['S_best']:.2f}x"
            f"{' (do not speculate)' if s['best_K'] == 0 else ''}<br>"
            f"ceiling 1/(1 - alpha) = {s['ceiling']:.2f}x<br>"
            f"{self._corollary(s)}</div>")
        with self.plot:
            self.plot.clear_output(wait=True)
            fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
            left.axhspan(0, 1, color="tab:red", alpha=0.12, label="speedup < 1: loses")
            left.plot(s["Ks"], s["S"], "o-", color="tab:blue", label="speedup(alpha, K, c)")
            left.plot([s["best_K"]], [s["S_best"]], "*", color="gold", markersize=18, markeredgecolor="k",
                      label=f"optimal K = {s['best_K']}")
            left.axvline(s["K"], color="gray", linestyle=":", label=f"K = {s['K']}")
            left.axhline(1.0, color="k", linewidth=0.8)
            left.set_xlabel("draft length K")
            left.set_ylabel("speedup over plain decoding")
            left.set_ylim(0, max(2.0, s["S"].max() * 1.1))
            left.set_title(f"alpha = {s['alpha']:.2f}, c = {s['c']:.2f}")
            left.legend(fontsize=8)
            alphas, cs, best, _ = self._grid
            mesh = right.pcolormesh(cs, alphas, best, shading="auto", cmap="viridis", vmin=1.0,
                                    vmax=min(5.0, best.max()))
            fig.colorbar(mesh, ax=right, label="best speedup over K")
            right.plot([0, 0.99], [0, 0.99], "w--", linewidth=1)
            right.plot([s["c"]], [s["alpha"]], "r*", markersize=14, markeredgecolor="w")
            right.set_xlabel(C_LABEL)
            right.set_ylabel("alpha")
            right.set_title("best achievable speedup; star = your (alpha, c)")
            fig.tight_layout()
            plt.show()


def speedup_explorer(speedup, optimal_K, **kwargs) -> SpeedupExplorer:
    return SpeedupExplorer(speedup, optimal_K, **kwargs)

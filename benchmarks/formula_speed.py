"""How fast the explorer's formulas are: the reference `speedup` on a 1000 x 1000 (alpha, c) grid,
vectorised, against the same formula evaluated point by point in Python, in one run.

    make bench-formulas
"""
import timeit

import numpy as np

from solutions.reference.a02_cost_and_speedup import speedup


def main():
    alpha, c = np.meshgrid(np.linspace(0, 0.99, 1000), np.linspace(0, 1, 1000))
    vectorised = min(timeit.repeat(lambda: speedup(alpha, 4, c), number=1, repeat=5))
    points = list(zip(alpha.ravel()[:10_000], c.ravel()[:10_000]))
    loop = min(timeit.repeat(lambda: [speedup(a, 4, cc) for a, cc in points], number=1, repeat=3)) * 100
    best_K_grid = min(timeit.repeat(lambda: speedup(alpha[..., None], np.arange(17), c[..., None]).max(-1),
                                    number=1, repeat=3))
    print(f"speedup on 1000x1000 grid, vectorised: {vectorised * 1e3:.1f} ms")
    print(f"same grid point by point (extrapolated from 10,000 points): {loop:.1f} s")
    print(f"best speedup over K = 0..16 on the grid: {best_K_grid * 1e3:.0f} ms")
    print(f"vectorised / loop speed ratio: {loop / vectorised:.0f}x")


if __name__ == "__main__":
    main()

"""Made-up clocks and models whose calls take a known time on them (tests/test_timing.py,
tests/test_practice.py): every time is exact, nothing depends on the machine."""


class Clock:
    """A made-up clock for `specdec.timing`: it moves only when told to, so every time is exact."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Costly:
    """A model whose call feeding k positions takes seconds(k) on the made-up clock."""

    def __init__(self, model, clock, seconds):
        self.model, self.clock, self.seconds = model, clock, seconds
        self.config, self.device = model.config, model.device

    def parameters(self):
        return self.model.parameters()

    def new_cache(self):
        return self.model.new_cache()

    def extend(self, ids, cache, *args, **kwargs):
        self.clock.now += self.seconds(ids.shape[1])
        return self.model.extend(ids, cache, *args, **kwargs)

"""macOS's App Nap switch, which pip installs with ipykernel on a Mac (its requirement is marked
platform_system == "Darwin") and ipykernel calls there: nothing to switch off here."""
import contextlib


def nope():
    pass


def nap():
    pass


@contextlib.contextmanager
def nope_scope(*args, **kwargs):
    yield

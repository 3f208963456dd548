"""A Python process started with this folder on PYTHONPATH reports its platform as win32
(tests/test_platforms.py): enough to see what the course's entry points do on native Windows
before they touch anything else (they must stop with one sentence that says to use WSL)."""
import sys

sys.platform = "win32"

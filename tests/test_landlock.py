"""The Landlock layer of the grading sandbox (coursekit.judge.landlock, coursekit.judge.sandbox)
and the subreaper that ends what a kernel leaves running, on real kernels started the way
nbgrader starts them. Where this Linux kernel has no Landlock, the Landlock tests skip with a line
that says so; CI requires it (COURSE_SANDBOX_REQUIRE=bubblewrap,landlock) and then they fail."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coursekit import settings
from coursekit.judge import landlock, layers, sandbox
from tests.support.kernels import run

REPO = Path(__file__).resolve().parent.parent


def _landlock():
    if layers.available(layers.LANDLOCK):
        return
    if layers.LANDLOCK in settings.SANDBOX_REQUIRE.get():
        pytest.fail(f"{settings.SANDBOX_REQUIRE.name} names landlock, but {layers.WHY_MISSING[layers.LANDLOCK]}")
    pytest.skip(layers.WHY_MISSING[layers.LANDLOCK])


@pytest.fixture()
def under(monkeypatch):
    """under(layer): grading kernels started from now on run under `layer`."""
    def choose(layer):
        if layer == layers.LANDLOCK:
            _landlock()
        elif layer == layers.BWRAP and not layers.available(layer):
            pytest.skip(layers.WHY_MISSING[layer])
        monkeypatch.setenv(settings.SANDBOX.name, layer)
    return choose


NATIVE = "import ctypes, errno, os\n_libc = ctypes.CDLL(None, use_errno=True)\n"


def test_native_code_meets_the_ruleset(course, under, tmp_path):
    """What the audit hook cannot see, Landlock stops: native writes outside the learner's folder,
    reads of the references and of home, TCP connect and bind, starting a program, signalling the
    grader. The learner's folder and the private temp folder stay writable; torch and matplotlib work."""
    under(layers.LANDLOCK)
    outside = tmp_path / "native-escape"
    reference = REPO / "solutions" / "reference" / "a01_acceptance_chain.py"
    out = run([
        NATIVE + f"print(_libc.open({str(outside).encode()!r}, 0o101, 0o644), ctypes.get_errno() == errno.EACCES)",
        NATIVE + f"print(_libc.open({str(reference).encode()!r}, 0), ctypes.get_errno() == errno.EACCES)",
        NATIVE + f"print(_libc.open({str(Path.home() / '.bashrc').encode()!r}, 0) < 0)",
        NATIVE + "import socket, struct\ns = _libc.socket(2, 1, 0)\n"
                 "addr = struct.pack('=H', 2) + struct.pack('!H', 9) + socket.inet_aton('127.0.0.1') + bytes(8)\n"
                 "print(_libc.connect(s, addr, 16), ctypes.get_errno() == errno.EACCES, _libc.bind(s, addr, 16))",
        NATIVE + "print(_libc.system(b'true') >> 8)",  # /bin/sh cannot be executed: 127
        NATIVE + "print(_libc.kill(os.getppid(), 0), ctypes.get_errno() == errno.EPERM)",
        NATIVE + "fd = _libc.open(b'mine.txt', 0o101, 0o644); print(fd >= 0, _libc.close(fd))",
        "import os, tempfile; print(open(tempfile.mktemp(), 'w').write('x'), os.environ['TMPDIR'].startswith('/tmp/grading-kernel-'))",
        "import torch, matplotlib.pyplot as plt; plt.plot([1, 2]); print(float(torch.ones(3).sum()))",
        NATIVE + "print(_libc.open(f'/proc/{os.getppid()}/environ'.encode(), 0), ctypes.get_errno() == errno.EACCES)",
    ], course / "autograded/alice/01_x")
    assert out[0] == "ok: -1 True\n" and not outside.exists(), out[0]
    assert out[1] == "ok: -1 True\n", out[1]
    assert out[2] == "ok: True\n", out[2]
    assert out[3] == "ok: -1 True -1\n", out[3]
    assert out[4] == "ok: 127\n", out[4]
    if landlock.abi() >= 6:
        assert out[5] == "ok: -1 True\n", out[5]
    assert out[6] == "ok: True 0\n" and (course / "autograded/alice/01_x/mine.txt").exists(), out[6]
    assert out[7] == "ok: 1 True\n", out[7]
    assert out[8] == "ok: 3.0\n", out[8]
    assert out[9] == "ok: -1 True\n", out[9]  # the grader's environment (another process under /proc)


def test_the_audit_hook_stays_on_top(course, under):
    """Under Landlock the Python-level refusals still happen, and are logged for the integrity report."""
    under(layers.LANDLOCK)
    out = run(["open('../../../gradebook.db').read()", "import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)"],
              course / "autograded/alice/01_x")
    assert out[0].startswith("PermissionError") and "grading data" in out[0], out[0]
    assert out[1].startswith("PermissionError") and "not allowed" in out[1], out[1]
    log = (course / "autograded/alice/01_x/.sandbox-refusals.log").read_text()
    assert "opening grading data" in log and "network" in log, log


DAEMON = ("import ctypes\n_py = ctypes.PyDLL(None)\nif _py.fork() == 0:\n    _py.setsid()\n    if _py.fork() == 0:\n"
          "        _py.prctl(15, b'{name}', 0, 0, 0)\n        _py.sleep(600)\n    _py._exit(0)\nprint('forked')")


@pytest.mark.parametrize("layer", layers.LAYERS)
def test_no_process_outlives_grading(course, under, layer):
    """A daemon started by native code (a double fork, out of the kernel's session) is ended when
    the notebook is done, under every layer: the grader is its subreaper (sandbox.end_strays)."""
    under(layer)
    name = f"strays{os.getpid() % 10000}{layer[0]}"
    out = run([DAEMON.format(name=name), "import time; time.sleep(0.5)"], course / "autograded/alice/01_x")
    assert out[0] == "ok: forked\n", out
    left = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.split()
    subprocess.run(["pkill", "-x", name])
    assert not left, f"{name} outlived grading under {layer}: {left}"


def test_restrict_refuses_a_process_with_threads():
    """Landlock restricts the calling thread only: a kernel that had started threads would keep
    unrestricted ones, so restrict refuses (the kernel restricts itself before ipykernel starts any)."""
    _landlock()
    code = textwrap.dedent("""
        import threading, time
        from coursekit.judge import landlock
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        try:
            landlock.restrict([], [])
        except landlock.LandlockError as exc:
            print("refused:", exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert "refused: " in out.stdout and "thread" in out.stdout, (out.stdout, out.stderr)


def test_the_ruleset_keeps_grading_data_closed(course, monkeypatch):
    """The kernel's readable paths hold no grading data: the references, the source notebooks and
    the course root's gradebook and folders are beneath none of them; the learner's folder and the
    private one are the only writable ones."""
    monkeypatch.setenv(settings.SANDBOX_PROTECT.name, str(course))
    # pytest puts the repository itself on sys.path (as PYTHONPATH=<repository> would): not granted
    assert str(REPO) in sys.path or any(Path(p).resolve() == REPO.resolve() for p in sys.path if p)
    workdir = course / "autograded/alice/01_x"
    readable, writable = sandbox.landlock_paths(workdir, course / "private")
    for hidden in sandbox.hidden_paths(workdir):
        assert not any(path == hidden or path in hidden.parents for path in readable), hidden
    assert writable == [workdir.resolve(), (course / "private").resolve()]
    assert (REPO / "specdec").resolve() in readable and (REPO / "solutions").resolve() not in readable
    assert not any(path == REPO.resolve() or path in REPO.resolve().parents for path in readable)


def test_a_course_root_inside_a_readable_path_is_refused(monkeypatch, tmp_path):
    """Grading data beneath a path the kernel must read (a course root inside the Python
    installation, say) would be readable by native code: the kernel refuses to start instead."""
    monkeypatch.setattr(sandbox, "hidden_paths", lambda workdir: [Path(sys.prefix) / "gradebook.db"])
    with pytest.raises(RuntimeError, match="lies beneath"):
        sandbox.landlock_paths(tmp_path, tmp_path)


def test_the_report_names_the_layer(monkeypatch):
    _landlock()
    assert layers.describe(layers.LANDLOCK) == f"Landlock (ABI {landlock.abi()}) with the audit hook"
    assert layers.describe(layers.BWRAP) == "bubblewrap"
    monkeypatch.setenv(settings.SANDBOX.name, layers.AUDIT)
    assert layers.mode() == layers.AUDIT
    assert layers.describe(layers.AUDIT).startswith("audit hook only (") and "native code is not contained" in \
        layers.describe(layers.AUDIT)


def test_a_missing_layer_that_is_asked_for_is_an_error(monkeypatch):
    monkeypatch.setitem(layers._MODE, layers.LANDLOCK, False)
    monkeypatch.setenv(settings.SANDBOX.name, layers.LANDLOCK)
    with pytest.raises(RuntimeError, match="no Landlock"):
        layers.mode()
    monkeypatch.setenv(settings.SANDBOX.name, "auto")
    monkeypatch.setenv(settings.SANDBOX_REQUIRE.name, "landlock")
    with pytest.raises(RuntimeError, match="COURSE_SANDBOX_REQUIRE names landlock"):
        layers.mode()
    monkeypatch.setenv(settings.SANDBOX_REQUIRE.name, "")
    monkeypatch.setitem(layers._MODE, layers.BWRAP, False)
    assert layers.mode() == layers.AUDIT  # auto: the strongest there is
    monkeypatch.setenv(settings.SANDBOX.name, "chroot")
    with pytest.raises(ValueError, match="one of auto"):
        layers.mode()


def test_the_report_says_which_layer_graded_each_notebook():
    """The layer is recorded where each notebook was graded (a cluster's workers may differ)."""
    from coursekit.grading.report import cohort_report as report
    from coursekit.grading.results import NotebookResult

    one = NotebookResult("a", "01", "01", sandbox="bubblewrap")
    assert report([one]).startswith("Grading kernels ran under: bubblewrap\n")
    other = NotebookResult("b", "01", "01", sandbox="Landlock (ABI 7) with the audit hook")
    assert report([one, one, other]).startswith(
        "Grading kernels ran under: bubblewrap (2 notebooks); Landlock (ABI 7) with the audit hook (1 notebook)\n")

"""Each guarantee of the grading sandbox (coursekit/judge/sandbox.py), tested on a real kernel started
the way nbgrader starts it (nbclient with grader_config's kernel manager class)."""
from pathlib import Path

from coursekit import settings
from tests.support.kernels import run

REPO = Path(__file__).resolve().parent.parent


def test_grader_config_uses_the_sandbox():
    assert 'kernel_manager_class = "coursekit.judge.sandbox.SandboxKernelManager"' in (REPO / "grader_config.py").read_text()


def test_files_own_folder_yes_elsewhere_no(course):
    probe = Path.home() / "sandbox-probe.txt"  # outside the folder and the temp dir (a CI clone may sit in /tmp)
    probe.unlink(missing_ok=True)
    out = run(["open('mine.txt', 'w').write('ok'); print(open('mine.txt').read())",
               f"open({str(probe)!r}, 'w')",
               "import os; os.remove('/nonexistent-sandbox-probe/x')",
               "open('../../../gradebook.db').read()",
               "open('../../bob/01_x/01_x.ipynb').read()",
               "open('../../../source/01_x/01_x.ipynb').read()",
               "import os; os.listdir('../../bob/01_x')"],
              course / "autograded/alice/01_x")
    assert out[0] == "ok: ok\n"
    assert out[1].startswith("PermissionError") and "writing outside" in out[1] and not probe.exists()
    assert out[2].startswith("PermissionError")
    for result in out[3:7]:
        assert result.startswith("PermissionError") and "grading data" in result, result
    assert (course / "gradebook.db").read_text() == "grades"
    assert (course / "autograded/alice/01_x/.sandbox-refusals.log").read_text().count("\n") >= 6


def test_parallel_grading_protects_the_course_root(course, monkeypatch):
    """Under parallel grading the kernel runs in <course>/.grading/alice/autograded/alice/01_x (a
    scratch root); the course root's grading data and bob's scratch root are off limits too."""
    scratch = course / ".grading" / "alice"
    (scratch / "autograded/alice/01_x").mkdir(parents=True)
    (scratch / "gradebook.db").write_text("copy")
    (course / ".grading/bob/submitted/bob/01_x").mkdir(parents=True)
    monkeypatch.setenv(settings.SANDBOX_PROTECT.name, str(course))
    out = run([f"open({str(course / 'gradebook.db')!r}).read()",
               f"open({str(course / 'submitted/bob/01_x/../../../gradebook.db')!r}).read()",
               f"import os; os.listdir({str(course / '.grading/bob/submitted')!r})",
               f"import os; os.listdir({str(course / 'submitted')!r})",
               "open('../../../gradebook.db').read()",
               "open('mine.txt', 'w').write('ok'); print(open('mine.txt').read())"],
              scratch / "autograded/alice/01_x")
    for result in out[:5]:
        assert result.startswith("PermissionError") and "grading data" in result, result
    assert out[5] == "ok: ok\n"


def test_no_network_no_processes(course):
    out = run(["import socket; socket.create_connection(('127.0.0.1', 9), timeout=1)",
               "import urllib.request; urllib.request.urlopen('http://example.com', timeout=1)",
               "import subprocess; subprocess.run(['true'])",
               "import os; os.fork()",
               "import os; os.system('true')",
               "import os, signal; os.kill(os.getppid(), signal.SIGTERM)"],
              course / "autograded/alice/01_x")
    assert all(o.startswith(("PermissionError", "URLError")) and "not allowed" in o for o in out), out


def test_memory_and_file_size_limits(course):
    out = run(["import numpy as np; a = np.ones(16 * 1024**3 // 8)",
               "open('big.bin', 'wb').write(b'0' * 100_000_000)",
               "import torch, numpy; print(float(torch.ones(3).sum()), numpy.zeros(1_000_000).size)"],
              course / "autograded/alice/01_x")
    assert out[0].startswith("MemoryError"), out[0]
    assert out[1].startswith("OSError") and "too large" in out[1], out[1]
    assert out[2] == "ok: 3.0 1000000\n"  # the course's libraries work inside the sandbox


def test_cpu_limit_kills_a_runaway_kernel(course, monkeypatch):
    monkeypatch.setenv(settings.SANDBOX_CPU.name, "5")
    assert run(["while True:\n    pass"], course / "autograded/alice/01_x", timeout=120) == ["DEAD"]

"""A real grading kernel, started the way nbgrader starts it (nbclient with grader_config's kernel
manager class), running a few cells: what the sandbox tests (tests/test_sandbox.py,
tests/test_landlock.py) observe."""
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError


def course_layout(folder):
    """A course root laid out as nbgrader's at `folder`: the kernel runs in autograded/alice/01_x."""
    (folder / "gradebook.db").write_text("grades")
    for sub in ("source/01_x", "submitted/bob/01_x", "autograded/bob/01_x", "autograded/alice/01_x"):
        (folder / sub).mkdir(parents=True)
    (folder / "source/01_x/01_x.ipynb").write_text("solutions")
    (folder / "autograded/bob/01_x/01_x.ipynb").write_text("bob's work")
    return folder


def run(cells, workdir, timeout=60):
    """Outputs per cell: 'ok: <text>' or '<ExceptionName>: <message>'; 'DEAD' if the kernel died."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = NotebookClient(nb, timeout=timeout, allow_errors=True,
                            kernel_manager_class="coursekit.judge.sandbox.SandboxKernelManager",
                            resources={"metadata": {"path": str(workdir)}})
    try:
        client.execute()
    except DeadKernelError:
        return ["DEAD"]
    out = []
    for cell in nb.cells:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if errors:
            out.append(f"{errors[0].ename}: {errors[0].evalue}")
        else:
            out.append("ok: " + "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream"))
    return out

"""The learner's experience in a real browser: JupyterLab started by `make lab`'s own command on a
learner workspace, driven by Playwright in headless Chromium or Chrome (any build Playwright can
drive: Debian's `chromium`, an installed Google Chrome, or `COURSE_CHROMIUM=/path/to/browser`).

Each step leaves a screenshot in build/screenshots/ (the test artifacts; the paths are printed):
  01-opened.png            notebook 02 open, kernel idle
  02-ran-all.png           after Run > Run All Cells: every cell ran, no errors, plots rendered
  03-explorer.png          the speedup explorer as it first renders (alpha 0.80, c 0.10, K 4)
  04-explorer-moved.png    after typing alpha 0.30 and c 0.35 into the sliders: every K loses
  05-explorer-dragged.png  after dragging the K slider's handle with the mouse
  06-validate-filled.png   nbgrader's Validate on notebook 02 with the exercises done: success
  07-validate-blank.png    Validate on the untouched notebook 01: which cells fail, and why
  08-blank-run-all.png     Run All on the untouched notebook 01: where it stops, and the message
  09-scan-page.png         the course-wide "scan before the interview" page, rendered
  10-validate-one-done.png Validate on notebook 01 once accepted_pmf is done: only the others' cells fail
  11-pass-line.png         the visible tests of accepted_pmf run: the line that says they passed
  12-wrapped-message.png   a wrong answer's visible test fails: source and traceback wrap inside the cell

Where no browser is found the tests are skipped with one line that says how to enable them, so
`make test` passes on a newcomer's machine. CI (`.ci/run`) installs Chromium and sets
COURSE_REQUIRE_BROWSER=1, under which a missing browser is a failure. COURSE_BROWSER_TESTS=0
skips them on request.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from coursekit.lab import command
from coursekit.reference import with_reference_answers
from coursekit.paths import COURSE, REPO, SOURCE
from coursekit.workspace import sync
from coursekit import settings

# Browsers Playwright's Chromium driver can run, in the order they are tried.
CANDIDATES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]


def find_browser() -> str | None:
    """COURSE_CHROMIUM if set, else the first Chromium or Chrome on PATH, else None."""
    if settings.CHROMIUM.is_set():
        return settings.CHROMIUM.get()
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


CHROMIUM = find_browser()
ENABLE = ("no Chromium or Chrome found: install one (Debian: apt-get install chromium) or set "
          "COURSE_CHROMIUM=/path/to/chrome to run the browser tests")
# What a closed network needs: no background connections (refused here, many at a time), no
# component updates, sync or QUIC; as root Chromium also needs --no-sandbox.
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SHOTS = REPO / "build" / "screenshots"
A01, A02 = "01_acceptance_chain", "02_cost_and_speedup"
TOKEN = "course-browser-test"

# One skip line for the whole module, not one per test.
if not settings.BROWSER_TESTS.get():
    pytest.skip("COURSE_BROWSER_TESTS=0: browser tests skipped on request", allow_module_level=True)
if CHROMIUM is None and not settings.REQUIRE_BROWSER.get():
    pytest.skip(ENABLE, allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a fresh learner workspace where notebook 02 is done and 01 is untouched."""
    tmp = tmp_path_factory.mktemp("browser")
    ws = tmp / "workspace"
    sync(COURSE, ws)
    with_reference_answers(COURSE / A02 / f"{A02}.ipynb", SOURCE / A02 / f"{A02}.ipynb", ws / A02 / f"{A02}.ipynb")
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"))
    log = open(tmp / "lab.log", "w")
    server = subprocess.Popen(command(ws, port, TOKEN), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("JupyterLab did not start:\n" + (tmp / "lab.log").read_text()[-3000:])
            time.sleep(0.5)
    yield dict(url=url, workspace=ws, log=tmp / "lab.log")
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
    log.close()


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or not Path(CHROMIUM).exists():  # only reached with COURSE_REQUIRE_BROWSER=1
        pytest.fail(f"COURSE_REQUIRE_BROWSER=1 but {ENABLE}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots():
    SHOTS.mkdir(parents=True, exist_ok=True)  # each step overwrites its own file
    return SHOTS


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    context.close()


def shot(page, shots, name, element=None):
    path = shots / name
    (element or page).screenshot(path=str(path))
    print(f"screenshot: {path}")
    return path


def open_notebook(page, lab, assignment):
    page.goto(f"{lab['url']}/lab/workspaces/{assignment}/tree/{assignment}/{assignment}.ipynb?reset&token={TOKEN}")
    page.wait_for_function("() => document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell').length > 5")
    wait_idle(page)


def wait_idle(page, timeout=120_000):
    """The status bar says the notebook's kernel is idle (it reads 'Initializing' before it starts)."""
    page.get_by_text(re.compile(r"^Python 3 \(ipykernel\) \| Idle$")).wait_for(timeout=timeout)


def menu(page, top, item):
    """Click a menu bar entry, then an item of the menu it opens, as a learner would."""
    page.locator(".lm-MenuBar-itemLabel").get_by_text(top, exact=True).click()
    page.locator(".lm-Menu-itemLabel").get_by_text(item, exact=True).click()


def run_all(page, timeout=180_000):
    menu(page, "Run", "Run All Cells")
    # Every code cell has been given an execution count and none is still queued or running.
    page.wait_for_function("""() => {
        const prompts = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt')];
        return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
    }""", timeout=timeout)
    wait_idle(page, timeout)


def errors(page):
    """The text of every error or stderr output (textContent: off-screen cells are not laid out)."""
    return page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').evaluate_all(
        "els => els.map(e => e.textContent)")


def test_run_all_renders_plots_and_the_explorer_responds(lab, page, shots):
    open_notebook(page, lab, A02)
    shot(page, shots, "01-opened.png")
    # A learner's first view: no pop-ups (news, instructor tools), the Validate button is there.
    assert page.locator(".jp-Notification-Toast").count() == 0
    menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
    assert "Nbgrader" not in menus and {"File", "Run", "Kernel"} <= set(menus), menus
    assert validate_button(page).count() == 1

    run_all(page)
    shot(page, shots, "02-ran-all.png")
    assert errors(page) == []
    outputs = "\n".join(page.locator(".jp-OutputArea-output").evaluate_all("els => els.map(e => e.textContent)"))
    for exercise in ("round_cost", "speedup", "loses", "break_even_alpha", "optimal_K"):
        assert f"\u2713 {exercise}: visible tests passed" in outputs, exercise
    images = page.locator(".jp-RenderedImage img")
    assert images.count() >= 3  # the break-even frontier, the K map + heat map, the explorer's plot
    widths = images.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 300 for w in widths), widths

    explorer = page.locator(".widget-vbox", has=page.locator(".widget-slider")).first
    explorer.scroll_into_view_if_needed()
    page.wait_for_selector(".widget-slider .widget-readout")
    assert "Error displaying widget" not in page.content()
    readout = explorer.locator(".widget-html-content").first
    plot = explorer.locator(".jp-RenderedImage img")
    assert "K = 4: speedup" in readout.inner_text() and "wins" in readout.inner_text()
    shot(page, shots, "03-explorer.png", explorer)

    def slider(label):
        return explorer.locator(".widget-slider", has=page.locator("label", has_text=re.compile(f"^{label}$")))

    def changed(before_text, before_src):
        """Wait until both the readout and the plot (a new PNG) have been redrawn."""
        page.wait_for_function("""([root, text, src]) => {
            const img = root.querySelector('.jp-RenderedImage img');  // a new element per redraw
            return root.querySelector('.widget-html-content').innerText !== text && img && img.complete
                && img.getAttribute('src') !== src;
        }""", arg=[explorer.element_handle(), before_text, before_src])

    def set_slider(label, value):
        before = readout.inner_text(), plot.get_attribute("src")
        box = slider(label).locator(".widget-readout")
        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(value)
        page.keyboard.press("Enter")
        changed(*before)

    set_slider("alpha", "0.30")
    set_slider("c", "0.35")
    text = readout.inner_text()
    assert "loses" in text and "alpha <= c: every K loses" in text and "do not speculate" in text, text
    shot(page, shots, "04-explorer-moved.png", explorer)

    # Drag the K slider's handle to the right end with the mouse: K becomes 16.
    k_slider = slider("K")
    handle, track = k_slider.locator(".noUi-handle"), k_slider.locator(".noUi-target")
    before = readout.inner_text(), plot.get_attribute("src")
    h, t = handle.bounding_box(), track.bounding_box()
    page.mouse.move(h["x"] + h["width"] / 2, h["y"] + h["height"] / 2)
    page.mouse.down()
    page.mouse.move(t["x"] + t["width"] + 20, h["y"] + h["height"] / 2, steps=10)
    page.mouse.up()
    changed(*before)
    assert "K = 16: speedup" in readout.inner_text(), readout.inner_text()
    assert k_slider.locator(".widget-readout").inner_text().strip() == "16"
    shot(page, shots, "05-explorer-dragged.png", explorer)


def validate_button(page):
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-NotebookPanel-toolbar").get_by_text("Validate", exact=True)


def validate(page):
    validate_button(page).click()
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=240_000)
    page.wait_for_function("() => !document.querySelector('.jp-Dialog').innerText.includes('Validating')",
                           timeout=240_000)
    return dialog


def test_validate_reports_success_when_done_and_what_fails_when_not(lab, page, shots):
    open_notebook(page, lab, A02)
    dialog = validate(page)
    text = dialog.inner_text()
    shot(page, shots, "06-validate-filled.png")
    assert "Success" in text and "passes all the tests" in text, text
    dialog.locator("button", has_text="OK").first.click()

    open_notebook(page, lab, A01)
    dialog = validate(page)
    text = dialog.inner_text()
    shot(page, shots, "07-validate-blank.png")
    assert "Success" not in text, text
    assert "NotImplementedError" in text or "not implemented" in text, text


def test_run_all_on_an_untouched_notebook_stops_with_a_clear_message(lab, page, shots):
    open_notebook(page, lab, A01)
    menu(page, "Run", "Run All Cells")
    page.wait_for_selector('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]', timeout=120_000)
    wait_idle(page)
    found = errors(page)
    page.locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').first.scroll_into_view_if_needed()
    shot(page, shots, "08-blank-run-all.png")
    # Run All stops at the first failing cell, the first visible test, and says why.
    assert len(found) == 1 and "NotImplementedError" in found[0] and "accepted_pmf" in found[0], found


def test_scan_page_opens_rendered(lab, page, shots):
    """The course-wide scan list (course/scan_before_the_interview.md) opens as a rendered page."""
    name = "scan_before_the_interview.md"
    assert (lab["workspace"] / name).exists()
    page.goto(f"{lab['url']}/lab/workspaces/scan/tree/{name}?reset&token={TOKEN}")
    heading = page.locator(".jp-RenderedMarkdown h1", has_text="Scan before the interview")
    heading.wait_for()
    titles = page.locator(".jp-RenderedMarkdown h2").all_inner_texts()
    assert len(titles) == len([p for p in COURSE.iterdir() if p.is_dir()]), titles
    assert page.locator(".jp-RenderedMarkdown li").count() > 20
    shot(page, shots, "09-scan-page.png")


def tab(page, name):
    return page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=name)


@pytest.mark.parametrize("assignment", [A01, "03_rejection_sampling"])
def test_an_untouched_notebook_opens_and_closes_clean(lab, page, assignment):
    """Opening a released notebook and closing it without a change asks nothing and writes nothing: the
    kernel's language_info, which JupyterLab writes into the notebook when the kernel starts, is not a change."""
    path = lab["workspace"] / assignment / f"{assignment}.ipynb"
    before = path.read_bytes()
    open_notebook(page, lab, assignment)
    page.wait_for_timeout(1500)  # the kernel's info arrives after idle; give a dirty flag time to show
    name = f"{assignment}.ipynb"
    assert tab(page, name).count() == 1
    assert "jp-mod-dirty" not in (tab(page, name).get_attribute("class") or "")
    menu(page, "File", "Close Tab")
    tab(page, name).wait_for(state="detached", timeout=10_000)  # closed without a "Save your work" dialog
    assert page.locator(".jp-Dialog").count() == 0
    assert path.read_bytes() == before


def test_a_finished_exercise_says_so_and_drops_out_of_validate(lab, page, shots):
    """After the first exercise: its visible tests print one line naming it, and Validate lists only the cells
    of the exercises not done yet (nbgrader's Validate reports failures, never passes)."""
    nb = lab["workspace"] / A01 / f"{A01}.ipynb"
    with_reference_answers(COURSE / A01 / f"{A01}.ipynb", SOURCE / A01 / f"{A01}.ipynb", nb, only={"accepted_pmf"})
    open_notebook(page, lab, A01)
    dialog = validate(page)
    text = dialog.inner_text()
    shot(page, shots, "10-validate-one-done.png")
    assert "Success" not in text and "expected_tokens" in text, text
    assert "pmf = accepted_pmf(0.5, 2)" not in text, text  # accepted_pmf's visible test cell no longer fails
    dialog.locator("button", has_text="OK").first.click()

    menu(page, "Run", "Run All Cells")
    line = page.locator(".jp-OutputArea-output", has_text="\u2713 accepted_pmf: visible tests passed")
    line.wait_for(timeout=120_000)
    wait_idle(page)
    line.scroll_into_view_if_needed()
    line.wait_for(state="visible")
    page.wait_for_timeout(1000)  # the windowed notebook paints the cells around it after the scroll
    shot(page, shots, "11-pass-line.png")
    assert line.count() == 1


def test_the_server_log_has_no_websocket_warning(lab):
    """Every kernel the tests above opened connected a websocket; none wrote tornado's warning about
    the ping timeout into the log learners are told to read (coursekit.lab.command asks for one ping)."""
    text = lab["log"].read_text()
    assert "is running at" in text
    assert "websocket_ping_timeout" not in text, text[-3000:]


def test_a_failing_visible_test_message_wraps_inside_its_cell(lab, page, shots, request):
    """A wrong answer's visible test fails; its messages are longer than the cell is wide. Both the test
    cell's source (code cells wrap: coursekit/lab/overrides.json) and the traceback under it wrap inside
    the cell instead of running past its right edge, where a learner would not see the hint's end."""
    ws = lab["workspace"] / A01 / f"{A01}.ipynb"
    before = ws.read_bytes()  # put back at the end: the other tests want 01 untouched or as they wrote it
    request.addfinalizer(lambda: ws.write_bytes(before))
    nb = nbformat.read(ws, as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "accepted_pmf":
            cell.source = ("def accepted_pmf(alpha, K):\n"
                           "    return np.array([alpha ** n * (1 - alpha) for n in range(K + 1)])\n")
    nbformat.write(nb, ws)
    open_notebook(page, lab, A01)
    menu(page, "Run", "Run All Cells")
    selector = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
    page.wait_for_selector(selector, timeout=120_000)
    wait_idle(page)
    cell = page.locator(".jp-CodeCell", has=page.locator(selector)).first
    cell.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the windowed notebook paints the cells around it after the scroll
    shot(page, shots, "12-wrapped-message.png")
    hint = "the last entry is alpha**K, all K accepted"
    source, output = cell.locator(".cm-content"), cell.locator(selector)
    assert hint in source.text_content() and hint in output.text_content()
    # Wider than its box = cut off: the editor's scroller and the output's <pre> scroll nothing sideways.
    for box in (cell.locator(".cm-scroller"), output.locator("pre")):
        scroll, client = box.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert scroll <= client, (scroll, client)
    # A line of the source really wrapped: the hint's line is taller than one line of text.
    line = source.locator(".cm-line", has_text=hint)
    height, font = line.evaluate("e => [e.getBoundingClientRect().height, parseFloat(getComputedStyle(e).lineHeight)]")
    assert height > 1.5 * font, (height, font)

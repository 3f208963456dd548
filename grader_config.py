"""nbgrader configuration for the course (loaded by nbgrader_config.py).

Every value here is deliberate; the comments say why.
"""
c = get_config()  # noqa: F821

c.CourseDirectory.course_id = "speculative-decoding"
c.CourseDirectory.source_directory = "source"
# The student release is committed under course/ (tests regenerate it and compare).
c.CourseDirectory.release_directory = "course"

# Learners' stubs.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# A cell's time limit judges the learner's code, not the machine's load (issue 18). A cell whose
# kernel uses more than 60 s of CPU time (the kernel's processes, all their threads: coursekit.judge's
# CpuWatch) is interrupted and scored 0 with a hint that says so, and grading goes on. CPU time
# hardly grows when other programs share the machine, while wall-clock time does: on the 2-core course
# machine with one core kept busy, small calls of the shipped target with torch's default threads
# took 3.5 times as long by the clock (docs/benchmarks.md, "Threads on a busy machine", 2026-12-04), so a wall-clock limit would cut off a correct answer on a busy grading server
# that passes on a quiet one. The slowest hidden test, 03's speculative_sample (36,600 seeded
# calls), took 11 s for the reference on the 2-core course machine (2026-12-02); a minute leaves
# room for slow but correct answers without letting an endless loop stall a cohort.
c.JudgedExecute.cpu_timeout = 60
# nbclient's wall-clock limit stays as a backstop while grading, for a cell that waits without
# computing (a sleep, a lock) and which the CPU limit never sees: five times the CPU limit, so a
# correct cell would need a machine that gives its kernel less than a fifth of a core to reach it.
c.JudgedExecute.timeout = 300
# The Validate button (nbgrader validate: plain Execute, no CPU watch) keeps a 60 s wall-clock
# limit per cell: it grades nothing, and a learner waits for it. It also bounds a known stall:
# under load, after 02's explorer cell (widgets), the kernel sometimes goes idle without its reply
# reaching nbclient until the limit interrupts it (akin to nbclient issue 312; on the 2-core course
# machine with a core busy, 2026-12-04: 5 of 11 validations, and 1 of 8 with the code before that
# day), so a longer limit would make such a Validate wait that long.
c.Execute.timeout = 60
# Starting a grading kernel (Python, numpy, matplotlib, the sandbox's rules) runs none of the
# learner's code, so its limit only has to catch a kernel that never comes up: generous, because
# a start slows down with the machine's load and a start that runs out fails the whole submission
# with no hint at all (what CI at b14b880 showed for one learner while two cohorts were graded
# side by side on 2 cores; the cause was not reproduced here, so this is a precaution).
c.Execute.startup_timeout = 300
c.Execute.interrupt_on_timeout = True

# Keep autograded notebooks and feedback readable when a submission prints megabytes.
c.LimitOutput.max_lines = 200
c.LimitOutput.max_traceback = 30

# nbgrader scores a test cell 0 if it wrote anything to stderr, even when it passed. Warnings
# (a RuntimeWarning from 0/0 that the learner's code handles, a DeprecationWarning from a
# library) are not failures, so they are dropped before scoring. Errors are unaffected: they
# arrive as error outputs, not as stderr text.
c.IgnorePattern.pattern = r"(?i)warning"
c.IgnorePattern.enabled = True

# The Validate button (and `nbgrader validate`) checks every code cell, not only graded ones: the
# visible tests are read-only cells worth no points (their exercise's points sit on the hidden
# tests, judged outside the kernel), so without this a blank notebook validated as "Success".
c.Validator.validate_all = True

# A learner who deletes a graded cell gets it back (scored normally) instead of a None score.
c.OverwriteCells.add_missing_cells = True

# Learners' code runs in a sandbox while it is graded: resource limits, and an audit hook that
# refuses network access, new processes, writes outside the learner's folder and reads of the
# grading data. What it does and does not guarantee: coursekit/judge/sandbox.py.
c.Execute.kernel_manager_class = "coursekit.judge.sandbox.SandboxKernelManager"
# The sandbox's layer and a grading kernel's limits (coursekit/judge/limits.py). The kernel's
# launcher gets them through its environment, so each has a variable (docs/instructors.md,
# "Settings": COURSE_SANDBOX, COURSE_SANDBOX_MEMORY, _CPU, _FILE, _PROCESSES); a variable set
# where grading runs wins over the value here (how a test or a CI job picks a layer).
# auto: the strongest layer this machine has (bubblewrap, else Landlock, else the audit hook alone).
c.SandboxKernelManager.layer = "auto"
# The kernel's CPU time over the whole notebook: far above what the notebook's cells may spend
# (cpu_timeout a cell), so it only stops a kernel that escapes the per-cell watch.
c.SandboxKernelManager.cpu_limit = 900
c.SandboxKernelManager.memory_limit = 8 * 1024 ** 3  # address space, bytes: the shipped models and torch fit
c.SandboxKernelManager.file_limit = 64 * 1024 ** 2  # the largest file a kernel may write, bytes
c.SandboxKernelManager.process_limit = 64  # processes of a non-root grader's kernel

# A submission's wall-clock limit (coursekit.batch.SubmissionRunner, which runs each learner's
# submissions and kills one that overruns): it costs only that submission, and grading goes on.
# Every cell has its own limits above; this catches a kernel that never starts or a driver that hangs.
c.SubmissionRunner.timeout = 900
# Each learner's driver is forked from a warm server that has imported nbgrader and the checkers'
# libraries (coursekit.grading.forkserver; Linux only, elsewhere every driver starts cold): about 2 s
# less per learner on the 2-core course machine. False starts every driver as its own process.
c.SubmissionRunner.fork = True

# Hidden tests are judged in the grader's process, not in the learner's kernel: coursekit.judge
# runs nbgrader's Execute for every cell, except that a graded cell calling
# verdict("aNN.check_x", fn) runs the checker here and only the calls of the learner's fn in the
# kernel. The rest of nbgrader's autograde pipeline is unchanged.
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput, SaveAutoGrades,
)

from coursekit.judge.execute import JudgedExecute  # noqa: E402

# nbgrader 0.9.6's own list, with JudgedExecute in the place of Execute (tests/test_judge.py checks it)
c.Autograde.autograde_preprocessors = [JudgedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]

# Measurement cells (tagged `measurement` in source/: timings, fitted curves and comparisons on
# the shipped models, and the cells that read their results), the cells that only show the
# learner's results (tagged `demo`: plots and tables drawn from their functions) and 02's slider
# explorer (tagged `explorer`: nobody moves its sliders in a graded run) are not run while
# grading: no grade depends on them, and the measurements were most of a submission's grading
# time (05's took 23-85 s a submission on the 2-core course machine, depending on its load).
# Their output in the autograded notebook and the feedback is a one-line note.
# Graded and solution cells always run, whatever their tags, and so does a tagged cell that a
# later cell which runs may read a variable of (coursekit.judge.cells.skipped_cells: a learner whose
# own cell uses a plot's variable keeps that plot). To run them all (the learner's figures in
# the feedback): `make grade ARGS=--run-measurements`, or set run_measurements to True here.
c.JudgedExecute.skip_tags = ["measurement", "demo", "explorer"]
c.JudgedExecute.run_measurements = False

"""The round trip of a hidden test, in one package: a learner's function judged by a checker that
the learner's code cannot reach.

    grader's process                                      learner's kernel (sandbox.py)
    execute.JudgedExecute  (nbgrader's Execute)
      a graded cell calling verdict("aNN.check_x", fn):
      verdict.verdict -> the checker, with              wire.serve(fn, requests, replies)
      channel.RemoteFunction in the place of fn  <-->     answers each call of fn
      (channel.Channel: two named pipes)                  (wire: codec, frames, the loop)

- execute.py: the preprocessor (in Autograde's list, grader_config.py); cells.py: which tagged
  cells grading may leave out; cpuwatch.py: a cell's CPU-time limit; the profile of each
  notebook's time (settings.GRADING_PROFILE).
- verdict.py: the checker found by its name, and the one catch-all that turns whatever stops a
  check into a sentence; messages.py: every sentence grading itself says to the learner.
- channel.py (grader's end) and wire.py (the format and the kernel's end). wire.py is the only
  module of this package the kernel imports; it imports nothing of `solutions`, and this file
  imports nothing, so `import coursekit.judge.wire` in the kernel loads no checker.
- sandbox.py: the kernel's launcher and manager (resource limits, the audit hook, bubblewrap).
"""

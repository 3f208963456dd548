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
- channel.py (grader's end) and wire.py (the kernel's end: the loop that answers calls; the values
  in codec.py, the frames in frames.py). wire.py, with those two, is all of this package the
  kernel imports; none imports anything of `solutions`, and this file imports nothing, so
  `import coursekit.judge.wire` in the kernel loads no checker.
- sandbox.py: the kernel's manager and launcher; limits.py: its layer and resource limits as
  traits (grader_config.py); layers.py: which layers this machine has; rules.py: the audit hook;
  reaper.py: no process outlives grading; landlock.py: the Landlock layer's system calls.
"""

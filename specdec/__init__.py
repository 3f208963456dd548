"""Helper code the course notebooks import but learners do not write (plots, later models and widgets).

Deliberately small: every formula a learner implements lives in the learner's notebook, and
these helpers only take the learner's functions as arguments.
"""

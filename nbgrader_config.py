# nbgrader reads nbgrader_config.py from the working directory; the course's settings live in
# grader_config.py (nbgrader 0.9.6 silently ignores --config=..., so this file is the hook).
c = get_config()  # noqa: F821
load_subconfig("grader_config.py")  # noqa: F821

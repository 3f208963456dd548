"""A course server on one machine: JupyterHub, nbgrader's exchange, and each learner's server running
in learner-env/, the environment without the answers. `make hub` starts it (docs/instructors.md, "A course server:
JupyterHub"); tests/test_hub.py runs a cohort through it.

What it is for: trying the cohort workflow, a workshop, a class that trusts itself. Everything runs as
the unix user who starts the hub, and the learners share one password, so nobody is protected from
anybody: JupyterHub's SharedPasswordAuthenticator (its dummy authenticator for short deployments)
and SimpleLocalProcessSpawner (a home folder per learner, nothing more), as JupyterHub documents
both. For a class that needs isolation, give each learner a unix account, log in with PAM or OAuth
and spawn each server as its learner (LocalProcessSpawner, SystemdSpawner, KubeSpawner); nbgrader
then takes a learner's name from their account, and the exchange's permissions keep learners apart.

Since all servers run as one account, nbgrader would file every submission under that account's
name; the shared nbgrader configuration written below takes the name from JUPYTERHUB_USER, which the
hub sets for each learner's server.

Settings, from the environment:
  COURSE_HUB_PASSWORD  the learners' shared password, 8 characters or more (required)
  COURSE_HUB_USERS     the learners' names, comma-separated (default ada,bo,cy)
  COURSE_HUB_STATE     the hub's folder: its database and cookie secret, etc/ (the learners' shared
                       Jupyter configuration), home/<learner>/ (default build/hub)
  COURSE_HUB_EXCHANGE  nbgrader's exchange (default <state>/exchange); the instructor's
                       nbgrader_config.py sets the same c.Exchange.root
  COURSE_HUB_PORT      the proxy's port on 127.0.0.1, where learners connect (default 8000); the hub
                       itself listens on the next port and the proxy's API on the one after
  COURSE_HUB_PYTHON    the interpreter of the learners' servers (default learner-env/bin/python)
  COURSE_HUB_PROXY     configurable-http-proxy (default hub/node_modules/.bin/, what `make hub` installs)
"""
import json
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # coursekit.settings, where every COURSE_ variable is declared
from coursekit import settings  # noqa: E402

STATE = Path(settings.HUB_STATE.get() or REPO / "build" / "hub").resolve()
EXCHANGE = Path(settings.HUB_EXCHANGE.get() or STATE / "exchange").resolve()
PORT = settings.HUB_PORT.get()
USERS = settings.HUB_USERS.get()
PYTHON = settings.HUB_PYTHON.get() or str(REPO / "learner-env" / "bin" / "python")
PROXY = settings.HUB_PROXY.get() or str(REPO / "hub" / "node_modules" / ".bin" / "configurable-http-proxy")

# the hub: its state under STATE, everything on the loopback interface
STATE.mkdir(parents=True, exist_ok=True)
c.JupyterHub.bind_url = f"http://127.0.0.1:{PORT}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{PORT + 1}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
c.ConfigurableHTTPProxy.command = [PROXY]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")

# who may log in: the named learners, with the shared password
c.JupyterHub.authenticator_class = "shared-password"
c.SharedPasswordAuthenticator.user_password = os.environ[settings.HUB_PASSWORD.name]  # required: a KeyError without it
c.Authenticator.allowed_users = USERS

# each learner's server: JupyterLab from learner-env/, started in home/<learner>/
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = str(STATE / "home" / "{username}")
c.Spawner.cmd = [PYTHON, "-m", "jupyterhub.singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.args = ["--ServerApp.allow_root=True"] if os.geteuid() == 0 else []
c.Spawner.start_timeout = 120  # a busy 2-core machine can take a while to start JupyterLab
c.Spawner.http_timeout = 120

# the learners' shared Jupyter configuration (on a multi-account server: /etc/jupyter/): nbgrader's
# exchange, the learner's name, and no formgrader (the instructor's tool) in the learners' servers
ETC = STATE / "etc"
ETC.mkdir(exist_ok=True)
(ETC / "nbgrader_config.py").write_text(
    "import os\n"
    "c = get_config()  # noqa: F821\n"
    f"c.Exchange.root = {str(EXCHANGE)!r}\n"
    "c.CourseDirectory.student_id = os.environ['JUPYTERHUB_USER']  # all servers run as one account\n")
(ETC / "jupyter_server_config.json").write_text(json.dumps(
    {"ServerApp": {"jpserver_extensions": {"nbgrader.server_extensions.formgrader": False}}}, indent=1))
# learner-env/bin first on the learners' PATH: a terminal's or a notebook's `python` and `pip` are
# the learner environment's, not the grader's that started the hub
# and idle OpenMP threads in their kernels sleep instead of spinning (coursekit.threads: several
# learners' kernels share the machine's cores)
c.Spawner.environment = {"JUPYTER_CONFIG_PATH": str(ETC), "OMP_WAIT_POLICY": "PASSIVE",
                         "PATH": os.pathsep.join([str(Path(PYTHON).parent), "/usr/local/bin", "/usr/bin", "/bin"])}

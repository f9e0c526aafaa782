"""gunicorn's settings in Podium's image (/opt/podium/gunicorn.conf.py, read from the working
directory): ``gunicorn podium.wsgi:application`` serves the web. Command-line flags win."""

import os

bind = os.environ.get("PODIUM_WEB_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("PODIUM_WEB_WORKERS", "4"))
# Uploads of image archives (several GB) take minutes on one request.
timeout = int(os.environ.get("PODIUM_WEB_TIMEOUT_S", "900"))
accesslog = "-"
# No control socket: the web runs as nobody, whose home does not exist, and nothing uses it.
control_socket_disable = True

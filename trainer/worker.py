"""Entry module for ``celery -A trainer.worker worker``: the one place the app is built at import.

``hcp trainer`` is the usual way to start a worker (it builds the app from settings and
its own options); this module is for running Celery's own command line directly.
"""

from hcp.settings import get_settings
from trainer.celery_app import make_celery

app = make_celery(get_settings())

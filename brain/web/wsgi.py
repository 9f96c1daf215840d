"""WSGI entry point for gunicorn: `brain.web.wsgi:application` (built in each worker)."""

from brain.data_dir import keep_files_private
from brain.web.app import create_app_from_env

keep_files_private()  # also under a gunicorn started by hand: every file 0600, docs/operations.md
application = create_app_from_env()

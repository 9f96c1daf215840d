"""WSGI entry point for gunicorn: `brain.web.wsgi:application` (built in each worker)."""

from brain.web.app import create_app_from_env

application = create_app_from_env()

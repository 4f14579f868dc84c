"""Django settings for the jobtable backend's tests, and for the worker processes they start.

The store of the "default" backend comes from JOBTABLE_DJANGO_STORE (tests
override TASKS with the store of each test). "pg" is the PostgreSQL test
database, whose transactions the PostgreSQL tests enqueue in; "other" a
database whose transactions no backend follows.
"""

import os

SECRET_KEY = "jobtable-tests"
USE_TZ = True
INSTALLED_APPS = ["jobtable.contrib.django"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("JOBTABLE_DJANGO_DB", ":memory:"),
    },
    "other": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
    "pg": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": "127.0.0.1",
        "PORT": "5432",
        "NAME": "test",
        "USER": "postgres",
    },
}
TASKS = {
    "default": {
        "BACKEND": "jobtable.contrib.django.JobtableBackend",
        "QUEUES": ["default", "queue_1"],
        "OPTIONS": {
            "STORE": os.environ.get("JOBTABLE_DJANGO_STORE", "unused.db"),
            "DATABASE": os.environ.get("JOBTABLE_DJANGO_DATABASE", "default"),
        },
    }
}

"""The Django app that brings the ``jobtable_worker`` management command."""

from django.apps import AppConfig


class JobtableConfig(AppConfig):
    """``"jobtable.contrib.django"`` in INSTALLED_APPS: adds ``manage.py jobtable_worker``.

    It has no models: jobs live in the jobtable store, not in Django's
    database.
    """

    name = "jobtable.contrib.django"
    label = "jobtable"
    verbose_name = "jobtable"

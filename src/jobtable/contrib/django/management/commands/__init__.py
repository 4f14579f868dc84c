"""``jobtable_worker``: runs the tasks of a JobtableBackend."""

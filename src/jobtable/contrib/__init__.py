"""Integrations of jobtable with frameworks, each an optional extra (``jobtable[django]``)."""

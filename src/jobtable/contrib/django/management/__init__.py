"""The management commands of jobtable's Django app."""

"""The database engines: the seam every engine fills, and one package per engine.

``base`` is the seam: the ``Engine`` and ``Queries`` protocols and the rows they
return. ``target`` turns what ``Store.open`` was given into an engine.
``sqlite`` (one file, one writer) and ``postgres`` (many processes on many
machines) implement the seam over the generated ``jobtable.db`` module, which
nothing outside them imports.
"""

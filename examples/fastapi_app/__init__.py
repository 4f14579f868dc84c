"""An example FastAPI app that signs users up and welcomes each one from a background job.

- ``tasks.py`` declares the job kind, with no handler code: the web process
  imports it to enqueue.
- ``app.py`` is the web app: ``POST /users`` inserts the user through a
  SQLAlchemy session and enqueues its welcome job in the same transaction,
  so there is a job exactly when there is a user (an email already taken
  rolls both back). ``GET /jobs/{id}`` shows the job. The lifespan opens the
  store and, unless ``EXAMPLE_WORKERS=0``, runs a runner in the web process.
- ``worker.py`` attaches the handler; ``python -m fastapi_app.worker`` is the
  separate worker process.

Run from ``examples/`` (both processes share ``EXAMPLE_DATABASE``, a SQLite
file, ``app.db`` by default, or a ``postgresql://`` URL)::

    EXAMPLE_WORKERS=0 uvicorn fastapi_app.app:app --port 8000 &
    python -m fastapi_app.worker &
    curl -X POST localhost:8000/users -H 'content-type: application/json' \\
        -d '{"email": "ada@example.com", "name": "Ada"}'
"""

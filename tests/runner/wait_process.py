"""A process that waits for one job's result, for test_wait.py: argv is store, job id.

It prints "ready" once its wait is registered and its listener listens,
then the job's result as JSON (or the error's type and message) when the
wait returns. Its fallback poll is an hour long, so only a notification of
the job's end (or the file watch) can wake it in the test's time.
"""

import sys
import threading
import time

from pydantic import BaseModel

import jobtable
from jobtable._wait.waiters import waiters_of


class Size(BaseModel):
    width: int


resize = jobtable.Kind("resize", Size, Size)


def main(target: str, job_id: str) -> None:
    with jobtable.Store.open(target) as store:
        waiters = waiters_of(store, store.engine)
        waiters.poll = 3600.0
        outcome: list[str] = []

        def wait() -> None:
            try:
                outcome.append(resize.wait(store, job_id, timeout=60).model_dump_json())
            except jobtable.JobtableError as err:
                outcome.append(f"{type(err).__name__}: {err}")

        thread = threading.Thread(target=wait)
        thread.start()
        deadline = time.monotonic() + 60
        while not (len(waiters) == 1 and waiters.listening):
            if time.monotonic() > deadline:
                sys.exit("the wait never registered and listened")
            time.sleep(0.01)
        print("ready", flush=True)
        thread.join()
        print(outcome[0], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

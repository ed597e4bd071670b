"""Running a test's worker in several threads at once."""
import threading


def run_in_threads(work, n=4):
    """Run ``work(k)`` for k in range(n), each in its own thread, all at once; raise the first
    exception a worker raised (after every thread ended)."""
    errors = []

    def guarded(k):
        try:
            work(k)
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]

"""Hostile: exhausts what its container gives it (file descriptors, scratch space, shared
memory) and leaves zombie children behind; reports how far it got, as JSON."""

import json
import os


def _fill(directory):
    written = 0
    try:
        with open(os.path.join(directory, "fill"), "wb") as out:
            block = b"\0" * (1 << 20)
            while written < (1 << 34):
                out.write(block)
                out.flush()
                written += len(block)
    except OSError as exc:
        return written, exc.strerror
    return written, "none"


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        handles, error = [], "none"
        while len(handles) < 1_000_000:
            try:
                handles.append(os.open("/dev/null", os.O_RDONLY))
            except OSError as exc:
                error = exc.strerror
                break
        fds = len(handles)
        for fd in handles:
            os.close(fd)
        for _ in range(20):  # children that exit and are never waited for
            if os.fork() == 0:
                os._exit(0)
        scratch, scratch_error = _fill("/tmp")
        os.remove("/tmp/fill")
        shm, shm_error = _fill("/dev/shm")
        os.remove("/dev/shm/fill")
        report = {
            "fds": fds,
            "fd_error": error,
            "scratch": scratch,
            "scratch_error": scratch_error,
            "shm": shm,
            "shm_error": shm_error,
        }
        return [json.dumps(report) for _ in queries]

"""Loads a model by its hub id the way huggingface_hub does offline (HF_HOME/hub/models--org--
name/refs/main names the snapshot), and reports what the container shows of the model cache."""

import json
import os


class HubModelAgent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        home = os.environ["HF_HOME"]
        folder = os.path.join(home, "hub", "models--" + queries[0].replace("/", "--"))
        with open(os.path.join(folder, "refs", "main")) as ref:
            snapshot = os.path.join(folder, "snapshots", ref.read().strip())
        with open(os.path.join(snapshot, "config.json")) as config:
            hidden = json.load(config)["hidden_size"]
        with open("/proc/self/mounts") as mounts:
            options = [line.split()[3] for line in mounts if line.split()[1] == folder]
        try:
            open(os.path.join(home, "lock"), "w").close()
            lock = "written"
        except OSError as exc:
            lock = f"failed: {exc.strerror}"
        seen = {
            "hidden_size": hidden,
            "hub": sorted(os.listdir(os.path.join(home, "hub"))),
            "model_mount": options,
            "write_cache": lock,
            "env": {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")},
        }
        return [json.dumps(seen)]

"""Challenges as code: a bundle (``challenge.yaml`` and the files it names, a directory or a
zip) checked, imported as a new version, diffed and exported (``docs/challenge-bundle.md``).

``admission`` decides who may before anything is unpacked, ``source`` opens a bundle safely,
``yaml_doc`` reads ``challenge.yaml`` with lines, ``schema`` is its JSON Schema, ``loader``
checks it, ``state`` compares it with the live challenge, ``importer`` applies it (``assets``:
the logo and the starter kit's files; ``baselines``: the organisers' agents, submitted),
``exporter`` writes one.
"""

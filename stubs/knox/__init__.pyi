# django-rest-knox ships no type information; these stubs declare what Podium uses of it
# (pyproject.toml [tool.mypy] mypy_path), as knox 5.1's source defines it.

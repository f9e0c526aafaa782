"""Server-rendered pages: ``boards`` (public results) and ``runs`` (a team's own work)."""

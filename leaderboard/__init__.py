"""The Django app of Podium: data model, admin, pages, REST API, management commands."""

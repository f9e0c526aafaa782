"""The demo challenge (``manage.py demo``): CRAG-MM sample data, teams, example agents."""

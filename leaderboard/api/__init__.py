"""The REST API (Django REST framework): read endpoints and submitting."""

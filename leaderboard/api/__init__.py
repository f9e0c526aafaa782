"""The REST API (Django REST framework): read endpoints now, submission create next."""

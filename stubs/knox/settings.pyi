import datetime as dt

from rest_framework.settings import APISettings

class KnoxSettings(APISettings):
    TOKEN_LIMIT_PER_USER: int | None
    TOKEN_TTL: dt.timedelta | None
    TOKEN_PREFIX: str
    AUTH_HEADER_PREFIX: str
    TOKEN_MODEL: str

knox_settings: KnoxSettings

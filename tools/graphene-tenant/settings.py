"""
A GraphQL tenant as a Graphene-Django user would make one, with the framework's defaults: graphene-django's
DjangoFilterConnectionField over django-filter (its lookups become `updatedAt_Gt`-style arguments), an OrderingFilter
(`orderBy: "-updated_at"`), Relay global ids and the default 100-record cap on `first`. SQLite in a folder the test
gives (GRAPHENE_TENANT_DB). Loopback only; the Node proxy in front checks the bearer token (test/helpers/graphene.ts).
"""
import os

SECRET_KEY = "test-only-graphene-tenant"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_filters",
    "graphene_django",
    "inspections",
]
MIDDLEWARE = []
ROOT_URLCONF = "urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("GRAPHENE_TENANT_DB", "tenant.sqlite3"),
    }
}
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
GRAPHENE = {"SCHEMA": "inspections.schema.schema"}
LOGGING = {"version": 1, "disable_existing_loggers": True}

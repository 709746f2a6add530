"""Changes the inspections whose ids are given, as a bulk edit would (a queryset update): `python change.py 1 2 3`."""
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
django.setup()

from django.utils import timezone  # noqa: E402

from inspections.models import Inspection  # noqa: E402

ids = [int(x) for x in sys.argv[1:]]
print(Inspection.objects.filter(id__in=ids).update(status="failed", updated_at=timezone.now()))
